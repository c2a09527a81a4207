"""Resolve every scored interaction to exactly one outcome code (SPEC §7 rules 1-8).

An *interaction* (here: a :class:`Unit`) is one ``(reporter, interaction)`` fact, probe,
or both. All facts of one engagement (same reporter and engagement id) form one unit,
scored once as its latest fact. Excluded entries are dropped before anything is built,
so they count nowhere. See ``docs/scoring.md`` for every choice the spec leaves open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bureau.scoring.evaluators import EvaluatorStats
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
from bureau.scoring.truth import InteractionKey, excluded_ids

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


@dataclass(frozen=True, slots=True)
class Resolution:
    """How one unit was scored. ``value``/``weight`` are ``None``/0 when unscored."""

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


def resolve(unit: Unit, policy: Policy, evaluators: Mapping[str, EvaluatorStats]) -> Resolution:
    """Apply SPEC §7 rules 1-8 in order; the first that applies decides."""
    fact = unit.fact
    claimed = fact.claimed if fact is not None else None
    reporter_w = policy.weights.reporter

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
        return _reporter(unit, 1, code, policy, reporter_w, source)

    # 2. The agent's own witnessed statement.
    if claimed == CLAIM_DECLINED:
        return _reporter(unit, 2, "DECLINED", policy, reporter_w, "claim")
    if claimed == CLAIM_FAILURE:
        return _reporter(unit, 2, "FAILED_ADMITTED", policy, reporter_w, "claim")

    # 3. The caller's attestation, recentred by its evaluator's offset.
    att = unit.attestation
    if att is not None:
        if policy.is_unscored(att.outcome):
            return Resolution(
                unit, 3, att.outcome, False, None, None, 0.0, 0.0, att.evaluator, "attestation"
            )
        w_e, offset = weighing(evaluators.get(att.evaluator), policy)
        raw = policy.outcome_value(att.outcome, att.corrections)
        weight, value = attestation_term(raw, w_e, offset)
        return Resolution(
            unit, 3, att.outcome, True, value, raw, weight, offset, att.evaluator, "attestation"
        )

    # 4. The buyer's value judgment: half weight, times the spend factor.
    vj = unit.value_judgment
    if vj is not None:
        w_e, _ = weighing(evaluators.get(vj.evaluator), policy)
        raw = policy.outcome_value(vj.judgment)
        weight, value = value_judgment_term(raw, w_e, vj.spent, policy)
        return Resolution(
            unit, 4, vj.judgment, True, value, raw, weight, 0.0, vj.evaluator, "value_judgment"
        )

    if fact is not None:
        # 5. Engagement concluded without completion: recorded, unscored.
        eng = fact.engagement
        if eng is not None and eng.concluded is not None and policy.is_unscored(eng.concluded):
            return _reporter(unit, 5, eng.concluded, policy, reporter_w, "fact")
        # 6. What the caller did next.
        if fact.derived is not None:
            return _reporter(unit, 6, fact.derived, policy, reporter_w, "fact")
        # 7. No answer at all.
        if not fact.answered:
            return _reporter(unit, 7, "NO_RESPONSE", policy, reporter_w, "fact")

    # 8. Observed (it counts in reliability), not scored.
    return Resolution(unit, 8, None, False, None, None, 0.0, 0.0, None, "fact")


def weighing(stats: EvaluatorStats | None, policy: Policy) -> tuple[float, float]:
    """An evaluator's (weight ``w_e``, recentring offset); an evaluator with no record
    (a buyer who only gave value judgments, say) weighs the policy's default."""
    if stats is None:
        return policy.evaluators.default_weight, 0.0
    return stats.weight, stats.offset


def attestation_term(raw: float, w_e: float, offset: float) -> tuple[float, float]:
    """Rule 3: the (weight, value) of a scored attestation — the evaluator's weight,
    and the outcome's value recentred by its offset, clamped to [0, 1]."""
    return w_e, min(1.0, max(0.0, raw - offset))


def value_judgment_term(raw: float, w_e: float, spent: int,
                        policy: Policy) -> tuple[float, float]:
    """Rule 4: the (weight, value) of a value judgment — the policy's value-judgment
    weight times the buyer's ``w_e`` times the spend factor; the value as judged."""
    return policy.weights.value_judgment * w_e * policy.spend_factor(spent), raw


def _reporter(
    unit: Unit, rule: int, code: str, policy: Policy, weight: float, source: str
) -> Resolution:
    """A resolution from reporter evidence (rules 1, 2, 5-7): weight 1 when scored."""
    if policy.is_unscored(code):
        return Resolution(unit, rule, code, False, None, None, 0.0, 0.0, None, source)
    value = policy.outcome_value(code)
    return Resolution(unit, rule, code, True, value, value, weight, 0.0, None, source)


def resolve_all(
    evidence: Evidence,
    policy: Policy,
    evaluators: Mapping[str, EvaluatorStats],
    excluded: Mapping[str, str] | None = None,
) -> list[Resolution]:
    """Every unit of ``evidence``, resolved, in seq order."""
    if excluded is None:
        excluded = excluded_ids(evidence.exclusions)
    return [resolve(u, policy, evaluators) for u in build_units(evidence, excluded)]
