"""The simulation's result as text: the agents' reports, the evaluators' records, and
the findings the simulation exists to show."""

from __future__ import annotations

import dataclasses
from typing import Any

from bureau.scoring.evaluators import EvaluatorStats
from bureau.scoring.policy import policy_named
from bureau.simulate.driver import AgentRow, Result
from bureau.simulate.world import HONEST_EVALUATORS
from reporters._internal.wording import count


def _num(x: float | None, width: int = 6) -> str:
    return f"{x:.3f}".rjust(width) if x is not None else "-".rjust(width)


def _constant_rater(result: Result) -> tuple[str, bool]:
    """Under v1 the constant-rater rule zeroes any evaluator that always says the same
    thing. Under a policy with calibrated evaluators (v2, SPEC §7.1.4) the rule is for
    provisional ones: a calibrated evaluator is weighed by its informedness J against
    blind probes, which for a constant rater is near 0 — so it must weigh less than
    every honest evaluator (its exact weight is printed in the table). Under v4 a
    calibrated verdict is weighed by its evaluator's rates: a constant rater's positive
    verdicts come as often on wrong calls as on right ones, so its ``rate+ − rate−``
    (how far one of its verdicts can move a score) must be below every honest one's."""
    constant = result.evaluator("constant").stats
    if constant is None:
        return "constant rater weighs 0", False
    policy = policy_named(result.policy)
    calibrated = policy.evaluators.calibration_samples > 0 and not constant.provisional
    if not calibrated:
        return "constant rater weighs 0", constant.weight == 0
    honest = [result.evaluator(k).stats for k in HONEST_EVALUATORS]
    if policy.evaluators.rates is not None:
        def tells(st: EvaluatorStats) -> float:
            return 0.0 if st.weight == 0 else st.rate_positive - st.rate_negative
        return ("constant rater, calibrated, tells less than every honest evaluator "
                "(rate+ - rate-)",
                all(h is not None and tells(constant) < tells(h) for h in honest))
    return ("constant rater, calibrated, weighs less than every honest evaluator",
            all(h is not None and constant.weight < h.weight for h in honest))


def _bias(result: Result) -> dict[str, bool]:
    """The harsh and generous evaluators' verdicts read right. Up to v3 by recentring:
    the harsh one's good verdicts lifted, the generous one's bad ones lowered. v4
    recentres nothing (docs/scoring.md "Policy v4"): a verdict is read by its polarity
    through its evaluator's measured rates, so the harsh one's "accepted after
    corrections" must read as a good call (its rate of positive verdicts on right calls
    well above its rate on wrong ones) and the generous one's low marks as bad calls."""
    harsh, generous = result.evaluator("harsh").stats, result.evaluator("generous").stats
    if policy_named(result.policy).evaluators.rates is None:
        return {
            "harsh evaluator's good verdicts recentred upwards (offset < 0)":
            harsh is not None and harsh.offset_positive < 0,
            "generous evaluator's bad verdicts recentred downwards (offset > 0)":
            generous is not None and generous.offset_negative > 0,
        }
    return {
        f"{name} evaluator's verdicts read by their polarity: positive on right calls "
        "at least 0.5 more often than on wrong ones":
        st is not None and not st.provisional and st.rate_positive - st.rate_negative >= 0.5
        for name, st in (("harsh", harsh), ("generous", generous))}


def findings(result: Result) -> dict[str, bool]:
    """What should hold; each is printed and tested."""
    honest, bluffer = result.score("honest"), result.score("bluffer")
    constant_text, constant_ok = _constant_rater(result)
    selfish = result.evaluator("self-dealing")
    pay = result.payroll
    paid = {k: result.evaluator(k).units for k in ("fair", "harsh", "generous", "constant",
                                                     "self-dealing")}
    return {
        "honest agents score above bluffers": bool(honest and bluffer)
        and min(honest) > max(bluffer),
        **_bias(result),
        constant_text: constant_ok,
        "self-dealing attestations all refused": selfish.attempted > 0
        and selfish.refused["SELF_DEALING"] == selfish.attempted and selfish.stats is None,
        # (An epoch whose covert re-checks land after its seal pays nothing: its
        # verdicts had no blind truth by then. With 2-second epochs that happens.)
        "the pool: units sum to the pools, and every unit paid went to the fair, harsh "
        "and generous evaluators (right polarity, graded blind)":
        bool(pay.documents) and pay.paid + pay.unpaid == pay.pool
        and paid["fair"] + paid["harsh"] + paid["generous"] == pay.paid,
        "the pool: the constant rater and the self-dealer paid nothing":
        paid["constant"] == 0 and paid["self-dealing"] == 0,
    }


#: the policy the honest evaluators' weight under the others is compared with
REFERENCE_POLICY = "v1"


def _honest_weight(result: Result) -> list[str]:
    """The honest evaluators' verdicts (fair, harsh, generous): how much they weigh in
    the scores under each policy the bureau knows, the same ledger scored by each, and
    how much of their weight under v1 each other policy keeps."""
    out = ["honest evaluators' verdicts in the scores (settled weight; the same ledger "
           "scored under each policy):",
           "  the share of all the weight behind the scores that comes from the fair, harsh "
           "and generous",
           "  callers' verdicts; the rest is ground truth (checks, probes) and the agents' "
           "own witnessed",
           "  statements. v2 and v3 listen less to a caller until probes have graded it on "
           "10 blind verdicts,",
           "  so a low share is them holding back unproven callers, not ignoring honest ones "
           "for good; v4",
           "  rates callers against checks and admissions too, and gives each a voice per "
           "subject that grows with its rated record"]
    reference = result.honest_weight.get(REFERENCE_POLICY)
    for name, w in sorted(result.honest_weight.items()):
        kept = (f", {w.theirs / reference.theirs:.0%} of their weight under "
                f"{REFERENCE_POLICY}" if reference and reference.theirs
                and name != REFERENCE_POLICY else "")
        mark = " (the bureau's)" if name == result.policy else ""
        if name == "v1":
            mark += " (superseded; for comparison)"
        out.append(f"  {name}{mark}: {w.theirs:.3f} of {w.total:.3f} ({w.share:.1%}){kept}")
    return out


def _pool(result: Result) -> list[str]:
    """What the evaluators' pool paid, as the signed settlements and each evaluator's
    own proven row say (SPEC §8.2)."""
    pay = result.payroll
    if not pay.documents:
        return ["evaluators' pool: none settled"]
    out = [f"evaluators' pool: {len(pay.documents)} epochs settled, pool {pay.pool}, paid "
           f"{pay.paid}, unpaid {pay.unpaid} (score = g·J over blind probes only; each "
           "evaluator's row proven against the signed root)"]
    for ev in result.evaluators:
        per = f"{ev.units / ev.attempted:.2f} a verdict" if ev.attempted else "-"
        out.append(f"  {ev.member.name:<13} {ev.units:>7} units  ({per})")
    return out


def _evaluator_table(result: Result) -> list[str]:
    """Each evaluator's record as the policy that scored the reports reads it: up to v3
    its recentring offsets, under v4 its rates and its voice about one subject."""
    rated = policy_named(result.policy).evaluators.rates is not None
    lines = ["evaluators (from the ledger's entries, by bureau.scoring; "
             "reports never name them)",
             "  attested: verdicts sent; truth n: verdicts checked against blind ground "
             "truth; J: informedness (0 guessing, 1 always right);"]
    if rated:
        lines.append("  rate+/rate-: how often its verdict is positive on a right/wrong "
                     "call (probes, checks, admissions); voice: verdicts per subject")
        lines.append(f"{'evaluator':<13} {'attested':>8} {'truth n':>7} {'J':>6} "
                     f"{'rate+':>7} {'rate-':>7} {'voice':>7} {'weight':>7}  refused")
    else:
        lines.append("  off+/off-: recentring of its good/bad verdicts; weight: what one of "
                     "its verdicts counts; refused: by reason code")
        lines.append(f"{'evaluator':<13} {'attested':>8} {'truth n':>7} {'J':>6} "
                     f"{'off+':>7} {'off-':>7} {'weight':>7}  refused")
    for ev in result.evaluators:
        st = ev.stats
        refused = ", ".join(f"{k} {v}" for k, v in sorted(ev.refused.items())) or "-"
        flags = [] if st is None else [f for f, on in (
            ("constant rater", st.constant), ("uninformative", st.uninformative),
            ("provisional", st.provisional)) if on]
        pair = ((st.rate_positive, st.rate_negative) if rated else
                (st.offset_positive, st.offset_negative)) if st else (None, None)
        voice = f" {_num(st.voice if st else None, 7)}" if rated else ""
        lines.append(
            f"{ev.member.name:<13} {ev.attempted:>8} {st.n if st else 0:>7} "
            f"{_num(st.informedness if st else None)} "
            f"{_num(pair[0], 7)} {_num(pair[1], 7)}{voice} "
            f"{_num(st.weight if st else None, 7)}  {refused}"
            + (f"  ({', '.join(flags)})" if flags else ""))
    return lines


def render(result: Result) -> str:
    lines: list[str] = []
    epoch = next((r.report.get("epoch") for r in result.agents if r.report), None)
    lines.append(f"{count(result.calls, 'call')} through the proxy; epochs sealed: "
                 f"{', '.join(map(str, result.epochs_sealed))}; latest reports at epoch {epoch}")
    lines.append("derived outcomes reported by the proxy: " + (", ".join(
        f"{k} {v}" for k, v in sorted(result.derived.items())) or "none"))
    lines.append("")
    lines += ["agents, best first by the low end of the score's interval (each row is that "
              "agent's signed report):",
              "  kind: how the simulated agent behaves; score: 0 bad .. 1 good, 0.5 no "
              "evidence; interval: 95%;",
              "  weight: the evidence behind the score (scored interactions times their "
              "evaluators' weights)",
              f"{'agent':<12} {'kind':<9} {'score':>6} {'interval':>15} {'weight':>7}  "
              "outcomes"]
    def rank(row: AgentRow) -> float:
        # by score.low, as anything that ranks agents does (SPEC §8): an agent known
        # from little evidence never outranks a long good record
        score = (row.report or {}).get("score")
        return -score["low"] if score else 1.0

    ranked = sorted(result.agents, key=rank)
    for row in ranked:
        rep = row.report or {}
        s = rep.get("score")
        interval = f"{s['low']:.3f} .. {s['high']:.3f}" if s else "-"
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(rep.get("outcomes", {}).items()) if v)
        unscored = ", ".join(f"{k} {v}" for k, v in sorted(rep.get("unscored", {}).items()) if v)
        if unscored:
            outcomes += f"; unscored: {unscored}"
        note = " (computed locally: no report served)" if rep.get("computed") else ""
        lines.append(f"{row.member.name:<12} {row.member.kind:<9} "
                     f"{_num(s['value'] if s else None)} {interval:>15} "
                     f"{_num(s['weight'] if s else None, 7)}  {outcomes or '-'}{note}")
    lines.append("")
    lines += _evaluator_table(result)
    lines.append("")
    lines += _pool(result)
    lines.append("")
    lines += _honest_weight(result)
    lines.append("")
    for text, ok in findings(result).items():
        lines.append(f"[{'ok' if ok else 'NO'}] {text}")
    return "\n".join(lines)


def as_json(result: Result) -> dict[str, Any]:
    """``bureau simulate --json``: what the table shows, as data. Each agent's report is
    the payload the bureau signed, whole; evaluators' records are the simulation's own
    reading of the ledger (reports never name evaluators)."""
    return {
        "policy": result.policy, "calls": result.calls,
        "epochs_sealed": result.epochs_sealed, "derived": dict(sorted(result.derived.items())),
        "agents": [{"name": row.member.name, "kind": row.member.kind, "key": row.member.kid,
                    "report": row.report} for row in result.agents],
        "evaluators": [{"name": ev.member.name, "kind": ev.member.kind,
                        "key": ev.member.kid, "attempted": ev.attempted,
                        "refused": dict(sorted(ev.refused.items())),
                        "stats": None if ev.stats is None else dataclasses.asdict(ev.stats)}
                       for ev in result.evaluators],
        "pool": {"documents": result.payroll.documents,
                 "units": {ev.member.name: ev.units for ev in result.evaluators}},
        "honest_weight": {name: dataclasses.asdict(w)
                          for name, w in sorted(result.honest_weight.items())},
        "findings": findings(result),
    }
