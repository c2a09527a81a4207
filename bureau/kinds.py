"""Every kind of ledger entry, in one table (``KINDS``, at the end): who signs it, what
it is about, what admission needs loaded to judge it, which index it writes, how the
reports read it. docs/protocol.md describes the same kinds for people.

Adding a kind is: its payload model (``reporters/models.py``, ``PAYLOAD_MODELS``), one
:class:`Kind` below, and its admission rule (``bureau.intake.rules``, ``@rule``). The
machinery reads the table and nothing else: stage 4 authorizes by ``signer`` and
``role``, :class:`bureau.intake.state.GroupState` loads what ``needs`` asks for, the ledger
writes ``subject`` into the entry row and hands the entry to the ``index`` writer of
:mod:`bureau.intake.index`, and the report views decode stored entries with ``evidence``.

Lookups are dicts on the kind's name (``SUBMITTED``, ``BY_NAME``) or on the payload's
model (``BY_MODEL``): one hash lookup where the committer used to walk a chain of
``type(payload) is X`` tests. The per-kind functions take the payload as the base
:class:`~reporters.models.Payload` and ``cast`` it: the table hands each function only
payloads of its own model, and ``cast`` costs nothing where ``isinstance`` on a pydantic
model costs ~0.6 µs.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from bureau.records import AgentRecord, amended_record, enrolled_record, withdrawn_record
from bureau.scoring.inputs import (
    AgentName,
    Attestation,
    Engagement,
    Exclusion,
    Fact,
    Item,
    Probe,
    Promise,
    ReporterUpdate,
    ValueJudgment,
)
from reporters.models import (
    PAYLOAD_MODELS,
    AmendmentPayload,
    AttestationPayload,
    DisputePayload,
    EnrollmentPayload,
    FactPayload,
    Payload,
    ReporterPayload,
    ResolutionPayload,
    ValueJudgmentPayload,
)


class FileLink(enum.StrEnum):
    """How an entry comes to be in an agent's own file (SPEC §9: what
    ``GET /v1/agents/{agent}/entries`` returns, and what a report's evidence root is
    computed over). ``bureau.reads.files`` turns each link into SQL."""

    SIGNER = "signer"  # every entry the agent signed
    SUBJECT = "subject"  # every entry with the agent as subject
    CALLER = "caller"  # every fact with the agent as caller
    #: an exclusion of an entry the agent signed, is the subject of, or called
    TARGET = "target"
    DISPUTER = "disputer"  # the resolution of a dispute the agent raised


#: The links of most kinds: the entry's signer and its subject.
SIGNER_AND_SUBJECT = (FileLink.SIGNER, FileLink.SUBJECT)


class Signer(enum.StrEnum):
    """Who may sign an entry of a kind (SPEC §3): stage 4 checks exactly this."""

    ADMIN = "admin"  # a key of the admin set in force (genesis, then ``keys`` entries)
    REPORTER = "reporter"  # a registered reporter holding the kind's role
    AGENT = "agent"  # an enrolled agent that has not withdrawn
    ENROLLING = "enrolling agent"  # a key that has never enrolled
    BUREAU = "bureau"  # nobody: the bureau writes these entries itself


@dataclass
class StateKeys:
    """What one group commit must load before its submissions are judged: the keys
    each table of the admission state is asked about (see ``Kind.needs``)."""

    parties: set[str] = field(default_factory=set)  # reporters and agents, by key
    facts: set[tuple[str, str]] = field(default_factory=set)  # (reporter, interaction)
    probes: set[tuple[str, str]] = field(default_factory=set)  # (reporter, interaction)
    engagements: set[tuple[str, str]] = field(default_factory=set)  # (reporter, engagement)
    #: (kind, evaluator, reporter, ref): an evaluator's existing verdict
    verdicts: set[tuple[str, str, str, str]] = field(default_factory=set)
    involving: set[str] = field(default_factory=set)  # agents: every verdict about them
    entries: set[str] = field(default_factory=set)  # entry ids
    disputes: set[str] = field(default_factory=set)  # dispute entry ids
    #: the ledger's policy entries (a ``policy`` submission is judged against them)
    policies: bool = False
    #: the ledger's pool entries (a ``pool`` submission is judged against them)
    pools: bool = False
    #: the ledger's ``keys`` entry in force (a ``keys`` submission is judged against it)
    keys: bool = False


#: (payload, signer) -> the entry's ``subject`` column: the agent the entry is about
SubjectOf = Callable[[Payload, str], "str | None"]
#: (payload, signer, keys): add what judging the payload will ask about
NeedsOf = Callable[[Payload, str, StateKeys], None]
#: payload -> (reporter, ref, verdict): the fact or engagement a verdict is about, and
#: what it says (an attestation's outcome, a value judgment's judgment)
VerdictOf = Callable[[Payload], tuple[str, str, str]]
#: (payload, signer, the agent's record so far) -> its record afterwards
AgentOf = Callable[[Payload, str, "AgentRecord | None"], AgentRecord]
#: (seq, entry id, signer, decoded payload or bureau body, the entry's epoch) -> what
#: reports read, or None
EvidenceOf = Callable[[int, str, str, dict[str, Any], int], "Item | None"]


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of ledger entry. See the module docstring for the whole table."""

    #: the entry's ``kind`` (what ``entries.kind`` and the entry's JSON say)
    name: str
    #: the payload name in ``application/vnd.bureau.<payload>.v1+json``; None for the
    #: kinds the bureau writes itself (their entries carry a ``body``, not an envelope)
    payload: str | None
    signer: Signer
    #: the reporter role a ``Signer.REPORTER`` kind needs
    role: str | None = None
    subject: SubjectOf | None = None
    needs: NeedsOf | None = None
    #: the admission index table an admitted entry adds a row to (bureau.intake.index)
    index: str | None = None
    verdict: VerdictOf | None = None
    agent: AgentOf | None = None
    evidence: EvidenceOf | None = None
    #: through which links an entry of this kind is in agents' own files
    files: tuple[FileLink, ...] = SIGNER_AND_SUBJECT

    @property
    def model(self) -> type[Payload]:
        """The payload model submissions of this kind are validated with."""
        assert self.payload is not None, f"the bureau writes {self.name} entries itself"
        return PAYLOAD_MODELS[self.payload]


# --------------------------------------------------------------------------- subjects


def subject_of(kind: Kind, payload: Payload, signer: str) -> str | None:
    """The entry's ``subject`` column: the agent a submitted entry is about, if any."""
    return None if kind.subject is None else kind.subject(payload, signer)


class _StoredFields:
    """A stored payload's JSON, read by attribute as the ``subject`` functions read a
    payload model: so that ``bureau verify`` applies the very functions of this table to
    the bytes in the ledger, without validating them against today's models."""

    __slots__ = ("_doc",)

    def __init__(self, doc: dict[str, Any]) -> None:
        self._doc = doc

    def __getattr__(self, name: str) -> Any:
        try:
            return self._doc[name]
        except KeyError:
            raise AttributeError(name) from None


def subject_of_document(kind: Kind, doc: dict[str, Any], signer: str) -> str | None:
    """The ``subject`` column of a stored entry of a submitted ``kind``, from its
    decoded payload JSON: the same rule as :func:`subject_of`."""
    if kind.subject is None:
        return None
    return kind.subject(cast(Payload, _StoredFields(doc)), signer)


def _payload_subject(p: Payload, signer: str) -> str:
    # Every payload model with a subject names it ``subject`` (a test checks).
    return cast(FactPayload, p).subject


def _signer_subject(p: Payload, signer: str) -> str:
    return signer


# --------------------------------------------------------------------------- needs


def _reporter_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    keys.parties.add(cast(ReporterPayload, p).reporter)


def _own_interaction_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    """A fact or a probe: the signer's fact and probe of the same interaction."""
    interaction = cast(FactPayload, p).interaction
    keys.facts.add((signer, interaction))
    keys.probes.add((signer, interaction))


def _attestation_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    a = cast(AttestationPayload, p)
    keys.parties.add(a.subject)
    keys.facts.add((a.reporter, a.interaction))
    keys.verdicts.add((ATTESTATION.name, signer, a.reporter, a.interaction))


def _value_judgment_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    v = cast(ValueJudgmentPayload, p)
    keys.parties.add(v.subject)
    keys.engagements.add((v.reporter, v.engagement))
    keys.verdicts.add((VALUE_JUDGMENT.name, signer, v.reporter, v.engagement))


def _involving_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    """An enrollment or amendment may reveal earlier verdicts as self-dealing."""
    keys.involving.add(signer)


def _dispute_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    keys.entries.add(cast(DisputePayload, p).entry)


def _resolution_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    keys.disputes.add(cast(ResolutionPayload, p).dispute)


def _policy_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    keys.policies = True


def _pool_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    keys.pools = True


def _keys_needs(p: Payload, signer: str, keys: StateKeys) -> None:
    keys.keys = True


# --------------------------------------------------------------------------- verdicts


def _attestation_ref(p: Payload) -> tuple[str, str, str]:
    a = cast(AttestationPayload, p)
    return a.reporter, a.interaction, a.outcome


def _value_judgment_ref(p: Payload) -> tuple[str, str, str]:
    v = cast(ValueJudgmentPayload, p)
    return v.reporter, v.engagement, v.judgment


# --------------------------------------------------------------------------- agents


def _enrolled(p: Payload, signer: str, old: AgentRecord | None) -> AgentRecord:
    return enrolled_record(cast(EnrollmentPayload, p), signer)


def _amended(p: Payload, signer: str, old: AgentRecord | None) -> AgentRecord:
    assert old is not None  # stage 4 checked the signer is enrolled
    return amended_record(old, cast(AmendmentPayload, p))


def _withdrawn(p: Payload, signer: str, old: AgentRecord | None) -> AgentRecord:
    assert old is not None
    return withdrawn_record(old)


# --------------------------------------------------------------------------- evidence
#
# Stored payloads were validated when they were admitted, so they are decoded here from
# plain JSON without a schema. Keys are interned: a million-entry ledger repeats a few
# thousand of them.

_intern = sys.intern


def _opt_key(value: str | None) -> str | None:
    return None if value is None else _intern(value)


_PROMISES: dict[tuple[tuple[str, bool], ...], tuple[Promise, ...]] = {}


def _promises(listed: list[dict[str, Any]] | None) -> tuple[Promise, ...]:
    """Promise tallies repeat endlessly: one shared tuple per distinct tally."""
    if not listed:
        return ()
    key = tuple((x["promise"], x["kept"]) for x in listed)
    got = _PROMISES.get(key)
    if got is None:
        got = tuple(Promise(_intern(name), kept) for name, kept in key)
        if len(_PROMISES) < 4096:
            _PROMISES[key] = got
    return got


def _fact_evidence(seq: int, entry_id: str, signer: str, p: dict[str, Any],
                   epoch: int) -> Fact:
    eng = p.get("engagement")
    engagement = None if eng is None else Engagement(
        id=eng["id"], arrangement=eng["arrangement"], cap=eng["cap"], spent=eng["spent"],
        currency=eng["currency"],
        units=tuple((u["unit"], u["quantity"]) for u in eng.get("units", ())),
        concluded=eng.get("concluded"))
    return Fact(
        seq=seq, entry_id=entry_id, reporter=_intern(signer),
        interaction=_intern(p["interaction"]), subject=_intern(p["subject"]),
        caller=_opt_key(p.get("caller")), answered=p["answered"],
        latency_ms=p.get("latency_ms"), well_formed=p.get("well_formed"),
        promises=_promises(p.get("promises")), claimed=p.get("claimed"),
        check=p.get("check"), derived=p.get("derived"), engagement=engagement,
        epoch=epoch, observed_at=p["observed_at"])


def _probe_evidence(seq: int, entry_id: str, signer: str, p: dict[str, Any],
                    epoch: int) -> Probe:
    return Probe(seq, entry_id, _intern(signer), _intern(p["interaction"]),
                 _intern(p["subject"]), p["probe"], p["passed"], epoch, p["observed_at"])


def _attestation_evidence(seq: int, entry_id: str, signer: str,
                          p: dict[str, Any], epoch: int) -> Attestation:
    return Attestation(seq, entry_id, _intern(signer), _intern(p["reporter"]),
                       _intern(p["interaction"]), _intern(p["subject"]), p["outcome"],
                       p["corrections"])


def _value_judgment_evidence(seq: int, entry_id: str, signer: str,
                             p: dict[str, Any], epoch: int) -> ValueJudgment:
    return ValueJudgment(seq, entry_id, _intern(signer), _intern(p["reporter"]),
                         p["engagement"], _intern(p["subject"]), p["judgment"], p["spent"])


def _enrollment_evidence(seq: int, entry_id: str, signer: str,
                         p: dict[str, Any], epoch: int) -> AgentName:
    return AgentName(seq, _intern(signer), p["name"], True, _links(p.get("links", [])))


def _amendment_evidence(seq: int, entry_id: str, signer: str,
                        p: dict[str, Any], epoch: int) -> AgentName | None:
    if "name" not in p and "links" not in p:
        return None
    links = p.get("links")
    return AgentName(seq, _intern(signer), p.get("name"), False,
                     None if links is None else _links(links))


def _links(links: list[dict[str, str]]) -> tuple[dict[str, str], ...]:
    """The links as the report carries them: the payload's objects, in its order (the
    payload was validated at intake: each is one of the three forms, exactly)."""
    return tuple(dict(link) for link in links)


def _exclusion_evidence(seq: int, entry_id: str, signer: str,
                        body: dict[str, Any], epoch: int) -> Exclusion:
    return Exclusion(target=body["entry"], reason=body["reason"])


def _reporter_evidence(seq: int, entry_id: str, signer: str,
                       p: dict[str, Any], epoch: int) -> ReporterUpdate:
    """Reports read a registration for its distrust only (SPEC §3)."""
    return ReporterUpdate(seq, _intern(p["reporter"]), p.get("distrusted_from"))


# --------------------------------------------------------------------------- the table

REPORTER = Kind("reporter", "reporter", Signer.ADMIN, needs=_reporter_needs,
                index="reporters", evidence=_reporter_evidence)
FACT = Kind("fact", "fact", Signer.REPORTER, role="facts", subject=_payload_subject,
            needs=_own_interaction_needs, index="facts", evidence=_fact_evidence,
            files=(*SIGNER_AND_SUBJECT, FileLink.CALLER))
PROBE = Kind("probe", "probe", Signer.REPORTER, role="probes", subject=_payload_subject,
             needs=_own_interaction_needs, index="probes", evidence=_probe_evidence)
ENROLLMENT = Kind("enrollment", "enrollment", Signer.ENROLLING, subject=_signer_subject,
                  needs=_involving_needs, index="agents", agent=_enrolled,
                  evidence=_enrollment_evidence)
AMENDMENT = Kind("amendment", "amendment", Signer.AGENT, subject=_signer_subject,
                 needs=_involving_needs, index="agents", agent=_amended,
                 evidence=_amendment_evidence)
WITHDRAWAL = Kind("withdrawal", "withdrawal", Signer.AGENT, subject=_signer_subject,
                  index="agents", agent=_withdrawn)
ATTESTATION = Kind("attestation", "attestation", Signer.AGENT, subject=_payload_subject,
                   needs=_attestation_needs, index="verdicts", verdict=_attestation_ref,
                   evidence=_attestation_evidence)
VALUE_JUDGMENT = Kind("value-judgment", "value-judgment", Signer.AGENT,
                      subject=_payload_subject, needs=_value_judgment_needs,
                      index="verdicts", verdict=_value_judgment_ref,
                      evidence=_value_judgment_evidence)
DISPUTE = Kind("dispute", "dispute", Signer.AGENT, subject=_signer_subject,
               needs=_dispute_needs, index="disputes")
RESOLUTION = Kind("resolution", "resolution", Signer.ADMIN, needs=_resolution_needs,
                  index="resolutions", files=(FileLink.SIGNER, FileLink.DISPUTER))
#: An admin's request to seal now; the entry is named apart from the bureau's own seals.
SEAL_REQUEST = Kind("seal-request", "seal", Signer.ADMIN)
#: Written by the bureau: ``{"entry", "reason", "cause"}``; its subject is the subject of
#: the entry it excludes (bureau.intake.committer writes its index row).
EXCLUSION = Kind("exclusion", None, Signer.BUREAU, index="exclusions",
                 evidence=_exclusion_evidence, files=(FileLink.TARGET,))
#: Written by the bureau: ``{"epoch", "seq", "head"}`` (bureau.views.seal writes its row).
SEAL = Kind("seal", None, Signer.BUREAU, index="seals", files=())
#: An admin's choice of the scoring policy from an epoch on (SPEC §3, §7.1).
POLICY = Kind("policy", "policy", Signer.ADMIN, needs=_policy_needs, index="policies")
#: An admin's evaluators' pool from an epoch on (SPEC §3, §8.2).
POOL = Kind("pool", "pool", Signer.ADMIN, needs=_pool_needs, index="pools")
#: An admin's rotation of the bureau's signing key and of the admin set, from the next
#: entry on (SPEC §3 r3; bureau.ledger_keys).
KEYS = Kind("keys", "keys", Signer.ADMIN, needs=_keys_needs, index="ledger_keys")
#: Written by the bureau as entry 1: ``{"policy", "epoch_seconds", "origin", "key",
#: "admins"}``, the settings the ledger was created with (bureau.intake.genesis).
GENESIS = Kind("genesis", None, Signer.BUREAU, files=())

KINDS: tuple[Kind, ...] = (REPORTER, FACT, PROBE, ENROLLMENT, AMENDMENT, WITHDRAWAL,
                           ATTESTATION, VALUE_JUDGMENT, DISPUTE, RESOLUTION, SEAL_REQUEST,
                           POLICY, POOL, KEYS, EXCLUSION, SEAL, GENESIS)
#: entry kind -> Kind
BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
#: payload name (what an envelope's payloadType names) -> Kind
SUBMITTED: dict[str, Kind] = {k.payload: k for k in KINDS if k.payload is not None}
#: payload model -> Kind
BY_MODEL: dict[type[Payload], Kind] = {k.model: k for k in SUBMITTED.values()}
#: the entry kinds the report views read
EVIDENCE_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS if k.evidence is not None)


@dataclass(frozen=True, slots=True)
class EntryParties:
    """The parties of one entry that may put it in agents' own files: its ``signer``,
    its ``subject``, a fact's ``caller``, for an exclusion the signer, subject and
    caller of its ``target``, for a resolution the ``disputer``."""

    signer: str | None
    subject: str | None
    caller: str | None = None
    target: tuple[str | None, ...] = ()
    disputer: str | None = None


def in_files_of(kind: Kind, parties: EntryParties) -> set[str]:
    """The agents whose own file holds an entry of ``kind`` with these ``parties``, as
    far as the kind's links say. The one definition of a file in Python terms;
    ``bureau.reads.files`` is the same in SQL (a test holds the two equal)."""
    by_link = {FileLink.SIGNER: (parties.signer,), FileLink.SUBJECT: (parties.subject,),
               FileLink.CALLER: (parties.caller,), FileLink.TARGET: parties.target,
               FileLink.DISPUTER: (parties.disputer,)}
    return {agent for link in kind.files for agent in by_link[link] if agent is not None}
