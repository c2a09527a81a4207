"""What scoring reads: plain, frozen values built by the storage layer from entries.

Scoring is a pure function of these (SPEC §1.4): no clock, no I/O, no randomness, and
no dependence on the order of the tuples (everything is re-ordered by ``seq``).

Only the fields scoring needs are here. Optional fields have defaults so that callers
(and tests) can build them by keyword; positional construction in the documented field
order works too.
"""

from __future__ import annotations

from dataclasses import dataclass

# Fact fields, SPEC §4.
PASS = "PASS"
FAIL = "FAIL"
CLAIM_SUCCESS = "SUCCESS"
CLAIM_FAILURE = "FAILURE"
CLAIM_DECLINED = "DECLINED"
TIME_AND_MATERIALS = "TIME_AND_MATERIALS"

# Why an entry counts nowhere; they match the report's ``excluded`` keys. An entry set
# aside for several reasons is counted once, in the order SELF_DEALING, DISPUTED,
# DISTRUSTED (SPEC §3): the first two come from ``exclusion`` entries, the last from a
# reporter's ``distrusted_from`` (bureau.scoring.distrust).
SELF_DEALING = "self_dealing"
DISPUTED = "disputed"
DISTRUSTED = "distrusted"
EXCLUSION_REASONS = (DISPUTED, DISTRUSTED, SELF_DEALING)
#: A reporter gets a ``reporters`` row of its own in a report from this many counted
#: interactions about the agent on (SPEC §8 r2, the same under every policy); the
#: others share the ``"reporter": null`` row.
REPORTER_ROW_MIN = 10


@dataclass(frozen=True, slots=True)
class Promise:
    promise: str
    kept: bool


@dataclass(frozen=True, slots=True)
class Engagement:
    id: str
    arrangement: str
    cap: int
    spent: int
    currency: str
    units: tuple[tuple[str, int], ...] = ()
    concluded: str | None = None


@dataclass(frozen=True, slots=True)
class Fact:
    """One admitted ``fact`` entry (SPEC §4): what a reporter measured."""

    seq: int
    entry_id: str
    reporter: str
    interaction: str
    subject: str
    caller: str | None = None
    answered: bool = True
    latency_ms: int | None = None
    well_formed: bool | None = None
    promises: tuple[Promise, ...] = ()
    claimed: str | None = None
    check: str | None = None
    derived: str | None = None
    engagement: Engagement | None = None
    epoch: int = 0  # the epoch the entry was recorded in
    observed_at: str = ""  # as the payload says (RFC 3339); read only under distrust


@dataclass(frozen=True, slots=True)
class Probe:
    """One admitted ``probe`` entry: a test interaction with a known answer."""

    seq: int
    entry_id: str
    reporter: str
    interaction: str
    subject: str
    probe: str
    passed: bool
    epoch: int = 0
    observed_at: str = ""


@dataclass(frozen=True, slots=True)
class Attestation:
    """One admitted ``attestation``: the caller's verdict on one interaction.

    ``evaluator`` is the signer's key id; ``reporter``/``interaction`` name the fact.
    """

    seq: int
    entry_id: str
    evaluator: str
    reporter: str
    interaction: str
    subject: str
    outcome: str
    corrections: int = 0


@dataclass(frozen=True, slots=True)
class ValueJudgment:
    """One admitted ``value-judgment``: the buyer's verdict on a T&M engagement."""

    seq: int
    entry_id: str
    evaluator: str
    reporter: str
    engagement: str
    subject: str
    judgment: str
    spent: int


@dataclass(frozen=True, slots=True)
class Exclusion:
    """An ``exclusion`` entry: ``target`` (an entry id) counts nowhere from then on."""

    target: str
    reason: str


@dataclass(frozen=True, slots=True)
class ReporterUpdate:
    """A ``reporter`` entry, as scoring reads it: only its distrust (SPEC §3).
    ``distrusted_from`` is the payload's timestamp, or None (trusted)."""

    seq: int
    reporter: str
    distrusted_from: str | None


#: An agent's links (SPEC §3 r3) as a report carries them: plain objects, in the order
#: the agent gave them.
LinkList = tuple[dict[str, str], ...]


@dataclass(frozen=True, slots=True)
class AgentName:
    """An enrollment (``enrolled``) or an amendment that renames or relinks the agent: no
    scoring rule reads it, but the report's ``name`` and ``links`` are the agent's latest.
    ``name`` and ``links`` are None in an amendment that leaves them as they are."""

    seq: int
    agent: str
    name: str | None
    enrolled: bool
    links: LinkList | None = None


#: One stored entry as the reports read it (see ``bureau.kinds``, "evidence").
Item = Fact | Probe | Attestation | ValueJudgment | Exclusion | AgentName | ReporterUpdate


@dataclass(frozen=True, slots=True)
class Evidence:
    """Everything scoring reads, for the whole ledger or for one agent."""

    facts: tuple[Fact, ...] = ()
    probes: tuple[Probe, ...] = ()
    attestations: tuple[Attestation, ...] = ()
    value_judgments: tuple[ValueJudgment, ...] = ()
    exclusions: tuple[Exclusion, ...] = ()
    #: every ``reporter`` entry up to the seal, whatever the evidence is about: the
    #: distrust in force is the ledger's, not an agent's
    reporter_updates: tuple[ReporterUpdate, ...] = ()


#: Evidence about one agent: the same shape, restricted to entries whose ``subject`` is
#: that agent and to the exclusions that target them (and every reporter update).
AgentEvidence = Evidence

EMPTY_EVIDENCE = Evidence()
