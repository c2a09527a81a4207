"""Pydantic models of what goes over the wire besides payloads: the DSSE envelope, the
one error shape, intake results, entries pages and the bureau's public documents.

The service does not parse envelopes with these (``bureau.intake.envelope`` does it by hand,
to give each failure its own code); they exist so that ``/openapi.json`` and
``schemas/*.json`` are generated from code, and so tests can hold responses to them.
Payload models live in :mod:`reporters.models`; these refer to them, never copy them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bureau.errors import Code
from reporters import wire
from reporters.models import PAYLOAD_MODELS, EntryId, KeyId

_B64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_TIMESTAMP = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$"
PAYLOAD_TYPES: tuple[str, ...] = tuple(wire.payload_type(name) for name in PAYLOAD_MODELS)


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Signature(Shape):
    keyid: KeyId = Field(description="the signer's key id")
    sig: str = Field(pattern=_B64, description="padded standard base64 of the 64-byte "
                     "Ed25519 signature over DSSE's PAE(payloadType, payload)")


class Envelope(Shape):
    """A DSSE v1 envelope (SPEC §3). The payload, once decoded, is canonical or not as
    the signer chose; it must validate against the schema its payloadType names."""

    payloadType: str = Field(json_schema_extra={"enum": list(PAYLOAD_TYPES)})
    payload: str = Field(pattern=_B64, description="padded standard base64 of the "
                         "payload bytes, at most 64 KiB decoded")
    signatures: list[Signature] = Field(min_length=1, max_length=1)


class Error(Shape):
    """The one error shape, on every route (SPEC §5)."""

    status: Literal["rejected"]
    code: Code
    path: str = Field(description='JSON Pointer to the cause; "" for the whole request')
    detail: str


class IntakeResult(Shape):
    """An envelope admitted now (`201 accepted`) or earlier (`200 duplicate`)."""

    status: Literal["accepted", "duplicate"]
    id: EntryId
    seq: int = Field(ge=1)


class BatchAccepted(IntakeResult):
    index: int = Field(ge=0, description="the envelope's line in the batch, from 0")


class BatchRejected(Error):
    index: int = Field(ge=0, description="the envelope's line in the batch, from 0")


class _EntryBase(Shape):
    seq: int = Field(ge=1)
    id: EntryId = Field(description='BLAKE3 of the canonical JSON of the entry without "id"')
    prev: EntryId = Field(description="the previous entry's id; 64 zeros for seq 1")
    kind: str = Field(description="payload name (seal-request for a seal), or what the "
                      "bureau wrote: exclusion, seal")
    recorded_at: str = Field(pattern=_TIMESTAMP)
    epoch: int = Field(ge=0)


class SubmittedEntry(_EntryBase):
    """An admitted envelope, exactly as submitted."""

    envelope: Envelope


class BureauEntry(_EntryBase):
    """An entry the bureau wrote itself (exclusion, seal)."""

    body: dict[str, Any]


class Refusal(Shape):
    """A correctly signed envelope from a known party that was refused (SPEC §5)."""

    ref: int = Field(ge=1, description="the refusal's cursor; not a ledger seq")
    content_key: str = Field(pattern="^[0-9a-f]{64}$", description=(
        "BLAKE3 of signer, payloadType and payload bytes: which envelope it was"))
    kind: str = Field(description="payload name of the refused envelope")
    code: Code
    path: str
    detail: str | None = Field(description=(
        "what the submitter was told; null when only the content key, code, path and "
        "time were kept (SPEC §5 r2)"))
    refused_at: str = Field(pattern=_TIMESTAMP)
    envelope: Envelope | None = Field(description=(
        "the envelope as submitted; null for a decode-stage refusal, and past 1,000 "
        "refusals of the signer in an epoch (SPEC §5 r2)"))


class EntriesPage(Shape):
    """One page of a party's file. Ask again with ``after=next_after`` (and
    ``refusals_after=next_refusals_after``) until both are null."""

    entries: list[SubmittedEntry | BureauEntry]
    next_after: int | None
    refusals: list[Refusal]
    next_refusals_after: int | None


class KeyPeriod(Shape):
    """One key of the bureau's history: in force from entry ``from_seq`` on, until the
    next one's (SPEC §3 r3)."""

    key: KeyId
    vkey: str = Field(description="its C2SP signed-note verifier key under the origin")
    from_seq: int = Field(ge=1, description="the first entry it is in force at")


class BureauInfo(Shape):
    """The bureau's public key in force, its policy's hash, its epoch length, the
    ledger's origin and note verifier key, the key history and the admins (SPEC §9)."""

    keys: list[KeyPeriod] = Field(min_length=1, description="the bureau's key history, "
                                  "oldest first; the genesis key from_seq 1")
    admins: list[KeyId] = Field(min_length=1, description="the admin set in force, sorted")
    key: KeyId
    policy: EntryId = Field(description="the current epoch's policy: BLAKE3 of the bytes "
                                        "GET /v1/policy serves")
    epoch_seconds: int = Field(ge=1)
    origin: str = Field(description="the ledger's origin: the first line of every "
                        "checkpoint note, and the key name of the bureau's signature")
    vkey: str = Field(description="C2SP signed-note verifier key of the bureau's key "
                      "under the origin: <origin>+<key hash>+<base64 key>")
    eth_address: str | None = Field(pattern="^0x[0-9a-fA-F]{40}$", description=(
        "the bureau's Ethereum address, EIP-55 checksummed: the clientAddress of its "
        "ERC-8004 feedback (pass it to getSummary); null when it gives none. The bureau "
        "holds no Ethereum key and sends nothing on chain"))


Hash = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class InclusionProof(Shape):
    """RFC 9162 inclusion proof of one entry (leaf ``seq - 1``) in the tree of
    ``tree_size`` entries (SPEC §9)."""

    leaf_index: int = Field(ge=0)
    tree_size: int = Field(ge=1)
    hashes: list[Hash] = Field(description="the audit path, bottom-up, lowercase hex")


class ConsistencyProof(Shape):
    """RFC 9162 consistency proof from the tree of ``from`` entries to the tree of
    ``to`` entries; empty when ``from`` is 0 or equals ``to`` (SPEC §9)."""

    from_: int = Field(alias="from", ge=0)
    to: int = Field(ge=0)
    hashes: list[Hash] = Field(description="the proof, lowercase hex")


class LedgerPoint(Shape):
    seq: int = Field(ge=0)
    head: EntryId


class EvaluatorRecord(Shape):
    """An agent's record as an evaluator as of one sealed epoch (SPEC §9): what its
    verdicts weigh, never what would tell it which of its calls were covert probes."""

    agent: KeyId
    epoch: int = Field(ge=0)
    ledger: LedgerPoint
    policy: EntryId = Field(description="the policy that scored the epoch")
    weight: float = Field(ge=0, description="w_e: what one of its verdicts weighs")
    provisional: bool = Field(description="fewer blind-graded verdicts than the policy's "
                                          "N_cal: its verdicts share a capped weight")
    constant_rater: bool = Field(description="its ratings carry no information: weight 0")
    verdicts_given: int = Field(ge=0, description="attestations and value judgments")
    verdicts_ignored: int = Field(ge=0, description="later verdicts refused as "
                                                    "DUPLICATE_VERDICT")


class Status(Shape):
    status: str


class AllocationRow(Shape):
    """One leaf of a settlement's tree: its canonical JSON is the leaf data (SPEC §8.2)."""

    evaluator: KeyId
    units: int = Field(ge=0, le=10**15)
    score: float = Field(ge=0, description="g · J, rounded to 6 decimals")


class SettlementRow(Shape):
    """An evaluator's own share of one epoch's pool, and the proof that its row is a
    leaf of the settlement whose ``root`` the signed document carries (SPEC §8.2, §9).
    ``row``, ``leaf_index``, ``tree_size`` and ``hashes`` are absent when it has no row
    (then ``units`` is 0)."""

    epoch: int = Field(ge=0)
    evaluator: KeyId
    units: int = Field(ge=0, le=10**15)
    row: AllocationRow | None = None
    leaf_index: int | None = Field(default=None, ge=0)
    tree_size: int | None = Field(default=None, ge=1)
    hashes: list[str] | None = Field(default=None, description="RFC 9162 inclusion proof, "
                                                               "bottom-up, lowercase hex")


class ProofBundle(Shape):
    """A report's proof bundle (SPEC §9.1 r4; docs/transparency.md, "Proof bundles and
    cards"): everything needed to check the report with no network."""

    format: Literal["bureau-proof-bundle/v1"]
    report: dict[str, Any] = Field(description="the bureau-signed report envelope")
    checkpoint: dict[str, Any] = Field(description="its epoch's signed checkpoint envelope")
    log: str = Field(description="a C2SP tlog-proof: the report's ledger.head as leaf "
                     "seq − 1 of a tree the bureau signed, with witness cosignatures")
    consistency: list[Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]] = Field(
        description="RFC 9162 consistency proof from the epoch's tree to the log proof's "
                    "(empty when they are one)")
    keys: list[KeyPeriod] = Field(description="the key history, as /v1/bureau lists it, up "
                                  "to the log proof's tree")


class Card(Shape):
    """A report's compact card, at most 4,000 bytes of canonical JSON."""

    format: Literal["bureau-card/v1"]
    statement: dict[str, Any] = Field(description="the bureau-signed card statement "
                                      "(application/vnd.bureau.card.v1+json): agent, epoch, "
                                      "ledger, policy, report (BLAKE3 of the report's "
                                      "payload), score")
    log: str = Field(description="the log proof, as in the bundle")
