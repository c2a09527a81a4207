"""The admission state: what the ledger already holds, as the rules see it (SPEC §5).

Plain frozen records, and :class:`AdmissionState`, the one narrow protocol through
which the pure rules (:mod:`bureau.intake.rules`) ask about them. The group commit's
:class:`bureau.intake.state.GroupState` implements it over PostgreSQL; tests pass dicts.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from reporters.models import AmendmentPayload, EnrollmentPayload, parse_timestamp


@dataclass(frozen=True, slots=True)
class ReporterRecord:
    key: str
    roles: frozenset[str]
    #: the ``issued_at`` of the registration in force (a new one must be later)
    issued_at: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class AgentRecord:
    key: str
    name: str
    operator: str
    anchor_kind: str
    anchor_value: str
    withdrawn: bool = False
    #: the ``issued_at`` of the amendment in force; None before the first amendment
    amended_at: dt.datetime | None = None


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
    #: favourable to its subject (SPEC §5): only such a verdict can be self-dealing
    favourable: bool


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
    def verdicts_involving(self, agent: str) -> Iterable[VerdictRecord]:
        """Every verdict the agent gave or was given that may be self-dealing: the
        favourable ones (others may be left out)."""
        ...
    def entry(self, entry_id: str) -> EntryRecord | None: ...
    def dispute_target(self, dispute_id: str) -> str | None: ...
    def is_resolved(self, dispute_id: str) -> bool: ...
    def is_excluded(self, entry_id: str) -> bool: ...
    def policy_issued_at(self) -> dt.datetime | None:
        """The ``issued_at`` of the ``policy`` entry in force; None when there is none."""
        ...
    def pool_issued_at(self) -> dt.datetime | None:
        """The ``issued_at`` of the ``pool`` entry in force; None when there is none."""
        ...
    def keys_issued_at(self) -> dt.datetime | None:
        """The ``issued_at`` of the ``keys`` entry in force; None when the genesis
        entry's key and admins still are."""
        ...
    def recording_epoch(self) -> int:
        """The epoch the entries of this group are recorded in."""
        ...


# --------------------------------------------------------------------------- agents


def enrolled_record(p: EnrollmentPayload, signer: str) -> AgentRecord:
    """The record an enrollment creates."""
    return AgentRecord(signer, p.name, p.operator, p.anchor.kind, p.anchor.value)


def amended_record(old: AgentRecord, p: AmendmentPayload) -> AgentRecord:
    """The record after an amendment: each field it names replaced."""
    return AgentRecord(
        old.key,
        p.name if p.name is not None else old.name,
        p.operator if p.operator is not None else old.operator,
        p.anchor.kind if p.anchor is not None else old.anchor_kind,
        p.anchor.value if p.anchor is not None else old.anchor_value,
        old.withdrawn,
        parse_timestamp(p.issued_at),
    )


def withdrawn_record(old: AgentRecord) -> AgentRecord:
    """The record after a withdrawal: the same agent, for good out of the running."""
    return AgentRecord(old.key, old.name, old.operator, old.anchor_kind, old.anchor_value,
                       True, old.amended_at)
