"""Resolve every scored interaction to exactly one outcome code (SPEC §7 rules 1-8).

An *interaction* (here: a :class:`Unit`) is one ``(reporter, interaction)`` fact, probe,
or both. All facts of one engagement (same reporter and engagement id) form one unit,
scored once as its latest fact. Excluded entries are dropped before anything is built,
so they count nowhere. See ``docs/scoring.md`` for every choice the spec leaves open.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from bureau.scoring.evaluators import EvaluatorStats, Weighing, default_weighing
from bureau.scoring.inputs import (
    CLAIM_DECLINED,
    CLAIM_FAILURE,
    FAIL,
    PASS,
    Attestation,
    Evidence,
    Fact,
    Probe,
    ValueJudgment,
)
from bureau.scoring.policy import Policy
from bureau.scoring.truth import InteractionKey, set_aside

#: ``("i", reporter, interaction, subject)`` or ``("e", reporter, engagement, subject)``.
UnitKey = tuple[str, str, str, str]


# --------------------------------------------------------------------------- units


@dataclass(slots=True)
class Unit:
    """One scored interaction with the evidence that decides it."""

    key: UnitKey
    seq: int  # seq of the deciding entry: latest fact, else latest probe
    fact: Fact | None = None  # the latest (non-excluded) fact
    probe: Probe | None = None  # the latest (non-excluded) probe
    attestation: Attestation | None = None
    attested_fact_seq: int = -1  # seq of the fact the attestation names
    value_judgment: ValueJudgment | None = None

    @property
    def reporter(self) -> str:
        return self.key[1]

    @property
    def engagement(self) -> str | None:
        return self.key[2] if self.key[0] == "e" else None

    @property
    def interaction(self) -> str:
        if self.fact is not None:
            return self.fact.interaction
        assert self.probe is not None
        return self.probe.interaction

    @property
    def entry_id(self) -> str:
        if self.fact is not None:
            return self.fact.entry_id
        assert self.probe is not None
        return self.probe.entry_id


def build_units(evidence: Evidence, excluded: Mapping[str, str]) -> list[Unit]:
    """Group an agent's evidence into units, in seq order of their deciding entry."""
    units: dict[UnitKey, Unit] = {}
    owner: dict[InteractionKey, tuple[UnitKey, int]] = {}  # -> (unit, fact seq)
    for f in sorted(evidence.facts, key=_by_seq):
        if f.entry_id in excluded:
            continue
        eng = f.engagement
        ukey: UnitKey = (
            ("e", f.reporter, eng.id, f.subject)
            if eng is not None
            else ("i", f.reporter, f.interaction, f.subject)
        )
        unit = units.get(ukey)
        if unit is None:
            units[ukey] = Unit(ukey, f.seq, fact=f)
        elif f.seq > unit.seq:  # facts arrive sorted: the last one is the latest
            unit.fact, unit.seq = f, f.seq
        owner[(f.reporter, f.interaction, f.subject)] = (ukey, f.seq)

    for p in sorted(evidence.probes, key=_by_seq):
        if p.entry_id in excluded:
            continue
        ikey = (p.reporter, p.interaction, p.subject)
        owned = owner.get(ikey)
        if owned is None:  # a probe-only interaction, about the probe's subject
            ukey = ("i", p.reporter, p.interaction, p.subject)
            unit = units.get(ukey)
            if unit is None:
                unit = units[ukey] = Unit(ukey, p.seq)
            unit.seq = p.seq
        else:
            unit = units[owned[0]]
        unit.probe = p  # sorted by seq: the latest probe wins

    for a in sorted(evidence.attestations, key=_by_seq):
        if a.entry_id in excluded:
            continue
        owned = owner.get((a.reporter, a.interaction, a.subject))
        if owned is None:
            continue  # names no fact we hold: witnessed nowhere, scored nowhere
        unit = units[owned[0]]
        # One verdict per interaction: the first stands. Across an engagement's facts,
        # the verdict on the latest attested fact speaks for the engagement.
        if owned[1] > unit.attested_fact_seq:
            unit.attestation, unit.attested_fact_seq = a, owned[1]

    for v in sorted(evidence.value_judgments, key=_by_seq):
        if v.entry_id in excluded:
            continue
        unit = units.get(("e", v.reporter, v.engagement, v.subject))
        if unit is not None and unit.value_judgment is None:  # the first stands
            unit.value_judgment = v

    return sorted(units.values(), key=lambda u: (u.seq, u.key))


def _by_seq(entry: Fact | Probe | Attestation | ValueJudgment) -> int:
    return entry.seq


# --------------------------------------------------------------------------- rules

#: The rules of SPEC §7 by number, as ``explain`` names them beside the number
#: (docs/scoring.md, "How an interaction is scored").
RULE_NAMES: dict[int, str] = {
    1: "ground truth (a probe, else the deliverable check)",
    2: "the agent's own witnessed statement",
    3: "the caller's attestation",
    4: "the buyer's value judgment",
    5: "engagement concluded (recorded, not scored)",
    6: "what the caller did next",
    7: "no answer",
    8: "observed only (reliability, not scored)",
}


@dataclass(frozen=True, slots=True)
class Resolution:
    """How one unit was scored. ``value``/``weight`` are ``None``/0 when unscored.

    ``weight`` is the verdict's weight before settling (SPEC §7.1 steps c-d, see
    :func:`bureau.scoring.score.cap_terms`); ``passed_over`` the codes of verdicts of weight 0
    that resolved nothing under v2 (step b): the report lists them under ``unscored``."""

    unit: Unit
    rule: int  # 1-8, the first rule of SPEC §7 that applied
    code: str | None  # None: observed only (rule 8)
    scored: bool
    value: float | None  # after recentring, for attestations
    raw_value: float | None
    weight: float
    offset: float  # recentring offset applied (attestations only)
    evaluator: str | None  # key id behind rules 3/4; never written to a report
    source: str  # "probe" | "check" | "claim" | "attestation" | "value_judgment" | "fact"
    provisional: bool = False  # decided by a provisional evaluator (v2)
    passed_over: tuple[str, ...] = ()


class Verdict(NamedTuple):
    """An evaluator's verdict that may decide a unit (rules 3 and 4). The incremental
    deriver keeps these (shared) instead of Resolutions."""

    code: str
    rule: int
    evaluator: str
    raw: float | None  # the raw value; None for an unscored code
    spent: int | None  # for a value judgment


def unchecked_admission(unit: Unit, policy: Policy) -> bool:
    """Under v3: the agent admitted a failure that no ground truth covers, so the
    admission is weighed as a claimed success there would have been (rule 2 at the
    weight of the caller's verdict, else of rules 6-7, else unscored)."""
    fact = unit.fact
    return (policy.admission_as_if_success and fact is not None
            and fact.claimed == CLAIM_FAILURE and unit.probe is None
            and fact.check not in (PASS, FAIL))


def verdicts_of(unit: Unit, policy: Policy) -> tuple[Verdict, ...]:
    """The unit's candidate verdicts, in rule order: its attestation, its value judgment.
    On a v3 unchecked admission each becomes the admission weighed by that evaluator
    (rule 2, the value of ``FAILED_ADMITTED``, whatever the verdict said)."""
    out: list[Verdict] = []
    att, vj = unit.attestation, unit.value_judgment
    if unchecked_admission(unit, policy):
        admitted = policy.outcome_value("FAILED_ADMITTED")
        if att is not None:
            out.append(Verdict(code="FAILED_ADMITTED", rule=2, evaluator=att.evaluator,
                               raw=admitted, spent=None))
        if vj is not None:
            out.append(Verdict(code="FAILED_ADMITTED", rule=2, evaluator=vj.evaluator,
                               raw=admitted, spent=vj.spent))
        return tuple(out)
    if att is not None:
        raw = None if policy.is_unscored(att.outcome) else policy.outcome_value(
            att.outcome, att.corrections)
        out.append(Verdict(code=att.outcome, rule=3, evaluator=att.evaluator, raw=raw,
                           spent=None))
    if vj is not None:
        out.append(Verdict(code=vj.judgment, rule=4, evaluator=vj.evaluator,
                           raw=policy.outcome_value(vj.judgment), spent=vj.spent))
    return tuple(out)


def verdict_term(verdict: Verdict, weighing: Weighing, policy: Policy
                 ) -> tuple[float, float | None, float]:
    """A verdict's (weight, value, recentring offset) for its evaluator's weighing; the
    value is None for an unscored code, whose weight is its evaluator's ``w_e``."""
    _, rule, _, raw, spent = verdict
    w_e, offset_pos, offset_neg = weighing.weight, weighing.offset_positive, \
        weighing.offset_negative
    if raw is None:
        return w_e, None, 0.0
    if rule == 3:
        offset = offset_pos if raw >= policy.evaluators.polarity_threshold else offset_neg
        weight, value = attestation_term(raw, w_e, offset)
        return weight, value, offset
    if rule == 2 and spent is None:  # a v3 admission at its caller's weight, not recentred
        return w_e, raw, 0.0
    assert spent is not None
    weight, value = value_judgment_term(raw, w_e, spent, policy)
    return weight, value, 0.0


def decide(verdicts: tuple[Verdict, ...], weighings: Callable[[str], Weighing],
           policy: Policy) -> tuple[int, float, float | None, float, tuple[str, ...]]:
    """Which candidate verdict decides a unit (SPEC §7 rules 3-4, §7.1 step b): its index
    (-1: none, resolution goes on to rules 5-8), weight, value and offset, and the codes
    of the verdicts of weight 0 passed over. Under v1 the first verdict decides, whatever
    it weighs; under v2 a verdict of weight 0 resolves nothing."""
    passed: tuple[str, ...] = ()
    falls_through = policy.settling is not None
    for i, verdict in enumerate(verdicts):
        weight, value, offset = verdict_term(verdict, weighings(verdict.evaluator), policy)
        if weight == 0 and falls_through:
            passed += (verdict.code,)
            continue
        return i, weight, value, offset, passed
    return -1, 0.0, None, 0.0, passed


def resolve(unit: Unit, policy: Policy, evaluators: Mapping[str, EvaluatorStats]) -> Resolution:
    """Apply SPEC §7 rules 1-8 in order; the first that applies decides."""
    fixed = resolve_by_reporter(unit, policy)
    if fixed is not None:
        return fixed
    default = default_weighing(policy)

    def weighings(evaluator: str) -> Weighing:
        stats = evaluators.get(evaluator)
        return default if stats is None else stats.weighing

    verdicts = verdicts_of(unit, policy)
    index, weight, value, offset, passed = decide(verdicts, weighings, policy)
    if index < 0:
        rest = resolve_rest(unit, policy)
        return rest if not passed else _replace_passed(rest, passed)
    code, rule, evaluator, raw, _ = verdicts[index]
    return Resolution(unit, rule, code, value is not None, value, raw,
                      weight if value is not None else 0.0, offset, evaluator,
                      _VERDICT_SOURCE[rule],
                      weighings(evaluator).provisional, passed)


_VERDICT_SOURCE = {2: "claim", 3: "attestation", 4: "value_judgment"}


def _replace_passed(r: Resolution, passed: tuple[str, ...]) -> Resolution:
    return Resolution(r.unit, r.rule, r.code, r.scored, r.value, r.raw_value, r.weight,
                      r.offset, r.evaluator, r.source, r.provisional, passed)


def resolve_by_reporter(unit: Unit, policy: Policy) -> Resolution | None:
    """Rules 1 and 2, when one applies: ground truth, the agent's own statement."""
    fact = unit.fact
    claimed = fact.claimed if fact is not None else None

    # 1. Ground truth: the latest probe, else the fact's check.
    truth: bool | None = None
    source = "probe"
    if unit.probe is not None:
        truth = unit.probe.passed
    elif fact is not None and fact.check in (PASS, FAIL):
        truth, source = fact.check == PASS, "check"
    if truth is not None:
        if truth:
            code = "ACCEPTED"
        elif claimed == CLAIM_DECLINED:
            code = "DECLINED"
        elif claimed == CLAIM_FAILURE:
            code = "FAILED_ADMITTED"
        else:
            code = "FAILED_DISCOVERED"
        return _reporter(unit, 1, code, policy, source)

    # 2. The agent's own witnessed statement.
    if claimed == CLAIM_DECLINED:
        return _reporter(unit, 2, "DECLINED", policy, "claim")
    if claimed == CLAIM_FAILURE and not policy.admission_as_if_success:
        return _reporter(unit, 2, "FAILED_ADMITTED", policy, "claim")
    return None


def resolve_rest(unit: Unit, policy: Policy) -> Resolution:
    """Rules 5-8: what decides a unit that no ground truth, statement or verdict did. A
    v3 unchecked admission that rules 6-7 would score is rule 2 at their weight."""
    rest = _rest(unit, policy)
    # (a scored rest is rule 6 or 7, at the reporter weight: so is its rule 2)
    if rest.scored and unchecked_admission(unit, policy):
        return _reporter(unit, 2, "FAILED_ADMITTED", policy, "claim")
    return rest


def _rest(unit: Unit, policy: Policy) -> Resolution:
    fact = unit.fact
    if fact is not None:
        # 5. Engagement concluded without completion: recorded, unscored.
        eng = fact.engagement
        if eng is not None and eng.concluded is not None and policy.is_unscored(eng.concluded):
            return _reporter(unit, 5, eng.concluded, policy, "fact")
        # 6. What the caller did next.
        if fact.derived is not None:
            return _reporter(unit, 6, fact.derived, policy, "fact")
        # 7. No answer at all.
        if not fact.answered:
            return _reporter(unit, 7, "NO_RESPONSE", policy, "fact")

    # 8. Observed (it counts in reliability), not scored.
    return Resolution(unit, 8, None, False, None, None, 0.0, 0.0, None, "fact")


def attestation_term(raw: float, w_e: float, offset: float) -> tuple[float, float]:
    """Rule 3: the (weight, value) of a scored attestation — the evaluator's weight,
    and the outcome's value recentred by its offset, clamped to [0, 1]."""
    return w_e, min(1.0, max(0.0, raw - offset))


def value_judgment_term(raw: float, w_e: float, spent: int,
                        policy: Policy) -> tuple[float, float]:
    """Rule 4: the (weight, value) of a value judgment — the policy's value-judgment
    weight times the buyer's ``w_e`` times the spend factor; the value as judged."""
    return policy.weights.value_judgment * w_e * policy.spend_factor(spent), raw


def _reporter(unit: Unit, rule: int, code: str, policy: Policy, source: str) -> Resolution:
    """A resolution from reporter evidence (rules 1, 2, 5-7): the policy's reporter
    weight when scored."""
    if policy.is_unscored(code):
        return Resolution(unit, rule, code, False, None, None, 0.0, 0.0, None, source)
    value = policy.outcome_value(code)
    return Resolution(unit, rule, code, True, value, value, policy.weights.reporter, 0.0,
                      None, source)


def resolve_all(
    evidence: Evidence,
    policy: Policy,
    evaluators: Mapping[str, EvaluatorStats],
    excluded: Mapping[str, str] | None = None,
) -> list[Resolution]:
    """Every unit of ``evidence``, resolved, in seq order."""
    if excluded is None:
        excluded = set_aside(evidence)
    return [resolve(u, policy, evaluators) for u in build_units(evidence, excluded)]
