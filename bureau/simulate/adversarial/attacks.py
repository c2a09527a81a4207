"""The attacks, as data: what each one does to whom, what it is measured against, and
the target the scoring policy should meet (docs/simulation.md, "Adversarial").

Each attack builds two parties whose reports are compared — usually twins, an attacked
target and an identical control nobody attacked — and plays the attack through the
arena. The sizes are the ones the attacks were first measured with under policy v1
(the targets are :mod:`.staging`'s); the rings that earn a record before they lie are
:mod:`.rings`'.
"""

from __future__ import annotations

import functools
from typing import Literal

from bureau.simulate.adversarial.arena import UNIT, Arena, Party
from bureau.simulate.adversarial.rings import (
    THIN_RECORD_ATTACKS,
    calibrate_on_checks,
    calibrated_ring,
    calibration_size,
)
from bureau.simulate.adversarial.staging import (
    Attack,
    Goal,
    Staged,
    Verdicts,
    bluffer,
    honest,
    rate,
    twins,
)
from reporters import Rejected, Reporter
from reporters._internal.payloads import now_timestamp
from reporters.models import AttestationOutcome

__all__ = ["ATTACKS", "LARGE_SPEND", "Attack", "Goal", "Staged"]

#: the largest spend factor is reached at 10,000 units (log10(1 + 10^4) / 2 ≥ 2)
LARGE_SPEND = 10_000 * UNIT


# --------------------------------------------------------------------------- rings


async def sybil_ring(a: Arena, k: int, up: bool) -> Staged:
    """k fresh evaluators (distinct operators and anchors), 9 verdicts each on the
    target's calls: ACCEPTED for a bluffer, FAILED_DISCOVERED against an honest agent."""
    control, target = await twins(a, bluffer if up else honest, f"ring{k}-victim")
    ring = await a.enroll_many(f"ring{k}", k)
    await rate(a, ring, target, Verdicts(9, "ACCEPTED" if up else "FAILED_DISCOVERED"))
    return Staged(control, target)


async def one_subject_raters(a: Arena) -> Staged:
    """3 evaluators × 30 ACCEPTED, all about the one bluffer (v1's constant-rater rule
    needs 3 subjects, so it never fires)."""
    control, target = await twins(a, bluffer, "one-subject-victim")
    raters = await a.enroll_many("one-subject", 3)
    await rate(a, raters, target, Verdicts(30, "ACCEPTED"))
    return Staged(control, target)


async def constant_evasion(a: Arena) -> Staged:
    """3 constant raters, 30 verdicts each about 3 subjects (28 about the bluffer, one
    about each of two bystanders), with one verdict on the bluffer changed to
    ACCEPTED_AFTER_CORRECTIONS (1 correction): not all the same outcome any more."""
    control, target = await twins(a, bluffer, "evasion-victim")
    bystanders = await a.enroll_many("evasion-bystander", 2)
    raters = await a.enroll_many("evasion", 3)
    for subject in bystanders:
        await rate(a, raters, subject, Verdicts(1, "ACCEPTED"))
    await rate(a, raters, target, Verdicts(27, "ACCEPTED"))
    await rate(a, raters, target, Verdicts(1, "ACCEPTED_AFTER_CORRECTIONS", 1))
    return Staged(control, target)


# --------------------------------------------------------------------------- value judgments


async def value_flood(a: Arena, buyers: int, each: int, spent: int,
                      judgment: Literal["VALUE_OK", "VALUE_POOR"]) -> Staged:
    """``buyers`` fresh buyers, ``each`` time-and-materials engagements each of the target
    (a bluffer for VALUE_OK, an honest agent for VALUE_POOR), each judged."""
    label = f"vj-{judgment.lower()}-{spent}"
    control, target = await twins(a, bluffer if judgment == "VALUE_OK" else honest,
                                  f"{label}-victim")
    crowd = await a.enroll_many(label, buyers)
    engagements = [(b, await a.engagement(target, b, spent)) for b in crowd
                   for _ in range(each)]
    await a.settle()
    for b, eid in engagements:
        await a.judge(b, target, eid, spent, judgment)
    return Staged(control, target)


# --------------------------------------------------------------------------- identities


async def long_record(a: Arena, label: str) -> Party:
    """An honest long record: 100 checked calls, 90 passed."""
    party = await a.enroll(label)
    await a.calls(party, 90, check="PASS")
    await a.calls(party, 10, check="FAIL")
    return party


async def whitewash(a: Arena) -> Staged:
    """A new key, backed only by 3 fresh sybils (9 ACCEPTED each, no ground truth at
    all), against an honest long record: by ``score.low`` it must rank below."""
    record = await long_record(a, "long-record")
    fresh = await a.enroll("whitewashed")
    await a.calls(fresh, 5)
    sybils = await a.enroll_many("whitewash-sybil", 3)
    await rate(a, sybils, fresh, Verdicts(9, "ACCEPTED"))
    return Staged(record, fresh)


async def self_erasure(a: Arena) -> Staged:
    """An honest agent rated FAILED_DISCOVERED 9 times by a critic, then amending its
    operator (spelt differently: case, width, a zero-width space) and its anchor (a
    subdomain of the critic's) until it "matches" the critic. The control is rated the
    same and amends nothing."""
    control, target = await twins(a, honest, "erasure-victim")
    for subject in (control, target):
        critic = await a.enroll(f"critic-of-{subject.label}")
        await rate(a, [critic], subject, Verdicts(9, "FAILED_DISCOVERED"))
    await a.amend(target, operator=f"  {critic.operator.upper()}\u200b ")
    await a.amend(target, anchor=f"www.{critic.anchor}")
    # The bureau does see the two as linked now: a favourable verdict is refused.
    [ia] = await a.calls(target, 1, caller=critic)
    await a.settle()
    try:
        await a.attest(critic, target, ia, "ACCEPTED")
    except Rejected as refused:
        if refused.code == "SELF_DEALING":
            return Staged(control, target)
        raise
    raise RuntimeError("the self-erasure amendments did not link the subject to its critic")


async def distrusted_reporter(a: Arena, fabricated: int) -> Staged:
    """A registered reporter fabricates ``fabricated`` failed checks about an honest
    agent; once the first epoch is sealed the admin sets its ``distrusted_from`` to just
    before its first fabrication. Compared after the next seal with the twin nobody lied
    about."""
    control, target = await twins(a, honest, f"libel{fabricated}-victim")
    liar: Reporter = await a.reporter(f"libel{fabricated}-reporter")
    since = now_timestamp()
    await a.calls(target, fabricated, check="FAIL", reporter=liar)
    await a.settle(liar)
    return Staged(control, target, functools.partial(a.distrust, liar, since))


# --------------------------------------------------------------------------- recentring

Bias = Literal["fair", "harsh", "generous"]


def biased(bias: Bias, good: bool) -> tuple[AttestationOutcome, int]:
    """What each rater attests of a good or a bad call (the honest simulation's harsh and
    generous raters): fair says it straight; harsh turns a good call into "accepted after
    2 corrections" (0.70); generous turns a bad one into "accepted after 4 corrections"
    (0.40, still negative)."""
    if good:
        return ("ACCEPTED_AFTER_CORRECTIONS", 2) if bias == "harsh" else ("ACCEPTED", 0)
    return ("ACCEPTED_AFTER_CORRECTIONS", 4) if bias == "generous" else ("FAILED_DISCOVERED", 0)


async def lone_rater(a: Arena, bias: Bias) -> Party:
    """A rater calibrated on 20 probe-covered calls (10 good) of decoys of its own — one,
    or as many subjects as the policy in force needs to calibrate an evaluator (v4) —
    alone on a target of its own: 10 unchecked calls, 7 good, each attested with its
    bias. Returns the target."""
    rater = await a.enroll(f"{bias}-rater")
    decoys = await a.enroll_many(f"{bias}-decoy", calibration_size(a)[1])
    target = await a.enroll(f"{bias}-target")
    plan: list[tuple[Party, str, bool]] = []
    for i, is_good in enumerate(i < 10 for i in range(20)):
        decoy = decoys[i % len(decoys)]
        plan += [(decoy, ia, is_good) for ia in await a.calls(decoy, 1, caller=rater)]
    probed = len(plan)
    for is_good, count in ((True, 7), (False, 3)):
        plan += [(target, ia, is_good) for ia in await a.calls(target, count, caller=rater)]
    await a.settle()
    await a.attest_all((rater, subject, ia, *biased(bias, good)) for subject, ia, good in plan)
    for subject, ia, good in plan[:probed]:
        await a.probe(subject, ia, good)
    await a.settle()
    return target


async def recentring(a: Arena, bias: Bias) -> Staged:
    fair, unfair = await lone_rater(a, "fair"), await lone_rater(a, bias)
    return Staged(fair, unfair)


# --------------------------------------------------------------------------- the pool


async def copied_checks_ring(a: Arena) -> Staged:
    """3 callers read the deliverable check of each of their 10 calls in their own files
    and attest exactly what it says: right every time, and paid nothing for it (a check
    is never blind truth, SPEC §8.2). Baseline: nobody, score 0."""
    decoy = await a.enroll("copied-checks-decoy")
    raters = await a.enroll_many("copied-checks", 3)
    await calibrate_on_checks(a, raters, [decoy], 10)
    return Staged(decoy, decoy, payees=((), tuple(raters)))


#: The most one blind-graded verdict can score: g = 1 times J over a record of one
#: right verdict, (1+1)/(1+2) + (0+1)/(0+2) - 1 = 1/6 (SPEC §7's smoothing).
ONE_VERDICT_MAX = round(2 / 3 + 1 / 2 - 1, 6)


async def fresh_keys_split(a: Arena, keys: int = 12) -> Staged:
    """``keys`` fresh keys each give one verdict, right, on a call the gateway then
    probes. Together they score at most ``keys`` blind-graded verdicts at 1/6 each: the
    baseline is that bound (a single key with the same 12 verdicts would score up to
    12 · 0.75 = 9; measured beside it, the comparison depended on which epoch each probe
    landed in, so the bound is what is held)."""
    decoy = await a.enroll("split-decoy")
    fresh = await a.enroll_many("split-fresh", keys)
    plan: list[tuple[Party, str, bool]] = []
    for i, who in enumerate(fresh):
        plan += [(who, ia, i % 2 == 0) for ia in await a.calls(decoy, 1, caller=who)]
    await a.settle()
    await a.attest_all((r, decoy, ia, "ACCEPTED" if passed else "FAILED_DISCOVERED", 0)
                       for r, ia, passed in plan)
    for _, ia, passed in plan:
        await a.probe(decoy, ia, passed)
    return Staged(decoy, decoy, payees=((), tuple(fresh)),
                  bound=keys * ONE_VERDICT_MAX)


# --------------------------------------------------------------------------- the table

MOVE_10, MOVE_15, MOVE_01 = Goal("move", 0.10), Goal("move", 0.15), Goal("move", 0.01)

ATTACKS: tuple[Attack, ...] = (
    *(Attack(f"sybil ring up, k={k}", "bluffer", MOVE_10,
             functools.partial(sybil_ring, k=k, up=True), v1=(0.083, v))
      for k, v in ((3, 0.413), (6, 0.569), (12, 0.718))),
    *(Attack(f"sybil ring down, k={k}", "honest", MOVE_10,
             functools.partial(sybil_ring, k=k, up=False), v1=(0.917, v))
      for k, v in ((3, 0.587), (6, 0.431), (12, 0.282))),
    Attack("3 raters x 30, one subject", "bluffer", MOVE_10, one_subject_raters,
           v1=(0.083, 0.681)),
    Attack("constant rater, one varied verdict", "bluffer", MOVE_10, constant_evasion,
           v1=(0.083, 0.663)),
    Attack("ring calibrated on checked calls", "bluffer", MOVE_10,
           functools.partial(calibrated_ring, on="checks"), v1=(0.083, 0.594)),
    Attack("ring calibrated on probe-covered calls", "bluffer", MOVE_15,
           functools.partial(calibrated_ring, on="probes")),
    Attack("40 x VALUE_OK, spent 0", "bluffer", MOVE_01,
           functools.partial(value_flood, buyers=4, each=10, spent=0, judgment="VALUE_OK"),
           v1=(0.083, 0.170)),
    Attack("10 x VALUE_OK, large spend", "bluffer", MOVE_10,
           functools.partial(value_flood, buyers=10, each=1, spent=LARGE_SPEND,
                             judgment="VALUE_OK")),
    Attack("10 x VALUE_POOR, large spend", "honest", MOVE_10,
           functools.partial(value_flood, buyers=10, each=1, spent=LARGE_SPEND,
                             judgment="VALUE_POOR"), v1=(0.917, 0.759)),
    Attack("whitewash: new key, 3 sybils", "long record (low)", Goal("below"), whitewash,
           metric="low", v1=(0.816, 0.509)),
    Attack("self-erasure by amendment", "honest, criticised", MOVE_01, self_erasure),
    *(Attack(f"reporter fabricates {n} fails, distrusted", "honest", Goal("move", 0.02),
             functools.partial(distrusted_reporter, fabricated=n))
      for n in (20, 100)),
    *(Attack(f"{bias} rater alone (vs fair)", "fair rater's twin", Goal("move", 0.04),
             functools.partial(recentring, bias=bias))
      for bias in ("harsh", "generous")),
    Attack("pool: ring copies visible checks", "the pool", Goal("move", 0.0),
           copied_checks_ring, metric="pool"),
    Attack("pool: 12 fresh keys split the pool", "12 verdicts × 1/6", Goal("at_most"),
           fresh_keys_split, metric="pool"),
    *THIN_RECORD_ATTACKS,
)
