"""Stages 4–5 of intake: authorize the signer, then admit the payload (SPEC §5).

Pure rules: each takes the submission, the bureau's clock reading and an
:class:`~bureau.records.AdmissionState` (what the ledger already holds) and either
raises a :class:`BureauError` or returns a :class:`~bureau.records.Decision`. No I/O
happens here; the ledger reaches these rules through that one narrow protocol, and
tests can pass an in-memory state.

Who may sign what is the kinds table's (:mod:`bureau.kinds`, ``signer`` and ``role``);
what a payload must fit is one function per payload model, registered with
:func:`rule`. A kind without a rule is admitted once its signer is authorized.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TypeVar, cast

from bureau.errors import BureauError, Code
from bureau.intake.envelope import Envelope
from bureau.intake.links import is_favourable, linked
from bureau.kinds import ATTESTATION, SUBMITTED, VALUE_JUDGMENT, Kind, Signer
from bureau.records import (
    ADMIT,
    AdmissionState,
    AgentRecord,
    Decision,
    amended_record,
    enrolled_record,
)
from bureau.scoring.inputs import DISPUTED, SELF_DEALING  # exclusion reasons
from bureau.scoring.policy import policy_name_of
from reporters import wire
from reporters.models import (
    AmendmentPayload,
    AttestationPayload,
    DisputePayload,
    EnrollmentPayload,
    FactPayload,
    KeysPayload,
    Payload,
    PolicyPayload,
    PoolPayload,
    ProbePayload,
    ReporterPayload,
    ResolutionPayload,
    ValueJudgmentPayload,
    parse_timestamp,
)

MAX_CLOCK_SKEW = dt.timedelta(seconds=300)

P = TypeVar("P", bound=Payload)
#: (payload, signer, its content key, the bureau's clock, the state) -> the decision
Rule = Callable[[P, str, str, dt.datetime, AdmissionState], Decision]
_RULES: dict[type[Payload], Rule[Payload]] = {}


def rule(model: type[P]) -> Callable[[Rule[P]], Rule[P]]:
    """Register the stage-5 rule of one payload model."""
    def register(fn: Rule[P]) -> Rule[P]:
        _RULES[model] = cast(Rule[Payload], fn)
        return fn
    return register


# --------------------------------------------------------------------------- authorize


def _admin(kind: Kind, signer: str, state: AdmissionState) -> None:
    if not state.is_admin(signer):
        raise BureauError(Code.NOT_ADMIN, "", f"a {kind.payload} payload is signed by an admin key")


def _reporter(kind: Kind, signer: str, state: AdmissionState) -> None:
    rep = state.reporter(signer)
    if rep is None:
        raise BureauError(Code.UNKNOWN_REPORTER, "", "signer is not a registered reporter")
    if kind.role not in rep.roles:
        raise BureauError(Code.MISSING_ROLE, "", f"reporter lacks the role {kind.role!r}")


def _enrolling(kind: Kind, signer: str, state: AdmissionState) -> None:
    agent = state.agent(signer)
    if agent is not None:
        code = Code.WITHDRAWN if agent.withdrawn else Code.ALREADY_ENROLLED
        raise BureauError(code, "", "this key has already enrolled")


def _agent(kind: Kind, signer: str, state: AdmissionState) -> None:
    agent = state.agent(signer)
    if agent is None:
        raise BureauError(Code.NOT_ENROLLED, "", "signer is not an enrolled agent")
    if agent.withdrawn:
        raise BureauError(Code.WITHDRAWN, "", "signer has withdrawn")


#: Who signs (the kinds table's ``signer``) -> the check that the signer may.
#: ``Signer.BUREAU`` has none: nobody may submit what the bureau writes.
_AUTHORIZE: dict[Signer, Callable[[Kind, str, AdmissionState], None]] = {
    Signer.ADMIN: _admin,
    Signer.REPORTER: _reporter,
    Signer.ENROLLING: _enrolling,
    Signer.AGENT: _agent,
}


def authorize(kind: Kind, signer: str, state: AdmissionState) -> None:
    """Stage 4: may this signer submit this kind of payload at all?"""
    _AUTHORIZE[kind.signer](kind, signer, state)


# --------------------------------------------------------------------------- admit


def _check_clock(observed_at: str, now: dt.datetime, path: str) -> None:
    if parse_timestamp(observed_at) - now > MAX_CLOCK_SKEW:
        raise BureauError(Code.CLOCK_SKEW, path, "more than 300 s ahead of the bureau's clock")


def _check_issued_later(issued_at: str, in_force: dt.datetime | None, now: dt.datetime,
                        what: str) -> None:
    """SPEC §3: of one signer's updates the latest ``issued_at`` is in force, so a new
    one must be later than that (re-issuing an earlier state is a new ``issued_at``)."""
    _check_clock(issued_at, now, "/issued_at")
    if in_force is not None and parse_timestamp(issued_at) <= in_force:
        raise BureauError(Code.STALE_UPDATE, "/issued_at",
                          f"not later than the {what} in force (issued "
                          f"{in_force.strftime('%Y-%m-%dT%H:%M:%S.%fZ')})")


def _check_not_self_reporting(signer: str, path: str, named: str | None) -> None:
    """SPEC §5: nobody reports on itself — a fact or probe about (or called by) its own
    reporter, a verdict naming its own evaluator as the reporter."""
    if named == signer:
        raise BureauError(Code.SELF_DEALING, path, "the signer may not report on itself")


@rule(ReporterPayload)
def _admit_reporter(p: ReporterPayload, signer: str, key: str, now: dt.datetime,
                    state: AdmissionState) -> Decision:
    current = state.reporter(p.reporter)
    _check_issued_later(p.issued_at, None if current is None else current.issued_at, now,
                        "registration of this reporter")
    return ADMIT


@rule(PolicyPayload)
def _admit_policy(p: PolicyPayload, signer: str, key: str, now: dt.datetime,
                  state: AdmissionState) -> Decision:
    if policy_name_of(p.policy) is None:
        raise BureauError(Code.STALE_UPDATE, "/policy", "this bureau knows no policy with "
                          "this hash (GET /v1/policies/{hash} serves the ones it knows)")
    _check_not_begun(p.from_epoch, state, "policy")
    _check_issued_later(p.issued_at, state.policy_issued_at(), now, "policy entry")
    return ADMIT


def _check_not_begun(from_epoch: int, state: AdmissionState, what: str) -> None:
    """A ``policy`` or ``pool`` entry applies from the epoch it is recorded in or later:
    a sealed (or begun) epoch's never changes."""
    epoch = state.recording_epoch()
    if from_epoch < epoch:
        raise BureauError(Code.STALE_UPDATE, "/from_epoch",
                          f"epoch {from_epoch} has begun (this entry is recorded in epoch "
                          f"{epoch}): a {what} applies from the current epoch or a later one")


@rule(PoolPayload)
def _admit_pool(p: PoolPayload, signer: str, key: str, now: dt.datetime,
                state: AdmissionState) -> Decision:
    """As for ``policy``: a sealed epoch's pool never changes (SPEC §3, §8.2)."""
    _check_not_begun(p.from_epoch, state, "pool")
    _check_issued_later(p.issued_at, state.pool_issued_at(), now, "pool entry")
    return ADMIT


@rule(KeysPayload)
def _admit_keys(p: KeysPayload, signer: str, key: str, now: dt.datetime,
                state: AdmissionState) -> Decision:
    for path, named in (("/bureau", p.bureau), *(("/admins", a) for a in p.admins)):
        try:
            wire.public_key_from_key_id(named)
        except wire.WireError as exc:
            raise BureauError(Code.SCHEMA, path, f"{named}: {exc.detail}") from None
    _check_issued_later(p.issued_at, state.keys_issued_at(), now, "keys entry")
    return ADMIT


@rule(FactPayload)
def _admit_fact(p: FactPayload, signer: str, key: str, now: dt.datetime,
                state: AdmissionState) -> Decision:
    _check_not_self_reporting(signer, "/subject", p.subject)
    _check_not_self_reporting(signer, "/caller", p.caller)
    _check_clock(p.observed_at, now, "/observed_at")
    existing = state.fact(signer, p.interaction)
    if existing is not None and existing.content_key != key:
        raise BureauError(Code.CONFLICTING_FACT, "/interaction",
                          "this reporter already reported a different fact for this interaction")
    probe = state.probe(signer, p.interaction)
    if probe is not None and probe.subject != p.subject:
        # the mirror of a probe naming another subject than the fact (UNWITNESSED there)
        raise BureauError(Code.CONFLICTING_FACT, "/subject",
                          "this reporter's probe of the interaction names another subject")
    return ADMIT


@rule(ProbePayload)
def _admit_probe(p: ProbePayload, signer: str, key: str, now: dt.datetime,
                 state: AdmissionState) -> Decision:
    _check_not_self_reporting(signer, "/subject", p.subject)
    _check_clock(p.observed_at, now, "/observed_at")
    fact = state.fact(signer, p.interaction)
    if fact is not None and fact.subject != p.subject:
        raise BureauError(Code.UNWITNESSED, "/subject",
                          "this reporter's fact for the interaction is about another subject")
    existing = state.probe(signer, p.interaction)
    if existing is not None and existing.content_key != key:
        raise BureauError(Code.CONFLICTING_FACT, "/interaction",
                          "this reporter already reported a different probe result here")
    return ADMIT


def _check_not_self_dealing(kind: Kind, verdict: str, evaluator: str, subject: str,
                            state: AdmissionState) -> None:
    """SPEC §5: a *favourable* verdict between linked parties is refused. An
    unfavourable one never is: it is against the linked evaluator's interest, and
    refusing it would let a subject escape evidence against it by claiming a link."""
    if not is_favourable(kind.name, verdict):
        return
    ev = state.agent(evaluator)
    sub = state.agent(subject)
    if evaluator == subject or (ev is not None and sub is not None and linked(ev, sub)):
        raise BureauError(Code.SELF_DEALING, "/subject",
                          "evaluator and subject share an operator or an anchor, and the "
                          "verdict is favourable")


#: the field of a verdict's payload that names the witnessed exchange it is on (the
#: reporter's interaction or engagement)
_EXCHANGE = {ATTESTATION.name: "interaction", VALUE_JUDGMENT.name: "engagement"}


def _check_one_verdict(kind: Kind, p: AttestationPayload | ValueJudgmentPayload,
                       evaluator: str, key: str, state: AdmissionState) -> None:
    """At most one verdict of ``kind`` by ``evaluator`` stands on an exchange: the first."""
    field = _EXCHANGE[kind.name]
    existing = state.verdict(kind.name, evaluator, p.reporter, getattr(p, field))
    if existing is not None and existing != key:
        raise BureauError(Code.DUPLICATE_VERDICT, f"/{field}",
                          "this evaluator already gave its verdict here; the first one stands")


# SPEC §5 r2: a refusal tells the signer nothing about evidence it was not party to.
# Whatever fails to match — no such fact, a fact about another subject, a fact with
# another caller — the answer is one and the same, so it cannot be used to learn whether
# someone else's fact exists or whom it is about. (A fresh error each time: an exception
# object carries its traceback.)


def _unwitnessed(path: str, what: str) -> BureauError:
    return BureauError(Code.UNWITNESSED, path, f"no fact from this reporter for this {what} "
                       "names the signer as its caller and this subject (yet): a verdict "
                       "needs one")


@rule(AttestationPayload)
def _admit_attestation(p: AttestationPayload, signer: str, key: str, now: dt.datetime,
                       state: AdmissionState) -> Decision:
    _check_not_self_reporting(signer, "/reporter", p.reporter)
    fact = state.fact(p.reporter, p.interaction)
    if fact is None or fact.subject != p.subject or fact.caller != signer:
        raise _unwitnessed("/interaction", "interaction")
    _check_not_self_dealing(ATTESTATION, p.outcome, signer, p.subject, state)
    _check_one_verdict(ATTESTATION, p, signer, key, state)
    return ADMIT


@rule(ValueJudgmentPayload)
def _admit_value_judgment(p: ValueJudgmentPayload, signer: str, key: str, now: dt.datetime,
                          state: AdmissionState) -> Decision:
    _check_not_self_reporting(signer, "/reporter", p.reporter)
    fact = state.engagement_fact(p.reporter, p.engagement)
    if fact is None or fact.subject != p.subject or fact.caller != signer:
        raise _unwitnessed("/engagement", "engagement")
    # From here on the signer is the engagement's buyer: telling it more is no leak.
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
    _check_not_self_dealing(VALUE_JUDGMENT, p.judgment, signer, p.subject, state)
    _check_one_verdict(VALUE_JUDGMENT, p, signer, key, state)
    return ADMIT


def _revealed_links(me: AgentRecord, state: AdmissionState) -> tuple[tuple[str, str], ...]:
    """Earlier favourable verdicts that an enrollment or amendment shows to be
    self-dealing. Unfavourable ones stay: an agent that amends its operator until it
    "matches" the one who rated it badly must not erase that rating (SPEC §5)."""
    out: list[tuple[str, str]] = []
    for v in state.verdicts_involving(me.key):
        if not v.favourable or state.is_excluded(v.entry_id):
            continue
        other_key = v.subject if v.evaluator == me.key else v.evaluator
        other = state.agent(other_key)
        if other is not None and linked(me, other):
            out.append((v.entry_id, SELF_DEALING))
    return tuple(out)


@rule(EnrollmentPayload)
def _admit_enrollment(p: EnrollmentPayload, signer: str, key: str, now: dt.datetime,
                      state: AdmissionState) -> Decision:
    return Decision(_revealed_links(enrolled_record(p, signer), state))


@rule(AmendmentPayload)
def _admit_amendment(p: AmendmentPayload, signer: str, key: str, now: dt.datetime,
                     state: AdmissionState) -> Decision:
    old = state.agent(signer)
    assert old is not None  # authorize() checked
    _check_issued_later(p.issued_at, old.amended_at, now, "amendment of this agent")
    return Decision(_revealed_links(amended_record(old, p), state))


@rule(DisputePayload)
def _admit_dispute(p: DisputePayload, signer: str, key: str, now: dt.datetime,
                   state: AdmissionState) -> Decision:
    target = state.entry(p.entry)
    if target is None:
        raise BureauError(Code.UNKNOWN_ENTRY, "/entry", "no entry with this id")
    if target.subject != signer:
        raise BureauError(Code.NOT_SUBJECT, "/entry", "that entry is not about the signer")
    return ADMIT


@rule(ResolutionPayload)
def _admit_resolution(p: ResolutionPayload, signer: str, key: str, now: dt.datetime,
                      state: AdmissionState) -> Decision:
    target = state.dispute_target(p.dispute)
    if target is None:
        raise BureauError(Code.UNKNOWN_ENTRY, "/dispute", "no dispute entry with this id")
    if state.is_resolved(p.dispute):
        raise BureauError(Code.ALREADY_RESOLVED, "/dispute", "this dispute is already resolved")
    if p.decision == "EXCLUDED" and not state.is_excluded(target):
        return Decision(((target, DISPUTED),))
    return ADMIT


def admit(payload: Payload, signer: str, key: str, now: dt.datetime,
          state: AdmissionState) -> Decision:
    """Stage 5: does the payload fit what the ledger already holds?"""
    check = _RULES.get(type(payload))
    return ADMIT if check is None else check(payload, signer, key, now, state)


def judge(envelope: Envelope, payload: Payload, now: dt.datetime,
          state: AdmissionState) -> Decision:
    """Stages 4 and 5 together: may the envelope's signer submit a payload of the kind its
    payloadType names, and does ``payload`` (its decoded payload) fit the ledger?"""
    authorize(SUBMITTED[envelope.name], envelope.keyid, state)
    return admit(payload, envelope.keyid, envelope.content_key, now, state)
