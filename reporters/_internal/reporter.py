"""The :class:`Reporter`: a gateway's streaming, durable, exactly-once sender of facts
and probe results."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal

import nacl.signing

from reporters._internal import payloads
from reporters._internal.backoff import Backoff
from reporters._internal.errors import BureauClientError, Rejected, Unavailable
from reporters._internal.outcomes import Delivery, Rejection, Retry, exc_result
from reporters._internal.spool import Spool
from reporters._internal.transport import Transport
from reporters.files import FilePage, PartyFile
from reporters.models import Engagement, FactPayload, ProbePayload, PromiseKept
from reporters.wire import signing_key_id

log = logging.getLogger("reporters")

#: Lines per ``POST /v1/evidence/batch`` (the bureau takes up to 1,000).
MAX_BATCH_LINES = 500
#: Bytes per batch body: comfortably under the bureau's 8 MiB.
MAX_BATCH_BYTES = 7 * 1024 * 1024


class Reporter:
    """A reporter (a gateway that carries interactions) sending facts and probes.

    ``send`` puts the *signed* envelope into a durable spool in ``spool_dir`` and
    returns once it is on disk; a background task sends the spool to the bureau in
    batches and deletes each envelope only when the bureau has answered for it
    (accepted, duplicate or rejected). Anything left over — the bureau was down, the
    process was closed or crashed — is sent by the next ``Reporter`` opened on the same
    directory. The bureau recognises duplicates by content, so re-sending an envelope
    whose answer was lost never creates a second entry.

    Retries: connection errors, timeouts, ``503`` and other ``5xx`` answers are retried
    forever with exponential backoff and jitter (``backoff_base`` doubling up to
    ``max_backoff`` seconds), never sooner than the bureau's ``Retry-After``. A rejected
    envelope is final: it is appended to :attr:`rejections` and passed to
    ``on_rejection`` (a plain function; it runs on the event loop and must not block),
    and never sent again. Rejections are reported at least once: a crash between the
    bureau's answer and the spool's delete re-sends the envelope and reports it again.

    Backpressure: at most ``max_spooled`` envelopes wait in the spool; ``send`` waits
    for room beyond that.

    Holding: a caller that must wait before it can sign a fact (the reporting proxy
    waits to learn what the caller did next) parks it with :meth:`hold`, durably, and
    later sends the payload with ``send(payload, releasing=name)``: the held record is
    deleted in the transaction that spools the envelope. :meth:`held` lists what an
    earlier run left held.

    ``on_delivery`` (a plain function, like ``on_rejection``) is told what every
    attempt to deliver a batch came to: a :class:`Delivery`.

    ``keep_delivered`` (seconds, 0 by default) keeps the envelopes the bureau accepted
    (or already had) in the spool's database that long, so that :meth:`resend_delivered`
    can send them again after the bureau was restored from a backup that lost them.

    Use it as ``async with Reporter(...) as reporter:`` or call :meth:`start` and
    :meth:`close`. Leaving the block closes without waiting for the spool to drain;
    ``await reporter.flush()`` first when you need that.
    """

    def __init__(
        self,
        key: nacl.signing.SigningKey,
        base_url: str,
        spool_dir: str | os.PathLike[str],
        *,
        batch_size: int = MAX_BATCH_LINES,
        max_spooled: int = 100_000,
        timeout: float = 30.0,
        backoff_base: float = 0.1,
        max_backoff: float = 30.0,
        on_rejection: Callable[[Rejection], object] | None = None,
        keep_rejections: int = 10_000,
        on_delivery: Callable[[Delivery], object] | None = None,
        keep_delivered: float = 0.0,
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH_LINES:
            raise ValueError(f"batch_size must be 1..{MAX_BATCH_LINES}")
        self._key = key
        self._transport = Transport(base_url, timeout=timeout)
        self._spool = Spool(spool_dir, max_items=max_spooled)
        self._batch_size = batch_size
        self._backoff = Backoff(backoff_base, max_backoff)
        self._on_rejection = on_rejection
        self._on_delivery = on_delivery
        if keep_delivered < 0:
            raise ValueError("keep_delivered must not be negative")
        self._keep_delivered = keep_delivered
        self._rejections: collections.deque[Rejection] = collections.deque(
            maxlen=keep_rejections)
        self._task: asyncio.Task[None] | None = None
        self._start_lock = asyncio.Lock()
        self._url_changed = asyncio.Event()
        self._closed = False

    # ------------------------------------------------------------------ properties

    @property
    def key_id(self) -> str:
        """This reporter's key id."""
        return signing_key_id(self._key)

    @property
    def base_url(self) -> str:
        """The bureau's base URL; assign to move to another address (next request)."""
        return self._transport.base_url

    @base_url.setter
    def base_url(self, value: str) -> None:
        self._transport.base_url = value
        self._url_changed.set()  # a sender backing off tries the new address at once

    @property
    def pending(self) -> int:
        """Envelopes spooled and not yet answered for by the bureau."""
        return self._spool.size

    @property
    def rejections(self) -> list[Rejection]:
        """Rejections seen by this object, oldest first (the last ``keep_rejections``)."""
        return list(self._rejections)

    # ------------------------------------------------------------------ builders

    def fact(
        self,
        interaction: str,
        subject: str,
        *,
        observed_at: str | None = None,
        answered: bool = True,
        caller: str | None = None,
        latency_ms: int | None = None,
        well_formed: bool | None = None,
        promises: Mapping[str, bool] | Sequence[PromiseKept] = (),
        claimed: Literal["SUCCESS", "FAILURE", "DECLINED"] | None = None,
        check: Literal["PASS", "FAIL"] | None = None,
        derived: Literal["RETRY_ACCEPTED", "SWITCHED_AGENT", "ABANDONED"] | None = None,
        engagement: Engagement | Mapping[str, Any] | None = None,
    ) -> FactPayload:
        """A validated fact (SPEC §4) about ``subject`` (a key id). ``observed_at``
        defaults to now; ``promises`` maps promise id to kept. Raises
        :class:`BureauClientError` ``SCHEMA`` (with a JSON Pointer) if it is invalid."""
        if isinstance(promises, Mapping):
            promise_list: list[Any] = [{"promise": p, "kept": k} for p, k in promises.items()]
        else:
            promise_list = list(promises)
        return payloads.build(FactPayload, {
            "interaction": interaction, "subject": subject, "caller": caller,
            "observed_at": observed_at or payloads.now_timestamp(), "answered": answered,
            "latency_ms": latency_ms, "well_formed": well_formed, "promises": promise_list,
            "claimed": claimed, "check": check, "derived": derived,
            "engagement": dict(engagement) if isinstance(engagement, Mapping) else engagement,
        })

    def probe(self, interaction: str, subject: str, probe: str, passed: bool, *,
              observed_at: str | None = None) -> ProbePayload:
        """A validated probe result: ``subject`` was tested with ``probe`` in
        ``interaction``. Raises ``SCHEMA`` like :meth:`fact`."""
        return payloads.build(ProbePayload, {
            "interaction": interaction, "subject": subject, "probe": probe,
            "passed": passed, "observed_at": observed_at or payloads.now_timestamp()})

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the spool (resuming whatever an earlier run left in it) and start the
        background sender. Called by ``async with``, :meth:`send` and :meth:`flush`."""
        async with self._start_lock:
            if self._closed:
                raise BureauClientError("CLOSED", "", "this Reporter has been closed")
            if self._task is not None:
                return
            await self._spool.open()
            self._task = asyncio.create_task(self._send_loop(), name="reporters-sender")

    async def __aenter__(self) -> Reporter:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop sending and close the spool. Does not wait for the spool to drain: what
        is left is sent by the next ``Reporter`` on the same directory. A batch in
        flight is abandoned; its envelopes stay spooled and are sent again (the bureau
        answers ``duplicate`` for any it had already committed)."""
        if self._closed:
            return
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._spool.close()
        await self._transport.close()

    # ------------------------------------------------------------------ sending

    async def send(self, payload: FactPayload | ProbePayload, *,
                   releasing: str | None = None) -> None:
        """Sign ``payload`` and spool the envelope durably (fsynced) for sending.

        Returns once the envelope is on disk: from then on it survives a crash of this
        process. Waits while the spool is full. Sending a payload already spooled is a
        no-op; sending one the bureau already has is answered ``duplicate`` and dropped.
        ``releasing`` names a record held with :meth:`hold`: it is deleted in the same
        transaction, so a crash leaves it either held or spooled.
        """
        key, line = self._signed(payload)
        await self.start()
        await self._spool.append(key, line, release=releasing)

    async def release(self, held: Sequence[tuple[str, FactPayload | ProbePayload]]) -> None:
        """Sign each payload and spool it, deleting the record held under its name
        (:meth:`hold`) in the same transaction, as ``send(payload, releasing=name)``
        does — but without a transaction of its own: the records are on disk already,
        so nobody waits on this write, and it rides with the next hold or send (or goes
        a few milliseconds later, when none comes). Returns once it is committed."""
        items = [(name, *self._signed(payload)) for name, payload in held]
        await self.start()
        await self._spool.release(items)

    def _signed(self, payload: FactPayload | ProbePayload) -> tuple[str, bytes]:
        """(content key, envelope line) of ``payload`` signed by this reporter."""
        if not isinstance(payload, FactPayload | ProbePayload):
            raise TypeError("a Reporter sends FactPayload and ProbePayload")
        envelope = payloads.sign(self._key, payload)
        return payloads.envelope_content_key(envelope), payloads.envelope_line(envelope)

    async def send_facts(self, facts: Sequence[Mapping[str, Any]]) -> None:
        """Sign several facts and spool them in one transaction and one fsync; returns
        once all are on disk (or raises, and none is).

        Each fact is a plain JSON object with every field of SPEC §4, built valid by
        its caller: nothing here checks it against the model, because this is the hot
        path of callers that turn thousands of records a second into facts (the OTLP
        receiver, whose builder a test holds to :class:`FactPayload`). A fact that is
        not valid is refused by the bureau as ``SCHEMA``; use :meth:`send` when in doubt.
        """
        await self.start()
        kid = self.key_id
        await self._spool.append_many(
            [payloads.signed_fact_line(self._key, kid, f) for f in facts])

    async def hold(self, records: Mapping[str, bytes]) -> None:
        """Hold ``records`` (name -> any bytes; a name already held is replaced) durably
        in the spool's database, in one fsynced transaction, until ``send(...,
        releasing=name)`` or :meth:`release`. Held records are not sent and do not count against
        ``max_spooled``."""
        await self.start()
        await self._spool.hold(records)

    async def held(self) -> dict[str, bytes]:
        """Every record held and not yet released, by name, oldest first — including
        those an earlier run (or a crashed process) left in this spool."""
        await self.start()
        return dict(await self._spool.held())

    async def resend_delivered(self, since: float | None = None) -> int:
        """Spool again every envelope kept as delivered (``keep_delivered``) at or after
        ``since`` (Unix seconds; ``None``: all kept), for the sender to deliver again:
        the bureau answers ``duplicate`` for those it has, and enters those it lost.
        Returns how many were spooled."""
        await self.start()
        return await self._spool.resend(float("-inf") if since is None else since)

    async def flush(self) -> None:
        """Wait until the bureau has answered for every spooled envelope. Waits as long
        as the bureau is unreachable: bound it with ``asyncio.timeout``. Raises
        ``CLOSED`` if the reporter is closed meanwhile."""
        await self.start()
        await self._spool.wait_empty()

    async def entries(self, after: int = 0, limit: int = 100,
                      refusals_after: int = 0) -> FilePage:
        """One page of what this reporter submitted, and its refusals, decoded (an RFC
        9421-signed ``GET /v1/reporters/{key id}/entries``)."""
        own = PartyFile(self._transport, self._key, f"/v1/reporters/{self.key_id}")
        return await own.page(after, limit, refusals_after)

    def pages(self, after: int = 0, limit: int = 100,
              refusals_after: int = 0) -> AsyncIterator[FilePage]:
        """Every page of this reporter's file from the cursors given, to its end."""
        own = PartyFile(self._transport, self._key, f"/v1/reporters/{self.key_id}")
        return own.pages(after, limit, refusals_after)

    # ------------------------------------------------------------------ the sender

    async def _send_loop(self) -> None:
        limit = self._batch_size
        while True:
            self._spool.nonempty.clear()  # before looking, so no wake-up is lost
            try:
                items = await self._spool.peek(limit, MAX_BATCH_BYTES)
            except BureauClientError as exc:
                if exc.code == "CLOSED":
                    return
                log.warning("cannot read the spool (%s: %s); will retry", exc.code, exc.detail)
                await self._pause(self._backoff.next_delay())
                continue
            if not items:
                await self._spool.nonempty.wait()
                continue
            try:
                outcome = await self._deliver(items)
            except Rejected as exc:
                if exc.status == 413:
                    self._delivered(Delivery(len(items), failure="TOO_LARGE"))
                    limit = max(1, len(items) // 2)  # too big: halve, try again at once
                    continue
                # 401, 404, 415, ...: a misconfiguration the envelopes cannot fix. Keep
                # them spooled and keep trying: nothing is dropped unjudged.
                log.warning("bureau refused the batch (%s %s: %s); will retry",
                            exc.status, exc.code, exc.detail)
                self._delivered(Delivery(len(items), failure=exc.code))
                outcome = Retry(None)
            except Unavailable as exc:
                log.info("bureau unavailable (%s: %s); will retry", exc.code, exc.detail)
                self._delivered(Delivery(len(items), failure=exc.code))
                outcome = Retry(exc.retry_after)
            except BureauClientError as exc:
                if exc.code == "CLOSED":
                    return
                log.warning("cannot update the spool (%s: %s); will retry", exc.code,
                            exc.detail)
                self._delivered(Delivery(len(items), failure=exc.code))
                outcome = Retry(None)
            except Exception:
                log.exception("unexpected error in the reporter's sender; will retry")
                self._delivered(Delivery(len(items), failure="INTERNAL"))
                outcome = Retry(None)
            if outcome is None:
                self._backoff.reset()
                limit = min(self._batch_size, limit * 2)  # recover after a 413 halving
            else:
                await self._pause(self._backoff.next_delay(outcome.retry_after))

    async def _pause(self, delay: float) -> None:
        """Sleep ``delay`` seconds, or less if :attr:`base_url` changes meanwhile."""
        self._url_changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._url_changed.wait(), delay)

    async def _deliver(self, items: Sequence[tuple[int, bytes]]) -> Retry | None:
        """Send one batch and settle its answers. A single envelope refused as too large
        for any batch (``413``) has been judged: it is a rejection like any other."""
        try:
            results = await self._transport.post_batch([line for _, line in items])
        except Rejected as exc:
            if exc.status != 413 or len(items) > 1:
                raise
            results = [exc_result(exc)]
        return await self._settle(items, results)

    async def _settle(self, items: Sequence[tuple[int, bytes]],
                      results: Sequence[Mapping[str, Any]]) -> Retry | None:
        """Delete every answered envelope from the spool, recording rejections first (so
        a crash in between reports a rejection twice rather than never). ``None`` when
        every line was answered, else a :class:`Retry` for the rest."""
        answered: list[int] = []
        delivered: list[int] = []
        counts = collections.Counter[str]()
        seqs: list[int] = []
        for (seq, line), result in zip(items, results, strict=True):
            status = result.get("status")
            if status in ("accepted", "duplicate"):
                answered.append(seq)
                delivered.append(seq)
                counts[str(status)] += 1
                seqs.append(int(result["seq"]))
            elif result.get("code") == "UNAVAILABLE":  # a line the bureau could not take
                counts["unavailable"] += 1
            else:
                self._record(line, result)
                answered.append(seq)
                counts["rejected"] += 1
        await self._spool.remove(answered, keep=delivered if self._keep_delivered else (),
                                 now=time.time(), retention=self._keep_delivered)
        self._delivered(Delivery(
            len(items), counts["accepted"], counts["duplicate"], counts["rejected"],
            counts["unavailable"], min(seqs, default=None), max(seqs, default=None)))
        return Retry(None) if counts["unavailable"] else None

    def _delivered(self, delivery: Delivery) -> None:
        if self._on_delivery is not None:
            try:
                self._on_delivery(delivery)
            except Exception:
                log.exception("on_delivery callback failed")

    def _record(self, line: bytes, result: Mapping[str, Any]) -> None:
        envelope: dict[str, Any] = json.loads(line)
        payload_type = str(envelope.get("payloadType", ""))
        name = payload_type.removeprefix("application/vnd.bureau.").removesuffix(".v1+json")
        rejection = Rejection(
            code=str(result.get("code")), path=str(result.get("path", "")),
            detail=str(result.get("detail", "")), payload_type=name,
            payload=payloads.envelope_payload(envelope), envelope=envelope)
        log.warning("bureau rejected a %s: %s at %r: %s", name, rejection.code,
                    rejection.path, rejection.detail)
        self._rejections.append(rejection)
        if self._on_rejection is not None:
            try:
                self._on_rejection(rejection)
            except Exception:
                log.exception("on_rejection callback failed")
