"""Agents and admins: parties that send one envelope at a time and want the answer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, NamedTuple

import aiohttp
import nacl.signing
from pydantic import BaseModel

from reporters._internal import payloads
from reporters._internal.backoff import Backoff
from reporters._internal.errors import BureauClientError, Rejected, Unavailable
from reporters._internal.transport import Transport
from reporters.files import FilePage, PartyFile
from reporters.identity_links import A2aLink, Erc8004Link, McpLink
from reporters.models import (
    AmendmentPayload,
    Anchor,
    AttestationOutcome,
    AttestationPayload,
    DisputePayload,
    EnrollmentPayload,
    KeysPayload,
    Payload,
    PolicyPayload,
    PoolPayload,
    PromiseDeclared,
    ReporterPayload,
    ResolutionPayload,
    SealPayload,
    Unit,
    ValueJudgmentPayload,
    WithdrawalPayload,
)
from reporters.wire import signing_key_id

log = logging.getLogger("reporters")

AnchorLike = str | Anchor | Mapping[str, str]
PromisesLike = Mapping[str, str] | Sequence[PromiseDeclared]
UnitsLike = Mapping[str, int] | Sequence[Unit]
#: links as :mod:`reporters.identity_links` builds them (plain objects) or as its models
LinksLike = Sequence[Mapping[str, str] | Erc8004Link | A2aLink | McpLink]


@dataclass(frozen=True)
class Receipt:
    """The bureau's acknowledgement of one envelope: durable once you hold it."""

    #: ``accepted`` (new entry) or ``duplicate`` (the bureau already had it)
    status: Literal["accepted", "duplicate"]
    #: the entry's id (64 hex digits)
    id: str
    #: the entry's position in the ledger
    seq: int


def _anchor(anchor: AnchorLike) -> Any:
    if isinstance(anchor, str):  # "ops@example.com" is an email, "example.com" a domain
        return {"kind": "email" if "@" in anchor else "domain", "value": anchor}
    return dict(anchor) if isinstance(anchor, Mapping) else anchor


def _promises(promises: PromisesLike) -> list[Any]:
    if isinstance(promises, Mapping):
        return [{"promise": p, "description": d} for p, d in promises.items()]
    return list(promises)


def _links(links: LinksLike) -> list[Any]:
    return [link.model_dump() if isinstance(link, BaseModel) else dict(link)
            for link in links]


def _units(units: UnitsLike) -> list[Any]:
    if isinstance(units, Mapping):
        return [{"unit": u, "quantity": q} for u, q in units.items()]
    return list(units)


class _Patience(NamedTuple):
    """How long the ``*_when_witnessed`` methods keep trying, and how they space their
    attempts (:meth:`Agent.attest_when_witnessed` says what each is)."""

    deadline: float
    wait_first: float
    first_delay: float
    max_delay: float


class _Party:
    """One key talking to one bureau, one envelope per request.

    ``Unavailable`` answers (``503``, connection failures, timeouts) are retried up to
    ``retries`` times with backoff, honouring ``Retry-After``; the same signed bytes are
    re-sent, so a retry can only ever be answered ``duplicate``, never make a second
    entry. Refusals raise :class:`Rejected` at once.
    """

    def __init__(self, key: nacl.signing.SigningKey, base_url: str, *, timeout: float = 30.0,
                 retries: int = 2, session: aiohttp.ClientSession | None = None) -> None:
        if retries < 0:
            raise ValueError("retries must not be negative")
        self._key = key
        self._transport = Transport(base_url, timeout=timeout, session=session)
        self._retries = retries

    @property
    def key_id(self) -> str:
        """This party's key id."""
        return signing_key_id(self._key)

    @property
    def base_url(self) -> str:
        """The bureau's base URL; assign to move to another address."""
        return self._transport.base_url

    @base_url.setter
    def base_url(self, value: str) -> None:
        self._transport.base_url = value

    async def close(self) -> None:
        """Close the HTTP session (unless it was passed in)."""
        await self._transport.close()

    async def __aenter__(self) -> _Party:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def submit(self, payload: Payload) -> Receipt:
        """Sign ``payload`` and send it to ``POST /v1/evidence``."""
        line = payloads.envelope_line(payloads.sign(self._key, payload))
        backoff = Backoff(base=0.2, cap=5.0)
        for attempt in range(self._retries + 1):
            try:
                doc = await self._transport.post_envelope(line)
            except Unavailable as exc:
                if attempt == self._retries:
                    raise
                await asyncio.sleep(backoff.next_delay(exc.retry_after))
                continue
            if doc["status"] == "rejected":  # pragma: no cover - refusals are 4xx
                raise Rejected(doc["code"], str(doc.get("path", "")),
                               str(doc.get("detail", "")), 422)
            return Receipt(doc["status"], doc["id"], doc["seq"])
        raise AssertionError("unreachable")  # pragma: no cover


class Agent(_Party):
    """An agent: its key is its identity (SPEC §2). It enrolls, evaluates the agents it
    called, disputes entries about itself, and reads its own file.

    Every sending method returns a :class:`Receipt` or raises :class:`Rejected` (the
    bureau's §6 ``code``, ``path``, ``detail`` and HTTP ``status``), :class:`Unavailable`,
    or — before anything is sent — ``BureauClientError`` ``SCHEMA`` for a payload that
    fails its schema.
    """

    async def __aenter__(self) -> Agent:
        return self

    async def enroll(self, name: str, anchor: AnchorLike, operator: str,
                     promises: PromisesLike = (), links: LinksLike = ()) -> Receipt:
        """Enroll this key. ``anchor`` is an email or a domain (a string with ``@`` is an
        email); ``promises`` maps promise id to its description; ``links`` are the
        agent's identities elsewhere (:mod:`reporters.identity_links` builds them)."""
        fields: dict[str, Any] = {"name": name, "anchor": _anchor(anchor),
                                  "operator": operator, "promises": _promises(promises)}
        if links:
            fields["links"] = _links(links)
        return await self.submit(payloads.build(EnrollmentPayload, fields))

    async def set_links(self, links: LinksLike) -> Receipt:
        """Replace the agent's links whole (``[]`` removes them): an amendment."""
        return await self.amend(links=links)

    async def amend(self, *, name: str | None = None, anchor: AnchorLike | None = None,
                    operator: str | None = None,
                    promises: PromisesLike | None = None,
                    links: LinksLike | None = None) -> Receipt:
        """Replace each field given; the others stay as they are. ``links`` replaces
        the links whole."""
        fields: dict[str, Any] = {}
        if links is not None:
            fields["links"] = _links(links)
        if name is not None:
            fields["name"] = name
        if anchor is not None:
            fields["anchor"] = _anchor(anchor)
        if operator is not None:
            fields["operator"] = operator
        if promises is not None:
            fields["promises"] = _promises(promises)
        fields["issued_at"] = payloads.issued_timestamp()
        return await self.submit(payloads.build(AmendmentPayload, fields))

    async def withdraw(self, reason: str) -> Receipt:
        """Withdraw from the bureau."""
        return await self.submit(payloads.build(WithdrawalPayload, {"reason": reason}))

    async def attest(self, reporter: str, interaction: str, subject: str,
                     outcome: AttestationOutcome, corrections: int = 0) -> Receipt:
        """This agent's verdict, as the caller, on ``subject``'s work in ``interaction``
        (which ``reporter`` witnessed). ``corrections`` ≥ 1 exactly with
        ``ACCEPTED_AFTER_CORRECTIONS``."""
        return await self.submit(payloads.build(AttestationPayload, {
            "reporter": reporter, "interaction": interaction, "subject": subject,
            "outcome": outcome, "corrections": corrections}))

    async def value_judgment(self, reporter: str, engagement: str, subject: str,
                             judgment: Literal["VALUE_OK", "VALUE_POOR"], spent: int,
                             currency: str, units: UnitsLike) -> Receipt:
        """This agent's judgment, as the buyer, of a time-and-materials engagement;
        ``spent`` (millionths of ``currency``) and ``units`` (unit -> quantity) must
        equal the reporter's latest fact."""
        return await self.submit(payloads.build(ValueJudgmentPayload, {
            "reporter": reporter, "engagement": engagement, "subject": subject,
            "judgment": judgment, "spent": spent, "currency": currency,
            "units": _units(units)}))

    async def attest_when_witnessed(
            self, reporter: str, interaction: str, subject: str, outcome: AttestationOutcome,
            corrections: int = 0, *, deadline: float = 120.0, wait_first: float = 0.0,
            first_delay: float = 2.0, max_delay: float = 16.0) -> Receipt:
        """:meth:`attest`, retried while the bureau answers ``UNWITNESSED`` — the fact is
        not in yet: a reporting proxy holds each fact for its settle window, ~35 s —
        until it is accepted or ``deadline`` seconds have passed.

        Waits ``wait_first`` seconds, then tries; after refusal *n* (from 0) it waits
        between ``d/2`` and ``d``, ``d = min(max_delay, first_delay·2ⁿ)``, and makes a last
        attempt at the deadline. With the defaults, a fact that lands 35 s after the call
        costs 5 to 7 attempts; ``wait_first=30`` (the proxy's window) makes it 1 to 3.
        ``Unavailable`` answers are retried the same way (nothing was written). Raises
        the last ``Rejected`` (``UNWITNESSED``) when the deadline passes, any other
        refusal at once, and ``SCHEMA`` before anything is sent.

        The bureau keeps a refused envelope as a refusal in this agent's file (SPEC §5).
        Every attempt re-sends the same signed bytes, and the bureau keeps one refusal
        per envelope and reason code, so a retried attestation leaves one
        ``UNWITNESSED`` refusal in the file, however many attempts it took.
        """
        payload = payloads.build(AttestationPayload, {
            "reporter": reporter, "interaction": interaction, "subject": subject,
            "outcome": outcome, "corrections": corrections})
        return await self._until_witnessed(payload, ("UNWITNESSED",), _Patience(
            deadline, wait_first, first_delay, max_delay))

    async def value_judgment_when_witnessed(
            self, reporter: str, engagement: str, subject: str,
            judgment: Literal["VALUE_OK", "VALUE_POOR"], spent: int, currency: str,
            units: UnitsLike, *, deadline: float = 120.0, wait_first: float = 0.0,
            first_delay: float = 2.0, max_delay: float = 16.0,
            retry_on: Collection[str] = ("UNWITNESSED",)) -> Receipt:
        """:meth:`value_judgment`, retried like :meth:`attest_when_witnessed` while the
        bureau answers a code in ``retry_on``. Add ``AMOUNT_MISMATCH`` to wait for the
        engagement's final fact when an earlier one (with a smaller ``spent``) may be in
        first."""
        payload = payloads.build(ValueJudgmentPayload, {
            "reporter": reporter, "engagement": engagement, "subject": subject,
            "judgment": judgment, "spent": spent, "currency": currency,
            "units": _units(units)})
        return await self._until_witnessed(payload, retry_on, _Patience(
            deadline, wait_first, first_delay, max_delay))

    async def _until_witnessed(self, payload: Payload, retry_on: Collection[str],
                               patience: _Patience) -> Receipt:
        deadline, wait_first, first_delay, max_delay = patience
        if not (deadline >= 0 and wait_first >= 0 and 0 < first_delay <= max_delay):
            raise ValueError("need deadline >= 0, wait_first >= 0, 0 < first_delay <= "
                             "max_delay")
        loop = asyncio.get_running_loop()
        give_up = loop.time() + deadline
        backoff = Backoff(first_delay, max_delay)
        await asyncio.sleep(min(wait_first, deadline))
        while True:
            try:
                return await self.submit(payload)
            except (Rejected, Unavailable) as exc:
                if isinstance(exc, Rejected) and exc.code not in retry_on:
                    raise
                last: BureauClientError = exc
            delay = min(backoff.next_delay(getattr(last, "retry_after", None)),
                        give_up - loop.time())
            if delay <= 0:
                raise last
            log.debug("%s: %s; trying again in %.1f s", payloads.payload_name(payload),
                      last.code, delay)
            await asyncio.sleep(delay)

    async def dispute(self, entry: str, reason: str) -> Receipt:
        """Dispute an entry about this agent (an admin resolves it)."""
        return await self.submit(payloads.build(DisputePayload,
                                                {"entry": entry, "reason": reason}))

    async def entries(self, after: int = 0, limit: int = 100,
                      refusals_after: int = 0) -> FilePage:
        """One page of this agent's file: the entries after seq ``after`` and the
        refusals after ref ``refusals_after``, decoded (an RFC 9421-signed
        ``GET /v1/agents/{key id}/entries``). Check the entries with
        :func:`reporters.verify_chain`; ``entry.raw`` is each one as served."""
        own = PartyFile(self._transport, self._key, f"/v1/agents/{self.key_id}")
        return await own.page(after, limit, refusals_after)

    def pages(self, after: int = 0, limit: int = 100,
              refusals_after: int = 0) -> AsyncIterator[FilePage]:
        """Every page of this agent's file from the cursors given, following
        ``next_after``/``next_refusals_after`` until the file is read to its end."""
        own = PartyFile(self._transport, self._key, f"/v1/agents/{self.key_id}")
        return own.pages(after, limit, refusals_after)

    async def explain(self, epoch: int | None = None) -> Any:
        """How this agent's score was made, interaction by interaction: the bureau's
        JSON answer to a signed ``GET /v1/agents/{key id}/explain[?epoch=E]``."""
        query = "" if epoch is None else f"?epoch={int(epoch)}"
        return await self._transport.signed_get_json(
            self._key, f"/v1/agents/{self.key_id}/explain{query}")


    async def settlement(self, epoch: int) -> Any:
        """This agent's own row of epoch ``epoch``'s settlement of the evaluators' pool,
        with its inclusion proof (a signed ``GET /v1/agents/{key id}/settlement?epoch=E``);
        check it with :func:`reporters.verify_share`."""
        return await self._transport.signed_get_json(
            self._key, f"/v1/agents/{self.key_id}/settlement?epoch={int(epoch)}")


class Admin(_Party):
    """An admin key (one of the ledger's admin set in force): registers reporters,
    resolves disputes, seals elapsed epochs, rotates the ledger's keys. Errors as for
    :class:`Agent`."""

    async def __aenter__(self) -> Admin:
        return self

    async def register_reporter(self, key_id: str, name: str, operator: str,
                                roles: Sequence[Literal["facts", "probes"]], *,
                                distrusted_from: str | None = None) -> Receipt:
        """Register the reporter whose key id is ``key_id``, or update it: the whole new
        state, which replaces the one in force (``issued_at`` is filled in, later than
        any this process issued before). ``distrusted_from`` (an RFC 3339 timestamp)
        declares its evidence untrustworthy from then on; None lifts that."""
        return await self.submit(payloads.build(ReporterPayload, {
            "reporter": key_id, "name": name, "operator": operator, "roles": list(roles),
            "issued_at": payloads.issued_timestamp(), "distrusted_from": distrusted_from}))

    async def set_policy(self, policy: str, from_epoch: int) -> Receipt:
        """Have the scoring policy whose hash is ``policy`` (one the bureau knows) score
        epoch ``from_epoch`` and later; ``from_epoch`` may not have begun."""
        return await self.submit(payloads.build(PolicyPayload, {
            "policy": policy, "from_epoch": from_epoch,
            "issued_at": payloads.issued_timestamp()}))

    async def set_pool(self, units: int, from_epoch: int) -> Receipt:
        """Make the evaluators' pool of epoch ``from_epoch`` and later ``units`` whole
        units (0 stops settling); ``from_epoch`` may not have begun (SPEC §3, §8.2)."""
        return await self.submit(payloads.build(PoolPayload, {
            "units": units, "from_epoch": from_epoch,
            "issued_at": payloads.issued_timestamp()}))

    async def set_keys(self, bureau: str, admins: Sequence[str]) -> Receipt:
        """Rotate who signs for the ledger (SPEC §3 r3): from the next entry on, the
        bureau signs with the key whose id is ``bureau`` and the admins are exactly
        ``admins`` (1 to 64 distinct key ids). Restart every node with the new key file
        afterwards: a node still holding the old one signs nothing."""
        return await self.submit(payloads.build(KeysPayload, {
            "bureau": bureau, "admins": sorted(admins),
            "issued_at": payloads.issued_timestamp()}))

    async def resolve(self, dispute: str, decision: Literal["UPHELD", "EXCLUDED"],
                      reason: str) -> Receipt:
        """Resolve the dispute entry ``dispute``: ``UPHELD`` lets the disputed entry
        stand; ``EXCLUDED`` has the bureau exclude it."""
        return await self.submit(payloads.build(ResolutionPayload, {
            "dispute": dispute, "decision": decision, "reason": reason}))

    async def seal(self, requested_at: str | None = None) -> Receipt:
        """Ask the bureau to seal every epoch that has elapsed by its clock."""
        return await self.submit(payloads.build(SealPayload, {
            "requested_at": requested_at or payloads.now_timestamp()}))

