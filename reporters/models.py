"""Pydantic models of every payload the bureau accepts (SPEC §3–§4).

These models are the schema: the service validates submissions with them, the client
library builds payloads with them, and ``schemas/*.json`` and ``/openapi.json`` are
generated from them. They are strict: unknown fields, floats for integers, strings for
booleans are all refused.

:func:`validate_payload` is the one way either side checks a decoded payload: first the
rule no model can express for keys it does not know — no string anywhere, value or
object key, holds a control character (SPEC §3 r2) — then the model. Its failures name
the field as a JSON Pointer escaped by :func:`json_pointer`, so the bureau and the
client library give the same ``path`` for the same mistake.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from typing import Annotated, Any, Literal, TypeVar

import pydantic
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

# Anchors and paths are rooms of their own; they were defined here first and are
# re-exported (``__all__`` below), so ``from reporters.models import ...`` still finds them.
from reporters.anchors import MAX_DOMAIN, MAX_EMAIL, check_anchor, domain_to_ascii
from reporters.pointers import (
    CONTROL_CHARACTERS,
    MAX_POINTER_SEGMENT,
    control_character_at,
    document_path,
    json_pointer,
    pointer_segment,
)

_IDENT = r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$"
_KEY_ID = r"^ed25519:[A-Za-z0-9_-]{43}$"
_HEX64 = r"^[0-9a-f]{64}$"
_TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


def _valid_timestamp(text: str) -> str:
    if not _TIMESTAMP_RE.fullmatch(text):
        raise ValueError("an RFC 3339 UTC timestamp ending in Z, e.g. 2026-11-29T23:00:00Z")
    parse_timestamp(text)  # raises for 2026-02-30
    return text


def _no_controls(text: str) -> str:
    # Control characters (NUL among them) have no place in names and reasons, and
    # PostgreSQL text cannot hold NUL at all.
    if CONTROL_CHARACTERS.search(text):
        raise ValueError("control characters (U+0000-U+001F, U+007F-U+009F) are not allowed")
    return text


@functools.lru_cache(maxsize=4096)
def parse_timestamp(text: str) -> dt.datetime:
    """The instant an RFC 3339 ``...Z`` timestamp names, timezone-aware UTC.

    Cached: a gateway's facts of one second (or millisecond) share their timestamp, and
    intake parses each twice (the schema, then the clock check under the ledger lock)."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


Identifier = Annotated[str, Field(pattern=_IDENT)]
KeyId = Annotated[str, Field(pattern=_KEY_ID)]
EntryId = Annotated[str, Field(pattern=_HEX64)]
#: a BLAKE3 digest in lowercase hex, e.g. a policy document's hash
Digest = Annotated[str, Field(pattern=_HEX64)]
FreeText = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_no_controls)]
Timestamp = Annotated[str, AfterValidator(_valid_timestamp)]
Amount = Annotated[int, Field(ge=0, le=2**53 - 1)]  # I-JSON safe integers
Count = Annotated[int, Field(ge=0, le=2**31 - 1)]
Currency = Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9]{2,11}$")]


class FieldRuleError(ValueError):
    """A rule across fields of one payload, broken: ``field`` names the field the rule
    is about, so the refusal's ``path`` points at it (SPEC §6) rather than at the
    payload as a whole. docs/protocol.md lists every such rule."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Payload(BaseModel):
    """Base of every payload: strict, frozen, no unknown fields."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Unit(Payload):
    unit: Identifier
    quantity: Count


Role = Literal["facts", "probes"]


class ReporterPayload(Payload):
    """Signed by an admin: registers or updates a reporter. The update with the latest
    ``issued_at`` is in force; ``distrusted_from`` (null: trusted) declares the
    reporter's evidence untrustworthy from that instant on (SPEC §3)."""

    reporter: KeyId
    name: FreeText
    operator: FreeText
    roles: list[Role] = Field(min_length=1, max_length=2)
    issued_at: Timestamp
    distrusted_from: Timestamp | None = None

    @model_validator(mode="after")
    def _distinct_roles(self) -> ReporterPayload:
        if len(set(self.roles)) != len(self.roles):
            raise FieldRuleError("roles", "roles must not repeat")
        return self


class PromiseKept(Payload):
    promise: Identifier
    kept: bool


class Engagement(Payload):
    id: Identifier
    arrangement: Literal["TIME_AND_MATERIALS", "FIXED_SCOPE"]
    cap: Amount
    spent: Amount
    currency: Currency
    units: list[Unit] = Field(max_length=64)
    concluded: Literal["COMPLETED", "CAP_REACHED", "TERMINATED"] | None = None


class FactPayload(Payload):
    """What a reporter saw of one interaction it carried."""

    interaction: Identifier
    subject: KeyId
    caller: KeyId | None = None
    observed_at: Timestamp
    answered: bool
    latency_ms: Annotated[int, Field(ge=0, le=86_400_000)] | None = None
    well_formed: bool | None = None
    promises: list[PromiseKept] = Field(default_factory=list, max_length=64)
    claimed: Literal["SUCCESS", "FAILURE", "DECLINED"] | None = None
    check: Literal["PASS", "FAIL"] | None = None
    derived: Literal["RETRY_ACCEPTED", "SWITCHED_AGENT", "ABANDONED"] | None = None
    engagement: Engagement | None = None


class ProbePayload(Payload):
    """A test interaction with a known answer, and whether the subject passed it."""

    interaction: Identifier
    subject: KeyId
    probe: Identifier
    passed: bool
    observed_at: Timestamp


class Anchor(Payload):
    """Where the agent can be reached outside the bureau. An e-mail: local@domain, at
    most 254 characters, the local part printable ASCII without spaces or "@". A domain:
    letters, digits and hyphens in dot-separated labels, or an internationalised name
    that IDNA (UTS 46) maps to such a name; at most 253 characters and one optional
    trailing dot. (The domain part of an e-mail follows the domain rule.)"""

    kind: Literal["email", "domain"]
    value: Annotated[str, Field(min_length=1, max_length=MAX_EMAIL), AfterValidator(_no_controls)]

    @field_validator("value")
    @classmethod
    def _form(cls, value: str, info: ValidationInfo) -> str:
        kind = info.data.get("kind")  # absent when ``kind`` itself was refused
        if kind is not None:
            check_anchor(kind, value)
        return value


from reporters.identity_links import ItemRuleError, Links  # noqa: E402 - after Payload


class PromiseDeclared(Payload):
    promise: Identifier
    description: FreeText


class EnrollmentPayload(Payload):
    """Signed by the agent's own key: the agent enrolls."""

    name: FreeText
    anchor: Anchor
    operator: FreeText
    promises: list[PromiseDeclared] = Field(max_length=64)
    links: Links = Field(default_factory=list)


class AmendmentPayload(Payload):
    """Signed by an enrolled agent: replaces each field it names. An agent's amendments
    are ordered by ``issued_at``: a new one must be later than the one in force."""

    issued_at: Timestamp
    name: FreeText | None = None
    anchor: Anchor | None = None
    operator: FreeText | None = None
    promises: list[PromiseDeclared] | None = Field(default=None, max_length=64)
    #: replaces the links whole; ``[]`` removes them all
    links: Links | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> AmendmentPayload:
        changed = self.model_fields_set - {"issued_at"}
        if not changed:
            raise ValueError("an amendment names at least one field")
        for field in changed:
            if getattr(self, field) is None:
                raise FieldRuleError(field, f"{field} may be left out but not null")
        return self


class WithdrawalPayload(Payload):
    reason: FreeText


AttestationOutcome = Literal[
    "ACCEPTED", "ACCEPTED_AFTER_CORRECTIONS", "FAILED_ADMITTED", "FAILED_DISCOVERED", "DECLINED"
]


class AttestationPayload(Payload):
    """Signed by the caller of an interaction: its verdict on the subject's work."""

    reporter: KeyId
    interaction: Identifier
    subject: KeyId
    outcome: AttestationOutcome
    corrections: Count

    @model_validator(mode="after")
    def _corrections_match(self) -> AttestationPayload:
        if (self.outcome == "ACCEPTED_AFTER_CORRECTIONS") != (self.corrections >= 1):
            raise FieldRuleError(
                "corrections",
                "corrections >= 1 exactly when the outcome is ACCEPTED_AFTER_CORRECTIONS")
        return self


class ValueJudgmentPayload(Payload):
    """Signed by the buyer of a time-and-materials engagement."""

    reporter: KeyId
    engagement: Identifier
    subject: KeyId
    judgment: Literal["VALUE_OK", "VALUE_POOR"]
    spent: Amount
    currency: Currency
    units: list[Unit] = Field(max_length=64)


class DisputePayload(Payload):
    entry: EntryId
    reason: FreeText


class ResolutionPayload(Payload):
    dispute: EntryId
    decision: Literal["UPHELD", "EXCLUDED"]
    reason: FreeText


class SealPayload(Payload):
    requested_at: Timestamp


class PolicyPayload(Payload):
    """Signed by an admin: the scoring policy (by the BLAKE3 hash of its document, one
    the bureau knows) that scores epoch ``from_epoch`` and every later one (SPEC §3, §7.1)."""

    policy: Digest
    from_epoch: Annotated[int, Field(ge=0, le=2**53 - 1)]
    issued_at: Timestamp


class PoolPayload(Payload):
    """Signed by an admin: the evaluators' pool, in whole units, of epoch ``from_epoch``
    and every later one (SPEC §3, §8.2); 0 means no settlement."""

    units: Annotated[int, Field(ge=0, le=10**15)]
    from_epoch: Annotated[int, Field(ge=0, le=2**53 - 1)]
    issued_at: Timestamp


#: at most this many admins (SPEC §3 ``keys``)
MAX_ADMINS = 64


class KeysPayload(Payload):
    """Signed by an admin: from the next entry on, the bureau signs with ``bureau`` and
    the admins are exactly ``admins`` (SPEC §3 r3). Ordered by ``issued_at`` like
    ``policy``."""

    bureau: KeyId
    admins: list[str]
    issued_at: Timestamp

    @field_validator("admins")
    @classmethod
    def _admin_set(cls, admins: list[str]) -> list[str]:
        """SPEC §3: 1-64 distinct key ids, else ``SCHEMA`` at ``/admins`` (the set as a
        whole is what is wrong)."""
        if not 1 <= len(admins) <= MAX_ADMINS or len(set(admins)) != len(admins) \
                or not all(re.fullmatch(_KEY_ID, k) for k in admins):
            raise ValueError(f"the admins are 1 to {MAX_ADMINS} distinct key ids")
        return admins


#: payload name (as in ``application/vnd.bureau.<name>.v1+json``) -> model
PAYLOAD_MODELS: dict[str, type[Payload]] = {
    "reporter": ReporterPayload,
    "fact": FactPayload,
    "probe": ProbePayload,
    "enrollment": EnrollmentPayload,
    "amendment": AmendmentPayload,
    "withdrawal": WithdrawalPayload,
    "attestation": AttestationPayload,
    "value-judgment": ValueJudgmentPayload,
    "dispute": DisputePayload,
    "resolution": ResolutionPayload,
    "seal": SealPayload,
    "policy": PolicyPayload,
    "pool": PoolPayload,
    "keys": KeysPayload,
}


# --------------------------------------------------------------------------- validation


class PayloadInvalid(ValueError):
    """A decoded payload that breaks its schema: ``SCHEMA`` at ``path`` (a JSON Pointer
    escaped by :func:`json_pointer`), ``detail`` saying why."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{detail} at {path!r}")
        self.path = path
        self.detail = detail


P = TypeVar("P", bound=Payload)


def validate_payload(model: type[P], doc: dict[str, Any], *,
                     maybe_controls: bool = True) -> P:
    """``doc`` as ``model``, or :class:`PayloadInvalid` naming the first field that is
    wrong. ``maybe_controls=False`` skips the control-character walk: only for a caller
    that knows from the raw bytes that no string can hold one (see
    ``bureau.intake.envelope``)."""
    if maybe_controls:
        where = control_character_at(doc)
        if where is not None:
            raise PayloadInvalid(json_pointer(*where), "control characters (U+0000-U+001F, "
                                 "U+007F-U+009F) are not allowed in a payload's strings "
                                 "or keys")
    try:
        return model.model_validate(doc)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        path = document_path(doc, tuple(first["loc"]), first["type"] == "missing")
        broken = first.get("ctx", {}).get("error")
        if isinstance(broken, FieldRuleError | ItemRuleError):  # the field the rule is about
            path = (*path, *broken.field.split("/"))
        raise PayloadInvalid(json_pointer(*path), first["msg"]) from None


__all__ = [
    "CONTROL_CHARACTERS", "MAX_ADMINS", "MAX_DOMAIN", "MAX_EMAIL", "MAX_POINTER_SEGMENT",
    "PAYLOAD_MODELS", "AmendmentPayload", "Amount", "Anchor", "AttestationOutcome",
    "AttestationPayload", "Count", "Currency", "Digest", "DisputePayload", "Engagement",
    "EnrollmentPayload", "EntryId", "FactPayload", "FieldRuleError", "FreeText",
    "Identifier", "ItemRuleError", "KeyId", "KeysPayload", "Links", "Payload",
    "PayloadInvalid", "PolicyPayload", "PoolPayload", "ProbePayload", "PromiseDeclared",
    "PromiseKept", "ReporterPayload", "ResolutionPayload", "Role", "SealPayload",
    "Timestamp", "Unit", "ValueJudgmentPayload", "WithdrawalPayload", "check_anchor",
    "control_character_at", "domain_to_ascii", "json_pointer", "parse_timestamp",
    "pointer_segment", "validate_payload",
]
