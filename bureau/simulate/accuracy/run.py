"""The accuracy sweep (issue 23): plans for every seed, coverage and mix (honest callers
only, and with the attacks), played on one bureau and one seal, then measured under
every known policy, with the anchors and the ceiling; printed as one table per mix.

``bench/accuracy_bench.py`` and ``bureau simulate --accuracy`` both run :func:`main`.
``--save`` keeps the played ledgers' evidence (a pickle) so that policies can be
measured again (``--load``) without driving the bureau.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bureau.scoring import Policy
from bureau.scoring.policy import (
    DEFAULT_POLICY_NAME,
    KNOWN_POLICIES,
    policy_hash,
)
from bureau.simulate.accuracy.measure import (
    Figures,
    ceiling,
    mean_figures,
    plain_mean,
    price_ceiling,
    truth_mean,
    under_policy,
)
from bureau.simulate.accuracy.play import Played, play
from bureau.simulate.accuracy.population import Options, Plan, plan

COVERAGES = (0.0, 0.02, 0.05, 0.20, 0.60)
MIXES = {"honest": False, "attacks": True}


@dataclass(frozen=True)
class Sweep:
    seeds: tuple[int, ...] = (1, 2, 3)
    coverages: tuple[float, ...] = COVERAGES
    mixes: tuple[str, ...] = ("attacks", "honest")
    base: Options = field(default_factory=Options)
    #: the share of each coverage that is covert probes (the rest deliverable checks);
    #: the base options' probe share is a floor under it
    probe_part: float = 0.0


def plan_at(sweep: Sweep, mix: str, coverage: float, seed: int) -> Plan:
    probes = max(sweep.base.probes, coverage * sweep.probe_part)
    return plan(replace(sweep.base, coverage=coverage * (1 - sweep.probe_part),
                        probes=probes, seed=seed, attacks=MIXES[mix]))


def plans(sweep: Sweep) -> list[tuple[str, float, int, Plan]]:
    return [(mix, c, seed, plan_at(sweep, mix, c, seed))
            for mix in sweep.mixes for c in sweep.coverages for seed in sweep.seeds]


async def play_sweep(sweep: Sweep, policy: str = DEFAULT_POLICY_NAME,
                     epoch_seconds: int = 10) -> list[tuple[str, float, int, Played]]:
    """Every plan of the sweep on one in-process bureau scoring with ``policy``. The
    epochs are long enough that the settler does not seal (and build every report)
    over and over while the plans are staged; one seal at the end is what is read."""
    from bureau.simulate.local import local_bureau

    todo = plans(sweep)
    async with local_bureau(epoch_seconds, policy) as target:
        played = await play(target, [p for _, _, _, p in todo])
    return [(mix, c, seed, p) for (mix, c, seed, _), p in zip(todo, played, strict=True)]


Measured = dict[str, dict[float, dict[str, Figures]]]  # mix -> coverage -> row -> figures


#: mix -> coverage -> (the sampling ceiling, the price ceiling): means over the seeds
Ceilings = dict[str, dict[float, tuple[float, float]]]


def measure(played: Sequence[tuple[str, float, int, Played]],
            policies: Mapping[str, tuple[Policy, str]]) -> tuple[Measured, Ceilings]:
    """Figures per mix, coverage and row (each policy, the anchors), averaged over the
    seeds; and the sampling and price ceilings per mix and coverage."""
    runs: dict[tuple[str, float, str], list[Figures]] = {}
    ceil: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for mix, c, _, p in played:
        for name, (pol, digest) in policies.items():
            runs.setdefault((mix, c, name), []).append(under_policy(p, pol, digest))
        runs.setdefault((mix, c, "plain mean"), []).append(plain_mean(p))
        runs.setdefault((mix, c, "truth only"), []).append(truth_mean(p))
        ceil.setdefault((mix, c), []).append((ceiling(p.plan), price_ceiling(p.plan)))
    out: Measured = {}
    for (mix, c, row), figs in runs.items():
        out.setdefault(mix, {}).setdefault(c, {})[row] = mean_figures(figs)
    ceilings: Ceilings = {}
    for (mix, c), taus in ceil.items():
        ceilings.setdefault(mix, {})[c] = (sum(t for t, _ in taus) / len(taus),
                                           sum(t for _, t in taus) / len(taus))
    return out, ceilings


def render(measured: Measured, ceilings: Ceilings, sweep: Sweep) -> str:
    o = sweep.base
    lines = [f"accuracy: {o.agents} agents (q 0.05-0.95; bluffers, admitters, decliners), "
             f"{o.calls} honest calls each by {o.honest_callers} callers "
             f"({o.harsh} harsh, {o.generous} generous, noise {o.noise:.0%}), "
             f"coverage: {1 - sweep.probe_part:.0%} of it deliverable checks (the caller "
             f"sees them), {sweep.probe_part:.0%} covert probes after the verdicts (blind), "
             f"probes on at least {o.probes:.0%} of calls; seeds {list(sweep.seeds)} (means)"]
    head = (f"{'coverage':>8}  {'row':<12} {'tau':>6} {'MAE':>6} {'in 95%':>7} "
            f"{'width':>6} {'null':>4} {'honest w':>8} {'gap':>7}  bureau")
    for mix, by_c in measured.items():
        lines += ["", f"mix: {mix}" + (" (the attack catalogue's adversaries mixed in)"
                                      if MIXES[mix] else " (honest callers only)"), head]
        for c in sorted(by_c):
            rows = by_c[c]
            for name, f in rows.items():
                share = "" if f.honest_share is None else f"{f.honest_share:.1%}"
                check = {None: "", True: "= published",
                         False: "differs from published"}[f.matches_bureau]
                lines.append(f"{c:>8.0%}  {name:<12} {f.tau:>6.3f} {f.mae:>6.3f} "
                             f"{f.covered:>7.1%} {f.width:>6.3f} {f.null:>4} {share:>8} "
                             f"{f.gap:>+7.3f}  {check}")
            sampling, price = ceilings[mix][c]
            lines.append(f"{c:>8.0%}  {'ceiling':<12} {sampling:>6.3f}")
            lines.append(f"{c:>8.0%}  {'price ceil.':<12} {price:>6.3f}")
    return "\n".join(lines)


def known_policies(extra: Sequence[Path] = ()) -> dict[str, tuple[Policy, str]]:
    """Every policy the bureau knows, and policy documents from files (measured, not
    installed), as name -> (policy, hash)."""
    out = {name: (Policy.from_document(doc), policy_hash(doc))
           for name, doc in sorted(KNOWN_POLICIES.items())}
    for path in extra:
        doc = json.loads(path.read_text("utf-8"))
        out[f"{doc['version']}*"] = (Policy.from_document(doc), policy_hash(doc))
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    p.add_argument("--agents", type=int, default=24)
    p.add_argument("--calls", type=int, default=40, help="honest calls per agent")
    p.add_argument("--coverages", default=",".join(f"{c:g}" for c in COVERAGES),
                   help="shares of calls with a deliverable check, comma-separated")
    p.add_argument("--probe-share", type=float, default=0.01,
                   help="share of calls covertly probed after the verdicts, at least")
    p.add_argument("--probe-part", type=float, default=0.0,
                   help="share of each coverage that is covert probes rather than "
                   "checks (default 0: checks, and the probe share on top)")
    p.add_argument("--mix", choices=["both", *MIXES], default="both")
    p.add_argument("--bureau-policy", choices=sorted(KNOWN_POLICIES),
                   default=DEFAULT_POLICY_NAME, help="the policy the bureau itself scores "
                   "with (its reports are checked against the computation)")
    p.add_argument("--policy-file", type=Path, action="append", default=[],
                   help="also measure this policy document (repeatable)")
    p.add_argument("--save", type=Path, help="keep the played evidence in this file")
    p.add_argument("--load", type=Path, help="measure evidence saved by --save instead "
                   "of driving a bureau")


def sweep_of(args: argparse.Namespace) -> Sweep:
    if args.agents < 8:
        raise ValueError("--agents must be at least 8")
    return Sweep(seeds=tuple(range(1, args.seeds + 1)),
                 coverages=tuple(float(c) for c in args.coverages.split(",")),
                 mixes=("attacks", "honest") if args.mix == "both" else (args.mix,),
                 base=Options(agents=args.agents, calls=args.calls,
                              probes=args.probe_share),
                 probe_part=args.probe_part)


def main(args: argparse.Namespace) -> int:
    sweep = sweep_of(args)
    if args.load:
        sweep, played = pickle.loads(args.load.read_bytes())
        if not isinstance(sweep, Sweep):
            raise ValueError(f"{args.load} holds no saved sweep")
    else:
        played = asyncio.run(play_sweep(sweep, args.bureau_policy))
        if args.save:
            args.save.write_bytes(pickle.dumps((sweep, played)))
    measured, ceilings = measure(played, known_policies(args.policy_file))
    print(render(measured, ceilings, sweep))
    published = [f.matches_bureau for by_c in measured.values() for rows in by_c.values()
                 for f in rows.values() if f.matches_bureau is not None]
    return 0 if all(published) else 1
