"""Calibrated rings against agents with a short checked record (issue 31), as evidence
built in memory and scored by the library — the same attacks ``bureau simulate
--adversarial`` plays through a live bureau (``thin record`` rows, docs/simulation.md).

A ring of evaluators first earns a record on decoys of its own — by reading the
deliverable check of each of its calls in its own file before attesting (readable), or
by being right on calls that a probe covers after it attested (blind) — as many calls
over as many decoys as the policy in force needs to calibrate an evaluator (its
document's ``calibration_samples`` and, under v4, ``rates.calibration_subjects``); then
each member attests 9 calls of the target, ``ACCEPTED`` on a thin bluffer or
``FAILED_DISCOVERED`` on a thin honest agent. The target's own record: 0, 1 or 2 checked
calls (failed for the bluffer, passed for the honest one) and 5 unchecked calls by
one-off users. The bounds are those of the catalogue's calibrated rings: 0.10 for a
ring calibrated on checks, 0.15 on probes. A null score is read as 0.5, as the live
suite reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from bureau.scoring.policy import Policy
from tests.scoring.attacks import TARGET, World, evaluators, report

On = Literal["checks", "probes"]
MEMBERS = 3
LIES = 9
BOUND = {"checks": 0.10, "probes": 0.15}


def calibration(policy: Policy) -> tuple[int, int]:
    """(verdicts, decoys) each member needs to be calibrated under ``policy``, as its
    public document says (at least 10 verdicts on one decoy, the catalogue's size)."""
    rates = policy.evaluators.rates
    return (max(10, policy.evaluators.calibration_samples),
            1 if rates is None else rates.calibration_subjects)


def thin(checks: int, good: bool) -> Callable[[World], None]:
    """The target: ``checks`` checked calls (passed when ``good``) and 5 unchecked."""
    def build(w: World) -> None:
        for _ in range(checks):
            w.call(TARGET, check="PASS" if good else "FAIL")
        for _ in range(5):
            w.call(TARGET)
    return build


def calibrate(w: World, ring: list[str], on: On, size: tuple[int, int]) -> None:
    """Each member is right on ``size[0]`` calls spread over ``size[1]`` decoys of its
    own (half of them good), graded by the checks it read or by probes after it."""
    calls, decoys = size
    for e in ring:
        for i in range(calls):
            good = i % 2 == 0
            decoy = f"ed25519:thin-decoy-{i % decoys}"
            f = w.call(decoy, e, check=("PASS" if good else "FAIL") if on == "checks"
                       else None)
            w.attest(e, f, "ACCEPTED" if good else "FAILED_DISCOVERED")
            if on == "probes":
                w.probe(f, good)


def ring_attack(on: On, up: bool, size: tuple[int, int],
                members: int = MEMBERS) -> Callable[[World], None]:
    def attack(w: World) -> None:
        ring = evaluators(f"thin-{on}", members)
        calibrate(w, ring, on, size)
        for e in ring:
            for _ in range(LIES):
                w.attest(e, w.call(TARGET, e), "ACCEPTED" if up else "FAILED_DISCOVERED")
    return attack


@dataclass(frozen=True)
class Thin:
    checks: int
    on: On
    up: bool

    @property
    def name(self) -> str:
        return (f"thin record ({self.checks} checks), ring on {self.on} "
                f"{'up' if self.up else 'down'}")

    @property
    def bound(self) -> float:
        return BOUND[self.on]


THIN = [Thin(checks, on, up) for checks in (0, 1, 2) for on in ("checks", "probes")
        for up in (True, False)]


def value(w: World, policy: Policy) -> float:
    score = report(w, TARGET, policy)["score"]
    return 0.5 if score is None else float(score["value"])


def run(t: Thin, policy: Policy, size: tuple[int, int] | None = None,
        members: int = MEMBERS) -> tuple[float, float]:
    """(baseline, attacked) value of the thin target under ``policy``."""
    base = World()
    thin(t.checks, not t.up)(base)
    hit = World()
    thin(t.checks, not t.up)(hit)
    ring_attack(t.on, t.up, size or calibration(policy), members)(hit)
    return value(base, policy), value(hit, policy)
