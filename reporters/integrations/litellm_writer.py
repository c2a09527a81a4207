"""The LiteLLM plugin's writer: one task per worker process that holds, settles, signs
and spools the attempts LiteLLM's hooks queued (docs/litellm.md, "When the bureau is
away"; :mod:`reporters.integrations.litellm` reads the hooks).

**Nothing here runs on the call's path.** A hook only calls :meth:`FactWriter.submit`,
which appends to an in-memory queue (or hands the event to the writer's loop when
LiteLLM ran the hook on a thread of its own) and returns. The writer takes what arrived
together as one batch: new attempts join their request's trace (LiteLLM's trace id), a
settled trace's attempts are signed and spooled with their ``derived``
(:func:`reporters.integrations.litellm_facts.derive`), and the failures still open are
held on disk — all in one group commit per :data:`SEND_SLICE` facts, the calls' turn
of the loop between. A trace settles at a success, at an event that says LiteLLM gave up
on it, or after ``settle_seconds`` of quiet. When the spool holds ``max_spooled`` facts
(a long bureau outage), new facts are dropped and counted
(``bureau_litellm_facts_dropped_total{reason="spool_full"}``): the calls go on.

Slots: each worker process spools in a directory of its own
(:mod:`reporters.integrations.worker_spools`); what an earlier run of the slot held is
taken back at the claim, and a slot a dead worker left is adopted, settled and
delivered.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reporters import Rejection, Reporter, load_key
from reporters._internal.errors import BureauClientError
from reporters._internal.outcomes import Delivery
from reporters.integrations.litellm_config import LiteLLMConfig
from reporters.integrations.litellm_facts import Attempt, attempt_from_record, derive
from reporters.integrations.litellm_metrics import METRICS
from reporters.integrations.worker_spools import WorkerSpools

log = logging.getLogger("reporters.integrations.litellm")

#: events waiting for the writer; past this the writer has fallen far behind the calls
MAX_QUEUED = 10_000
#: how often a worker looks for slots a dead worker left, in seconds
ADOPT_EVERY = 60.0
#: a warning of the same kind (a full spool, a broken one) at most this often, seconds
WARN_EVERY = 60.0
#: facts per group commit: the writer shares the calls' loop, and settling 5,000 at once
#: (an outage's sweep, an adopted slot) held it 0.4 s of CPU at load 7 (signing, waking)
SEND_SLICE = 64

_Settled = list[tuple[Attempt, str | None]]  # attempts and their derived


@dataclass
class Event:
    """What a hook queued: an attempt of the request ``trace``; or, with ``attempt``
    None or never written (``dropped``), word that LiteLLM gave up on the trace."""

    trace: str
    attempt: Attempt | None


class FactWriter:
    """The writer of one worker process. ``config()`` gives the plugin's config (read
    at the first event, not before)."""

    def __init__(self, config: Callable[[], LiteLLMConfig]) -> None:
        self._config = config
        self._queue: collections.deque[Event] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._caught_up: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._spools: WorkerSpools | None = None
        self._reporter: Reporter | None = None
        self._adopted: list[Reporter] = []
        self._traces: dict[str, list[Attempt]] = {}
        self._held = 0  # records held in this process's own spool
        self._gauges = {"pending": 0, "held": 0}  # what this writer added to the gauges
        self._warned: dict[str, float] = {}
        #: facts not written, by reason (as ``bureau_litellm_facts_dropped_total``)
        self.dropped: collections.Counter[str] = collections.Counter()
        #: facts signed and spooled
        self.spooled = 0

    @property
    def slot(self) -> Path | None:
        """This process's spool directory, once the first event claimed it."""
        return None if self._spools is None else self._spools.slot

    # ------------------------------------------------------------------ the call's side

    def submit(self, event: Event) -> None:
        """Queue ``event`` for the writer, from the loop or from another thread; never
        waits. Starts the writer on the running loop at the first event."""
        loop = asyncio.get_running_loop()
        if self._loop is None or self._loop.is_closed():
            self._start(loop)
        if loop is self._loop:
            self._put(event)
        else:  # a hook run on another loop (a thread of LiteLLM's): hand it over
            assert self._loop is not None
            self._loop.call_soon_threadsafe(self._put, event)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._wake, self._caught_up = asyncio.Event(), asyncio.Event()
        self._task = loop.create_task(self._run(), name="bureau-litellm-writer")

    def _put(self, event: Event) -> None:
        assert self._wake is not None and self._caught_up is not None
        if len(self._queue) >= MAX_QUEUED:
            self.drop("queue_full")
            return
        self._queue.append(event)
        self._caught_up.clear()
        self._wake.set()

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] += n
        METRICS.dropped.labels(reason).inc(n)
        self.warn(reason, "facts dropped (%s; %d so far in this worker): the calls go on, "
                  "the bureau will not see them", reason, self.dropped[reason])

    def warn(self, kind: str, message: str, *args: object, exc_info: bool = False) -> None:
        """Once a minute per kind: what fails one call (no config, no disk) fails all."""
        now = time.monotonic()
        if now - self._warned.get(kind, -WARN_EVERY) >= WARN_EVERY:
            self._warned[kind] = now
            log.warning(message, *args, exc_info=exc_info)

    # ------------------------------------------------------------------ the writer's loop

    async def _run(self) -> None:
        assert self._wake is not None and self._caught_up is not None
        every = min(self._config().settle_seconds / 2, 5.0)
        next_sweep = time.monotonic() + every
        next_adopt = 0.0  # at the first batch
        while True:
            with contextlib.suppress(TimeoutError):  # the sweep's turn
                await asyncio.wait_for(self._wake.wait(), max(0.0, next_sweep - time.monotonic()))
            self._wake.clear()
            batch = list(self._queue)
            self._queue.clear()
            try:
                reporter = await self._own_reporter() if batch or self._reporter else None
                if reporter is not None:
                    await self._write(reporter, batch, quiet=time.monotonic() >= next_sweep)
                    if time.monotonic() >= next_adopt:
                        next_adopt = time.monotonic() + ADOPT_EVERY
                        await self._adopt()
            except Exception as exc:
                self.drop("spool_error", sum(e.attempt is not None and not e.attempt.dropped
                                             for e in batch))
                self.warn("spool", "the spool cannot be used (%s): facts are dropped", exc)
            if time.monotonic() >= next_sweep:
                next_sweep = time.monotonic() + every
            if not self._queue:
                self._caught_up.set()

    def _new_reporter(self, slot: Path) -> Reporter:
        config = self._config()
        return Reporter(load_key(config.key_file), config.bureau_url, slot,
                        max_spooled=config.max_spooled, on_delivery=self._delivered,
                        on_rejection=self._rejected)

    async def _own_reporter(self) -> Reporter:
        """This process's reporter, on its own slot, claimed at the first event; what an
        earlier run of the slot held is taken back (and settled by the sweep)."""
        if self._reporter is None:
            self._spools = WorkerSpools(self._config().spool_dir, self._new_reporter)
            reporter = await self._spools.claim()
            for name, record in (await reporter.held()).items():
                trace, held = attempt_from_record(name, json.loads(record))
                self._traces.setdefault(trace, []).append(held)
                self._held += 1
            self._reporter = reporter
        return self._reporter

    def _room(self, reporter: Reporter) -> int:
        return self._config().max_spooled - reporter.pending - self._held

    async def _write(self, reporter: Reporter, batch: list[Event], *, quiet: bool) -> None:
        """Apply a batch: new attempts join their traces (or are dropped when there is
        no room), settled traces are signed and spooled, open failures are held — all
        in one group commit. ``quiet``: also settle traces quiet for settle_seconds."""
        room = self._room(reporter)
        settled: _Settled = []
        fresh: list[tuple[str, Attempt]] = []  # failures this batch, to hold if still open
        for event in batch:
            if event.attempt is None or event.attempt.dropped:  # LiteLLM gave up
                if event.attempt is not None and event.trace in self._traces:
                    self._traces[event.trace].append(event.attempt)
                settled += self._settle(event.trace)
                continue
            event.attempt.dropped = room <= 0
            if event.attempt.dropped:
                self.drop("spool_full")
            room -= 1
            self._traces.setdefault(event.trace, []).append(event.attempt)
            if event.attempt.satisfactory:
                settled += self._settle(event.trace)
            elif not event.attempt.dropped:
                fresh.append((event.trace, event.attempt))
        if quiet:
            now = time.time()
            for trace, attempts in list(self._traces.items()):
                if now - attempts[-1].at >= self._config().settle_seconds:
                    settled += self._settle(trace)
        sent = {a.name for a, _ in settled}
        await self._spool(reporter, settled, [(t, a) for t, a in fresh if a.name not in sent])

    def _settle(self, trace: str) -> _Settled:
        attempts = self._traces.pop(trace, [])
        return [(a, d) for a, d in zip(attempts, derive(attempts), strict=True)
                if not a.dropped]

    async def _spool(self, reporter: Reporter, settled: _Settled,
                     holds: list[tuple[str, Attempt]]) -> None:
        """Hold the open failures ``(trace, attempt)`` and send the settled attempts at
        once, so that the spool commits them together."""
        records = {a.name: json.dumps(a.record(trace)).encode() for trace, a in holds}
        hold, released = await asyncio.gather(
            reporter.hold(records), self._send(reporter, settled), return_exceptions=True)
        if isinstance(hold, BaseException):  # they stay in memory, sent at settling
            self.warn("hold", "could not hold failed attempts (%s)", hold)
        else:
            for _, a in holds:
                a.held = True
            self._held += len(holds)
        if isinstance(released, BaseException):
            raise released
        self._held -= released
        self._update_gauges()

    async def _send(self, reporter: Reporter, settled: _Settled) -> int:
        """Sign and spool settled attempts, :data:`SEND_SLICE` at a time (one group commit
        each); returns how many held records that released."""
        released = 0
        for start in range(0, len(settled), SEND_SLICE):
            released += await self._send_slice(reporter, settled[start:start + SEND_SLICE])
        return released

    async def _send_slice(self, reporter: Reporter, settled: _Settled) -> int:
        attempts, sends = [], []
        for a, derived in settled:
            try:
                fact = reporter.fact(a.name, derived=derived, **a.fields)  # type: ignore[arg-type]
            except BureauClientError as exc:  # built valid: a bug, said once a minute
                self.drop("spool_error")
                self.warn("fact", "could not build a fact (%s)", exc)
                continue
            attempts.append(a)
            sends.append(reporter.send(fact, releasing=a.name if a.held else None))
        released = 0
        for a, result in zip(attempts, await asyncio.gather(*sends, return_exceptions=True),
                             strict=True):
            if isinstance(result, BaseException):
                self.drop("spool_error")
                self.warn("send", "could not spool a fact (%s)", result)
                continue
            self.spooled += 1
            METRICS.spooled.inc()
            released += a.held
        return released

    async def _adopt(self) -> None:
        """Take over the slots dead workers left: settle all they held (their requests
        died with them) and deliver; close each once the bureau has answered for it."""
        assert self._spools is not None
        for reporter in [r for r in self._adopted if not r.pending]:
            self._adopted.remove(reporter)
            await reporter.close()
        async for slot, reporter in self._spools.orphans():
            traces: dict[str, list[Attempt]] = {}
            for name, record in (await reporter.held()).items():
                trace, held = attempt_from_record(name, json.loads(record))
                traces.setdefault(trace, []).append(held)
            settled = [(a, d) for attempts in traces.values()
                       for a, d in zip(attempts, derive(attempts), strict=True)]
            await self._send(reporter, settled)
            if settled or reporter.pending:
                log.info("took over %s, left by a worker that stopped: %d held attempts "
                         "settled, %d facts to deliver", slot, len(settled), reporter.pending)
            if reporter.pending:
                self._adopted.append(reporter)
            else:
                await reporter.close()
        self._update_gauges()

    # ------------------------------------------------------------------ reporting

    def _update_gauges(self) -> None:
        reporters = [r for r in (self._reporter, *self._adopted) if r is not None]
        now = {"pending": sum(r.pending for r in reporters), "held": self._held}
        METRICS.pending.inc(now["pending"] - self._gauges["pending"])
        METRICS.held.inc(now["held"] - self._gauges["held"])
        self._gauges = now

    def _delivered(self, d: Delivery) -> None:
        if d.failure is None:
            METRICS.delivered.labels("accepted").inc(d.accepted)
            METRICS.delivered.labels("duplicate").inc(d.duplicate)
        self._update_gauges()

    def _rejected(self, rejection: Rejection) -> None:
        METRICS.rejected.labels(rejection.code).inc()

    # ------------------------------------------------------------------ lifecycle

    async def caught_up(self) -> None:
        """Return once every event queued so far is written (held, spooled or dropped)."""
        if self._caught_up is not None:
            await self._caught_up.wait()

    async def flush(self) -> None:
        """Wait until everything queued is written and the bureau has answered for
        every spooled fact."""
        await self.caught_up()
        for reporter in [r for r in (self._reporter, *self._adopted) if r is not None]:
            await reporter.flush()

    async def close(self, *, release: bool = True) -> None:
        """Write what is queued, settle every open trace (``release``), and close."""
        await self.caught_up()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        reporter = self._reporter
        if reporter is not None and release:
            settled = [pair for trace in list(self._traces) for pair in self._settle(trace)]
            await self._spool(reporter, settled, [])
        for r in [*self._adopted, *([reporter] if reporter else [])]:
            await r.close()
        self._adopted, self._reporter, self._loop = [], None, None
        self._held = 0
        self._update_gauges()


__all__ = ["ADOPT_EVERY", "MAX_QUEUED", "SEND_SLICE", "Event", "FactWriter"]
