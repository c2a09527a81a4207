"""A party's file as typed, frozen models: what ``GET /v1/agents/{a}/entries`` and
``GET /v1/reporters/{r}/entries`` answer (docs/reading.md, "Response shape").
``Agent.entries``/``Agent.pages`` and ``Reporter.entries``/``Reporter.pages`` return
:class:`FilePage` objects.

Every entry keeps what the bureau served (``raw``: the SPEC §9 shape, which is what
:func:`reporters.verify_chain` hashes) next to what it means: the DSSE envelope and its
signer, the payload decoded from base64 into its model (``FactPayload``,
``AttestationPayload``, …), or, for what the bureau wrote itself, its body as a model
(``GenesisBody``, ``ExclusionBody``, ``SealBody``). Refusals the same way.

Reading is tolerant where the bureau may be newer than this client: a payload or body
that does not fit the model this client knows (a kind added later, a field added
later) leaves ``payload``/``body`` ``None`` and its JSON in ``document``. Only an answer
that is not a file at all (a missing ``seq``, an entry that is not an object) is an
error, ``PROTOCOL``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import nacl.signing
import pydantic
from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from reporters import strictjson, wire
from reporters._internal.errors import BureauClientError
from reporters._internal.transport import Transport, file_page_cap
from reporters.models import PAYLOAD_MODELS, Payload


class _Read(BaseModel):
    """Base of the read models: frozen; fields the bureau adds later are ignored (they
    are still in ``raw``)."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class Signature(_Read):
    keyid: str
    sig: str


class Envelope(_Read):
    """A DSSE envelope exactly as submitted: ``payload`` is still base64."""

    payload_type: str = Field(alias="payloadType")
    payload: str
    signatures: tuple[Signature, ...]

    @property
    def name(self) -> str | None:
        """``fact`` for ``application/vnd.bureau.fact.v1+json``; ``None`` for a type
        outside the bureau's."""
        t = self.payload_type
        if t.startswith(wire.PAYLOAD_TYPE_PREFIX) and t.endswith(wire.PAYLOAD_TYPE_SUFFIX):
            return t[len(wire.PAYLOAD_TYPE_PREFIX):-len(wire.PAYLOAD_TYPE_SUFFIX)]
        return None

    @property
    def signer(self) -> str | None:
        """The key id of its one signature."""
        return self.signatures[0].keyid if len(self.signatures) == 1 else None


class GenesisBody(_Read):
    """Entry 1 of a ledger: the settings it was started with."""

    policy: str
    epoch_seconds: int
    origin: str
    #: the bureau's signing key and the admin set it started with (SPEC §3 r3)
    key: str = ""
    admins: tuple[str, ...] = ()


class ExclusionBody(_Read):
    """The bureau set an entry aside (``reason``: ``self_dealing``, ``disputed``, …)."""

    entry: str
    reason: str
    cause: str | None = None


class SealBody(_Read):
    """Epoch ``epoch`` was sealed at its last entry, ``seq``/``head``."""

    epoch: int
    seq: int
    head: str


M = TypeVar("M", bound="_Read")

#: kind of an entry the bureau wrote -> its body's model
BODY_MODELS: dict[str, type[_Read]] = {
    "genesis": GenesisBody, "exclusion": ExclusionBody, "seal": SealBody}


def _decoded(envelope: Envelope | None) -> tuple[Payload | None, Any]:
    """(the payload as its model, the payload's JSON) — each ``None`` when it is not one."""
    if envelope is None:
        return None, None
    try:
        document = strictjson.loads(wire.b64decode_canonical(envelope.payload))
    except (wire.WireError, strictjson.StrictJSONError):
        return None, None
    model = PAYLOAD_MODELS.get(envelope.name or "")
    if model is None or not isinstance(document, dict):
        return None, document
    try:
        return model.model_validate(document), document
    except pydantic.ValidationError:
        return None, document


def _parsed(model: type[M], raw: Any, what: str, **derived: Any) -> M:
    """``model`` from its served JSON object ``raw`` plus what was read out of it:
    the envelope, its signer and decoded payload, and ``raw`` itself. Served fields
    this client does not know are left in ``raw`` only. ``PROTOCOL`` when it is not one."""
    if not isinstance(raw, Mapping):
        raise BureauClientError("PROTOCOL", "", f"{what} is a JSON object")
    try:
        envelope = None if raw.get("envelope") is None else Envelope.model_validate(
            raw["envelope"])
        payload, document = _decoded(envelope)
        fields = {**raw, "envelope": envelope, "signer": envelope.signer if envelope else None,
                  "payload": payload, "document": document, "raw": dict(raw)}
        return model.model_validate({**fields, **derived})
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "".join(f"/{part}" for part in first["loc"])
        raise BureauClientError("PROTOCOL", where, f"not {what}: {first['msg']}") from None


class Entry(_Read):
    """One ledger entry of a file. ``payload`` (a submitted entry) or ``body`` (one the
    bureau wrote) says what it is; ``raw`` is the entry as served, for verification."""

    seq: int
    id: str
    prev: str
    #: the payload's name (``seal-request`` for an admitted seal request), or what the
    #: bureau wrote: ``genesis``, ``exclusion``, ``seal``
    kind: str
    recorded_at: str
    epoch: int
    envelope: Envelope | None = None
    #: the envelope's signer; ``None`` for what the bureau wrote
    signer: str | None = None
    payload: SerializeAsAny[Payload] | None = None
    body: SerializeAsAny[_Read] | None = None
    #: the decoded payload, or the body, as JSON (also when no model fits it)
    document: Any = None
    raw: dict[str, Any]

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> Entry:
        """An entry from its §9 JSON shape; ``PROTOCOL`` when it is not one."""
        if not isinstance(raw, Mapping) or raw.get("body") is None:
            return _parsed(cls, raw, "an entry", body=None)
        body, model = raw["body"], BODY_MODELS.get(str(raw.get("kind")))
        try:
            typed = model.model_validate(body) if model and isinstance(body, Mapping) else None
        except pydantic.ValidationError:
            typed = None
        return _parsed(cls, raw, "an entry", body=typed, document=body)


class Refusal(_Read):
    """An envelope of the party's that the bureau refused and kept (SPEC §5). Not a
    ledger entry: no seq, id or link. The bureau may keep only the envelope's content
    key, not the envelope (decode-stage refusals; past 1,000 refusals of one signer in
    an epoch): then ``envelope``, ``payload`` and ``detail`` are ``None``, and
    ``content_key`` (:func:`reporters.wire.content_key` of the envelope the party sent)
    says which envelope it was."""

    ref: int
    kind: str
    code: str
    path: str
    detail: str | None = None
    refused_at: str
    envelope: Envelope | None = None
    content_key: str | None = None
    signer: str | None = None
    payload: SerializeAsAny[Payload] | None = None
    document: Any = None
    raw: dict[str, Any]

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> Refusal:
        """A refusal from its JSON shape; ``PROTOCOL`` when it is not one."""
        return _parsed(cls, raw, "a refusal")


class FilePage(_Read):
    """One page of a party's file. Ask again with ``after=next_after`` and
    ``refusals_after=next_refusals_after`` until :attr:`complete`."""

    entries: tuple[Entry, ...]
    refusals: tuple[Refusal, ...]
    next_after: int | None
    next_refusals_after: int | None

    @property
    def complete(self) -> bool:
        """Nothing more to read for now (both cursors are ``None``)."""
        return self.next_after is None and self.next_refusals_after is None

    @property
    def raw_entries(self) -> list[dict[str, Any]]:
        """The entries as served: what :func:`reporters.verify_chain` checks."""
        return [e.raw for e in self.entries]

    @classmethod
    def from_raw(cls, raw: Any) -> FilePage:
        """A page from the bureau's JSON answer; ``PROTOCOL`` when it is not one."""
        if not isinstance(raw, Mapping) or not isinstance(raw.get("entries"), list) or \
                not isinstance(raw.get("refusals", []), list):
            raise BureauClientError("PROTOCOL", "", "a file page has entries and refusals")
        try:
            return cls(entries=tuple(Entry.from_raw(e) for e in raw["entries"]),
                       refusals=tuple(Refusal.from_raw(r) for r in raw.get("refusals", [])),
                       next_after=raw.get("next_after"),
                       next_refusals_after=raw.get("next_refusals_after"))
        except pydantic.ValidationError as exc:
            raise BureauClientError("PROTOCOL", "", f"not a file page: {exc}") from None


@dataclass(frozen=True)
class PartyFile:
    """A party's own file as the party reads it: RFC 9421-signed with its ``key``, at
    ``{party_path}/entries``."""

    transport: Transport
    key: nacl.signing.SigningKey
    party_path: str

    async def page(self, after: int, limit: int, refusals_after: int) -> FilePage:
        """One signed read of the file, as a :class:`FilePage`."""
        return FilePage.from_raw(await self.transport.signed_get_json(
            self.key, f"{self.party_path}/entries?after={int(after)}&limit={int(limit)}"
                      f"&refusals_after={int(refusals_after)}", cap=file_page_cap(int(limit))))

    async def pages(self, after: int, limit: int,
                    refusals_after: int) -> AsyncIterator[FilePage]:
        """Pages of the file until both cursors run out; a list that is finished keeps
        its last cursor (docs/reading.md, "Pagination")."""
        while True:
            page = await self.page(after, limit, refusals_after)
            yield page
            if page.complete:
                return
            if page.next_after is not None:
                after = page.next_after
            elif page.entries:
                after = page.entries[-1].seq
            if page.next_refusals_after is not None:
                refusals_after = page.next_refusals_after
            elif page.refusals:
                refusals_after = page.refusals[-1].ref
