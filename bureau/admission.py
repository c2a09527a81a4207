"""Stages 4–5 of intake: authorize the signer, then admit the payload (SPEC §5).

Pure rules: each takes the submission, the bureau's clock reading and an
:class:`AdmissionState` (what the ledger already holds) and either raises a
:class:`BureauError` or returns a :class:`Decision`. No I/O happens here; the ledger
reaches these rules through the one narrow protocol below, and tests can pass an
in-memory state.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from bureau.errors import BureauError, Code
from reporters.models import (
    AmendmentPayload,
    AttestationPayload,
    DisputePayload,
    EnrollmentPayload,
    FactPayload,
    Payload,
    ProbePayload,
    ResolutionPayload,
    ValueJudgmentPayload,
    parse_timestamp,
)

MAX_CLOCK_SKEW = dt.timedelta(seconds=300)

ADMIN_KINDS = frozenset({"reporter", "resolution", "seal"})
REPORTER_ROLE = {"fact": "facts", "probe": "probes"}
AGENT_KINDS = frozenset(
    {"amendment", "withdrawal", "attestation", "value-judgment", "dispute"}
)

# Exclusion reasons, as counted in a report's "excluded" object.
SELF_DEALING = "self_dealing"
DISPUTED = "disputed"


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class ReporterRecord:
    key: str
    roles: frozenset[str]


@dataclass(frozen=True, slots=True)
class AgentRecord:
    key: str
    name: str
    operator: str
    anchor_kind: str
    anchor_value: str
    withdrawn: bool = False


@dataclass(frozen=True, slots=True)
class FactRecord:
    content_key: str
    subject: str
    caller: str | None


@dataclass(frozen=True, slots=True)
class EngagementFact:
    """The latest fact of an engagement: what a value judgment must match."""

    subject: str
    caller: str | None
    arrangement: str
    spent: int
    currency: str
    units: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class VerdictRecord:
    entry_id: str
    kind: str  # "attestation" | "value-judgment"
    evaluator: str
    subject: str


@dataclass(frozen=True, slots=True)
class EntryRecord:
    id: str
    kind: str
    subject: str | None


@dataclass(frozen=True, slots=True)
class Decision:
    """Admit the submission. ``exclusions`` are (target entry id, reason) pairs the
    bureau must append right after it, in this order."""

    exclusions: tuple[tuple[str, str], ...] = field(default_factory=tuple)


ADMIT = Decision()


class AdmissionState(Protocol):
    """What the rules may ask of the ledger. Implementations see entries admitted
    earlier in the same group commit, so a fact and its attestation may share a batch."""

    def is_admin(self, key: str) -> bool: ...
    def reporter(self, key: str) -> ReporterRecord | None: ...
    def agent(self, key: str) -> AgentRecord | None: ...
    def fact(self, reporter: str, interaction: str) -> FactRecord | None: ...
    def probe(self, reporter: str, interaction: str) -> FactRecord | None: ...
    def engagement_fact(self, reporter: str, engagement: str) -> EngagementFact | None: ...
    def verdict(self, kind: str, evaluator: str, reporter: str, ref: str) -> str | None:
        """Content key of the evaluator's existing verdict, if any."""
        ...
    def verdicts_involving(self, agent: str) -> Iterable[VerdictRecord]: ...
    def entry(self, entry_id: str) -> EntryRecord | None: ...
    def dispute_target(self, dispute_id: str) -> str | None: ...
    def is_resolved(self, dispute_id: str) -> bool: ...
    def is_excluded(self, entry_id: str) -> bool: ...


# --------------------------------------------------------------------------- links


def _anchors_linked(kind_a: str, value_a: str, kind_b: str, value_b: str) -> bool:
    a, b = value_a.lower(), value_b.lower()
    if kind_a == kind_b:
        return a == b
    email, domain = (a, b) if kind_a == "email" else (b, a)
    return email.rpartition("@")[2] == domain


def linked(a: AgentRecord, b: AgentRecord) -> bool:
    """Do these two agents share an operator or an anchor (SPEC §5, self-dealing)?"""
    if a.key == b.key:
        return True
    if a.operator.strip().lower() == b.operator.strip().lower():
        return True
    return _anchors_linked(a.anchor_kind, a.anchor_value, b.anchor_kind, b.anchor_value)


# --------------------------------------------------------------------------- authorize


def authorize(kind: str, signer: str, state: AdmissionState) -> None:
    """Stage 4: may this signer submit this kind of payload at all?"""
    if kind in ADMIN_KINDS:
        if not state.is_admin(signer):
            raise BureauError(Code.NOT_ADMIN, "", f"a {kind} payload is signed by an admin key")
        return
    if kind in REPORTER_ROLE:
        rep = state.reporter(signer)
        if rep is None:
            raise BureauError(Code.UNKNOWN_REPORTER, "", "signer is not a registered reporter")
        role = REPORTER_ROLE[kind]
        if role not in rep.roles:
            raise BureauError(Code.MISSING_ROLE, "", f"reporter lacks the role {role!r}")
        return
    agent = state.agent(signer)
    if kind == "enrollment":
        if agent is not None:
            code = Code.WITHDRAWN if agent.withdrawn else Code.ALREADY_ENROLLED
            raise BureauError(code, "", "this key has already enrolled")
        return
    if kind in AGENT_KINDS:
        if agent is None:
            raise BureauError(Code.NOT_ENROLLED, "", "signer is not an enrolled agent")
        if agent.withdrawn:
            raise BureauError(Code.WITHDRAWN, "", "signer has withdrawn")
        return
    raise AssertionError(f"no authorization rule for {kind}")  # pragma: no cover


# --------------------------------------------------------------------------- admit


def _check_clock(observed_at: str, now: dt.datetime, path: str) -> None:
    if parse_timestamp(observed_at) - now > MAX_CLOCK_SKEW:
        raise BureauError(Code.CLOCK_SKEW, path, "more than 300 s ahead of the bureau's clock")


def _admit_fact(p: FactPayload, signer: str, key: str, state: AdmissionState) -> None:
    existing = state.fact(signer, p.interaction)
    if existing is not None and existing.content_key != key:
        raise BureauError(Code.CONFLICTING_FACT, "/interaction",
                          "this reporter already reported a different fact for this interaction")
    probe = state.probe(signer, p.interaction)
    if probe is not None and probe.subject != p.subject:
        # the mirror of a probe naming another subject than the fact (UNWITNESSED there)
        raise BureauError(Code.CONFLICTING_FACT, "/subject",
                          "this reporter's probe of the interaction names another subject")


def _admit_probe(p: ProbePayload, signer: str, key: str, state: AdmissionState) -> None:
    fact = state.fact(signer, p.interaction)
    if fact is not None and fact.subject != p.subject:
        raise BureauError(Code.UNWITNESSED, "/subject",
                          "this reporter's fact for the interaction is about another subject")
    existing = state.probe(signer, p.interaction)
    if existing is not None and existing.content_key != key:
        raise BureauError(Code.CONFLICTING_FACT, "/interaction",
                          "this reporter already reported a different probe result here")


def _check_not_self_dealing(evaluator: str, subject: str, state: AdmissionState) -> None:
    ev = state.agent(evaluator)
    sub = state.agent(subject)
    if evaluator == subject or (ev is not None and sub is not None and linked(ev, sub)):
        raise BureauError(Code.SELF_DEALING, "/subject",
                          "evaluator and subject share an operator or an anchor")


def _check_one_verdict(kind: str, signer: str, reporter: str, ref: str, key: str,
                       state: AdmissionState, path: str) -> None:
    existing = state.verdict(kind, signer, reporter, ref)
    if existing is not None and existing != key:
        raise BureauError(Code.DUPLICATE_VERDICT, path,
                          "this evaluator already gave its verdict here; the first one stands")


def _admit_attestation(p: AttestationPayload, signer: str, key: str,
                       state: AdmissionState) -> None:
    fact = state.fact(p.reporter, p.interaction)
    if fact is None:
        raise BureauError(Code.UNWITNESSED, "/interaction",
                          "no fact from this reporter for this interaction (yet)")
    if fact.subject != p.subject:
        raise BureauError(Code.UNWITNESSED, "/subject", "the fact is about another subject")
    if fact.caller != signer:
        raise BureauError(Code.UNWITNESSED, "", "the fact names another caller than the signer")
    _check_not_self_dealing(signer, p.subject, state)
    _check_one_verdict("attestation", signer, p.reporter, p.interaction, key, state,
                       "/interaction")


def _admit_value_judgment(p: ValueJudgmentPayload, signer: str, key: str,
                          state: AdmissionState) -> None:
    fact = state.engagement_fact(p.reporter, p.engagement)
    if fact is None:
        raise BureauError(Code.UNWITNESSED, "/engagement",
                          "no fact from this reporter for this engagement (yet)")
    if fact.subject != p.subject:
        raise BureauError(Code.UNWITNESSED, "/subject", "the engagement is with another subject")
    if fact.caller != signer:
        raise BureauError(Code.UNWITNESSED, "", "the engagement names another buyer")
    if fact.arrangement != "TIME_AND_MATERIALS":
        raise BureauError(Code.NOT_TIME_AND_MATERIALS, "/engagement",
                          f"the engagement is {fact.arrangement}")
    if p.spent != fact.spent:
        raise BureauError(Code.AMOUNT_MISMATCH, "/spent", f"the fact says {fact.spent}")
    if p.currency != fact.currency:
        raise BureauError(Code.AMOUNT_MISMATCH, "/currency", f"the fact says {fact.currency}")
    units = tuple(sorted((u.unit, u.quantity) for u in p.units))
    if units != tuple(sorted(fact.units)):
        raise BureauError(Code.AMOUNT_MISMATCH, "/units", "units differ from the fact's")
    _check_not_self_dealing(signer, p.subject, state)
    _check_one_verdict("value-judgment", signer, p.reporter, p.engagement, key, state,
                       "/engagement")


def _revealed_links(me: AgentRecord, state: AdmissionState) -> tuple[tuple[str, str], ...]:
    """Earlier verdicts that an enrollment or amendment shows to be self-dealing."""
    out: list[tuple[str, str]] = []
    for v in state.verdicts_involving(me.key):
        if state.is_excluded(v.entry_id):
            continue
        other_key = v.subject if v.evaluator == me.key else v.evaluator
        other = state.agent(other_key)
        if other is not None and linked(me, other):
            out.append((v.entry_id, SELF_DEALING))
    return tuple(out)


def enrolled_record(p: EnrollmentPayload, signer: str) -> AgentRecord:
    return AgentRecord(signer, p.name, p.operator, p.anchor.kind, p.anchor.value)


def amended_record(old: AgentRecord, p: AmendmentPayload) -> AgentRecord:
    return AgentRecord(
        old.key,
        p.name if p.name is not None else old.name,
        p.operator if p.operator is not None else old.operator,
        p.anchor.kind if p.anchor is not None else old.anchor_kind,
        p.anchor.value if p.anchor is not None else old.anchor_value,
        old.withdrawn,
    )


def _admit_dispute(p: DisputePayload, signer: str, state: AdmissionState) -> None:
    target = state.entry(p.entry)
    if target is None:
        raise BureauError(Code.UNKNOWN_ENTRY, "/entry", "no entry with this id")
    if target.subject != signer:
        raise BureauError(Code.NOT_SUBJECT, "/entry", "that entry is not about the signer")


def _admit_resolution(p: ResolutionPayload, state: AdmissionState) -> Decision:
    target = state.dispute_target(p.dispute)
    if target is None:
        raise BureauError(Code.UNKNOWN_ENTRY, "/dispute", "no dispute entry with this id")
    if state.is_resolved(p.dispute):
        raise BureauError(Code.ALREADY_RESOLVED, "/dispute", "this dispute is already resolved")
    if p.decision == "EXCLUDED" and not state.is_excluded(target):
        return Decision(((target, DISPUTED),))
    return ADMIT


def admit(kind: str, payload: Payload, signer: str, key: str, now: dt.datetime,
          state: AdmissionState) -> Decision:
    """Stage 5: does the payload fit what the ledger already holds?"""
    if type(payload) is FactPayload:
        _check_clock(payload.observed_at, now, "/observed_at")
        _admit_fact(payload, signer, key, state)
    elif type(payload) is ProbePayload:
        _check_clock(payload.observed_at, now, "/observed_at")
        _admit_probe(payload, signer, key, state)
    elif type(payload) is AttestationPayload:
        _admit_attestation(payload, signer, key, state)
    elif type(payload) is ValueJudgmentPayload:
        _admit_value_judgment(payload, signer, key, state)
    elif type(payload) is EnrollmentPayload:
        return Decision(_revealed_links(enrolled_record(payload, signer), state))
    elif type(payload) is AmendmentPayload:
        old = state.agent(signer)
        assert old is not None  # authorize() checked
        return Decision(_revealed_links(amended_record(old, payload), state))
    elif type(payload) is DisputePayload:
        _admit_dispute(payload, signer, state)
    elif type(payload) is ResolutionPayload:
        return _admit_resolution(payload, state)
    return ADMIT


def judge(kind: str, payload: Payload, signer: str, key: str, now: dt.datetime,
          state: AdmissionState) -> Decision:
    """Stages 4 and 5 together."""
    authorize(kind, signer, state)
    return admit(kind, payload, signer, key, now, state)
