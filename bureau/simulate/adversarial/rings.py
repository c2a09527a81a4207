"""Rings that earn a record before they lie (docs/simulation.md, "Adversarial"): each
member is first right on calls of decoys — by reading the deliverable check of each
call in its own file before it attests (readable), or on calls that the gateway probes
only after it attested (blind, so it must be right on all of them) — then lies about
its target.

* ``ring calibrated on checked calls`` / ``on probe-covered calls``: against the
  catalogue's bluffer (10 failed checks), as first measured: the check ring on 10 calls
  of one decoy, the probe ring as the policy in force needs to calibrate an evaluator;
* ``thin record`` (issue 31): against an agent whose own record has 0, 1 or 2 checks,
  up (``ACCEPTED`` on a thin bluffer) and down (``FAILED_DISCOVERED`` on a thin honest
  agent), each ring calibrated as the policy in force needs — its public document's
  ``calibration_samples`` (at least 10) verdicts each, over ``rates.calibration_subjects``
  decoys when it names them (v4).
"""

from __future__ import annotations

import functools
from typing import Literal

from bureau.simulate.adversarial.arena import Arena, Check, Party
from bureau.simulate.adversarial.staging import (
    Attack,
    Goal,
    Maker,
    Staged,
    Verdicts,
    bluffer,
    rate,
    twins,
)

On = Literal["checks", "probes"]
MEMBERS = 3
LIES = 9


def calibration_size(a: Arena) -> tuple[int, int]:
    """(verdicts, decoys) that make an evaluator calibrated under the policy in force,
    as its public document says: ``calibration_samples`` (none under v1: at least 10),
    spread over ``rates.calibration_subjects`` subjects (v4; one before)."""
    evaluators = a.policy.get("evaluators", {})
    rates = evaluators.get("rates") or {}
    return (max(10, int(evaluators.get("calibration_samples", 0))),
            max(1, int(rates.get("calibration_subjects", 1))))


def _spread(n: int, decoys: list[Party]) -> dict[tuple[int, bool], int]:
    """``n`` calls over the decoys in turn, every second one good: how many of each
    (decoy index, good)."""
    out: dict[tuple[int, bool], int] = {}
    for i in range(n):
        key = (i % len(decoys), i % 2 == 0)
        out[key] = out.get(key, 0) + 1
    return out


async def _call(a: Arena, r: Party, decoys: list[Party], n: int, checked: bool
                ) -> list[tuple[Party, str, bool]]:
    """``r``'s ``n`` calls of the decoys: (decoy, interaction, went well) each."""
    made = []
    for (d, good), count in sorted(_spread(n, decoys).items()):
        check: Check = ("PASS" if good else "FAIL") if checked else None
        made += [(decoys[d], ia, good)
                 for ia in await a.calls(decoys[d], count, caller=r, check=check)]
    return made


async def calibrate_on_checks(a: Arena, raters: list[Party], decoys: list[Party],
                              n: int) -> None:
    """Each rater calls the decoys ``n`` times in all (half the checks pass), reads the
    checks in its own file, and attests exactly what they say."""
    made = {r.kid: await _call(a, r, decoys, n, checked=True) for r in raters}
    await a.settle()
    for r in raters:
        seen = await a.checks_seen(r)
        await a.attest_all((r, d, ia, "ACCEPTED" if seen[ia] == "PASS" else
                            "FAILED_DISCOVERED", 0) for d, ia, _ in made[r.kid])


async def calibrate_on_probes(a: Arena, raters: list[Party], decoys: list[Party],
                              n: int) -> None:
    """Each rater calls the decoys ``n`` times in all (half of them go well) and attests
    what it really got — nothing tells it which calls are probes, so it must be right on
    all of them — and only then does the gateway report its probe of each call."""
    plan = [(r, *call) for r in raters for call in await _call(a, r, decoys, n, False)]
    await a.settle()
    await a.attest_all((r, d, ia, "ACCEPTED" if good else "FAILED_DISCOVERED", 0)
                       for r, d, ia, good in plan)
    for _, d, ia, good in plan:
        await a.probe(d, ia, good)
    await a.settle()


async def _calibrate(a: Arena, raters: list[Party], label: str, on: On,
                     size: tuple[int, int]) -> None:
    calls, decoys = size
    subjects = await a.enroll_many(f"{label}-decoy", decoys)
    await (calibrate_on_checks if on == "checks" else calibrate_on_probes)(
        a, raters, subjects, calls)


async def calibrated_ring(a: Arena, on: On) -> Staged:
    """3 evaluators earn a record on decoys' calls first — by reading the checks in
    their own files before attesting (10 calls of one decoy, as first measured), or by
    being right on calls that turn out to be probes (they paid for it; as many as the
    policy needs) — then each attests 9 of the bluffer's calls ACCEPTED."""
    control, target = await twins(a, bluffer, f"calibrated-{on}-victim")
    raters = await a.enroll_many(f"calibrated-{on}", MEMBERS)
    size = (10, 1) if on == "checks" else calibration_size(a)
    await _calibrate(a, raters, f"calibrated-{on}", on, size)
    await rate(a, raters, target, Verdicts(LIES, "ACCEPTED"))
    return Staged(control, target)


def _thin(checks: int, good: bool) -> Maker:
    """A thin record: ``checks`` checked calls (passed when ``good``), 5 unchecked."""
    async def make(a: Arena, label: str) -> Party:
        party = await a.enroll(label)
        if checks:
            await a.calls(party, checks, check="PASS" if good else "FAIL")
        await a.calls(party, 5)
        return party
    return make


async def thin_ring(a: Arena, checks: int, on: On, up: bool) -> Staged:
    """A ring calibrated as the policy in force needs lies about a thin record: 9 ×
    ``ACCEPTED`` each on a thin bluffer, or ``FAILED_DISCOVERED`` on a thin honest agent."""
    label = f"thin{checks}-{on}-{'up' if up else 'down'}"
    control, target = await twins(a, _thin(checks, not up), f"{label}-victim")
    raters = await a.enroll_many(label, MEMBERS)
    await _calibrate(a, raters, label, on, calibration_size(a))
    await rate(a, raters, target, Verdicts(LIES, "ACCEPTED" if up else "FAILED_DISCOVERED"))
    return Staged(control, target)


#: the catalogue's bounds for calibrated rings: on checks 0.10, on probes 0.15
BOUNDS = {"checks": Goal("move", 0.10), "probes": Goal("move", 0.15)}

THIN_RECORD_ATTACKS: tuple[Attack, ...] = tuple(
    Attack(f"thin record ({checks}), {on} ring {'up' if up else 'down'}",
           f"thin {'bluffer' if up else 'honest'}", BOUNDS[on],
           functools.partial(thin_ring, checks=checks, on=on, up=up))
    for checks in (0, 1, 2) for on in ("checks", "probes") for up in (True, False))
