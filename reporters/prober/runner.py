"""The prober: sends each route's agent tasks at its rate, judges the answers, and reports
them through a durable :class:`reporters.Reporter` spool.

**Which task.** In epoch ``E`` (the bureau's epochs: ``/v1/bureau``'s ``epoch_seconds``)
every agent works through ``batch(E, seed)`` in order, taking the tasks of its route's
kinds; the next epoch starts again from its own batch. So every agent probed in an epoch
is asked the same tasks, and an auditor holding the seed can recompute each one from its
probe id (``v1.<epoch>.<index>``).

**When.** The gaps between one agent's tasks are drawn from an exponential distribution
with mean ``3600 / probes_per_hour`` seconds (a Poisson process: no fixed period to
recognise), one task in flight per agent at a time. The schedule's randomness is the
operating system's; the tasks' is never.

**Durability.** Each agent has one record held in the spool's database
(:meth:`Reporter.hold`), ``probe:<agent key id>``, replaced at each step, each write
fsynced:

1. before the task is sent: the epoch, the next index, and the call in flight
   (interaction id, index, ``observed_at``) — so a task is never sent twice;
2. once it is judged: the fact and probe payloads as they will be signed;
3. the payloads are spooled (:meth:`Reporter.send`), then the record is marked idle.

At start, a record left at step 2 is spooled again: the envelopes are byte for byte
those of before (Ed25519 signatures are deterministic), so one that had reached the
spool or the bureau is not entered twice. A record left at step 1 was cut off while the
agent was being asked: what it answered is unknown, so nothing is reported for it
(``bureau_probe_interrupted_total``). Either way no probe the spool accepted is lost and
none is entered twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import aiohttp
import nacl.signing

from reporters import Delivery, Rejection, Reporter, key_id
from reporters._internal import payloads
from reporters._internal.backoff import Backoff
from reporters._internal.spool import DB_FILE
from reporters._internal.wording import count
from reporters.daemon import ops
from reporters.daemon.ids import InteractionIds
from reporters.models import FactPayload, ProbePayload
from reporters.prober import http_call
from reporters.prober.config import ProbeConfig, Route
from reporters.prober.metrics import ProbeMetrics
from reporters.prober.outcome import RESULTS, Asked, Result, judge, probe_passed
from reporters.probing import GENERATOR, KINDS, ProbeTask, task

log = logging.getLogger("reporters.prober")

RECORD_PREFIX = "probe:"
RECORD_VERSION = 1
#: The longest reply kept in an audit line.
AUDIT_REPLY_CHARS = 4096


class Sender(Protocol):
    async def ask(self, text: str) -> Asked: ...
    async def close(self) -> None: ...


class _HttpSender:
    def __init__(self, session: aiohttp.ClientSession, route: Route) -> None:
        self._session, self._route = session, route

    async def ask(self, text: str) -> Asked:
        return await http_call.ask(self._session, self._route, text)

    async def close(self) -> None:
        pass


@dataclass
class Progress:
    """One agent's held record: where it is in its epoch's batch, and the probe in hand."""

    agent: str
    epoch: int = -1
    next: int = 0
    #: step 1: {"interaction", "index", "observed_at"}
    asking: dict[str, Any] | None = None
    #: step 2: {"result", "fact": payload | None, "probe": payload | None}
    answered: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return RECORD_PREFIX + self.agent

    def dump(self) -> bytes:
        return json.dumps({"v": RECORD_VERSION, "agent": self.agent, "epoch": self.epoch,
                           "next": self.next, "asking": self.asking,
                           "answered": self.answered}, sort_keys=True).encode()

    @classmethod
    def load(cls, raw: bytes) -> Progress:
        doc = json.loads(raw)
        if doc.get("v") != RECORD_VERSION:
            raise ValueError(f"a held probe record of version {doc.get('v')!r}")
        return cls(doc["agent"], doc["epoch"], doc["next"], doc["asking"], doc["answered"])


@dataclass
class RunTally:
    """What this run did, for the log line at the stop."""

    results: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RESULTS, 0))
    accepted: int = 0
    duplicate: int = 0
    rejected: int = 0


def _timestamp(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


@dataclass(frozen=True, slots=True)
class Pace:
    """When a prober asks. ``wall`` is Unix seconds (the epoch and ``observed_at``);
    ``gaps`` draws the seconds between two tasks for a mean (default: exponential, from
    the operating system's randomness); ``limit`` stops each route after that many
    tasks (``bureau-reporter probe --limit``)."""

    wall: Callable[[], float] = time.time
    gaps: Callable[[float], float] | None = None
    limit: int | None = None


class Probed(NamedTuple):
    """One task as it was asked and judged."""

    interaction: str
    observed_at: str
    agent: str
    task: ProbeTask
    asked: Asked
    result: Result


class Prober:
    """One running prober, asking at its :class:`Pace`."""

    def __init__(self, config: ProbeConfig, key: nacl.signing.SigningKey, seed: bytes,
                 pace: Pace = Pace()) -> None:
        self.config = config
        self.metrics = ProbeMetrics()
        self.reporter = Reporter(key, config.bureau_url, config.spool_dir,
                                 on_rejection=self._rejected, on_delivery=self._delivered)
        self.metrics.watch(lambda: self.reporter.pending)
        self.prober_id = config.prober_id or "pb-" + hashlib.sha256(
            key_id(key).encode()).hexdigest()[:10]
        self._seed = seed
        self._wall = pace.wall
        system = random.SystemRandom()
        self._gap = pace.gaps or (lambda mean: system.expovariate(1 / mean))
        self._limit = pace.limit
        self._ids: InteractionIds | None = None
        self._session: aiohttp.ClientSession | None = None
        self._senders: dict[str, Sender] = {}
        self._progress: dict[str, Progress] = {}
        self._exhausted: dict[str, int] = {}
        self.epoch_seconds: int | None = config.epoch_seconds
        self.run = RunTally()
        #: started and not stopping: /readyz says so
        self.serving = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the spool (one prober per spool directory), finish what an earlier run
        left held, learn the bureau's epoch length (waiting for the bureau if need be),
        and connect the routes."""
        await self.reporter.start()
        self._ids = InteractionIds(self.config.spool_dir, self.prober_id)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), cookie_jar=aiohttp.DummyCookieJar())
        await self._recover()
        if self.epoch_seconds is None:
            self.epoch_seconds = await self._read_epoch_seconds()
        for route in self.config.routes:
            self._senders[route.agent] = self._sender(route)
        self.serving = True

    def _sender(self, route: Route) -> Sender:
        assert self._session is not None
        if route.protocol == "a2a":
            from reporters.prober.a2a_call import A2ASender  # the a2a extra, checked at config

            return A2ASender(route)
        return _HttpSender(self._session, route)

    async def close(self) -> None:
        """Stop: deliver the spool for at most ``drain_seconds``, say what was done and
        what is left, close. What is not delivered stays on disk for the next start."""
        self.serving = False
        if self._ids is None:  # never started (the spool in use, stopped while waiting)
            await self.reporter.close()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.reporter.flush(), self.config.drain_seconds)
        self._log_stop()
        for sender in self._senders.values():
            await sender.close()
        if self._session is not None:
            await self._session.close()
        await self.reporter.close()

    async def bureau_ready(self) -> str | None:
        return await ops.bureau_readiness(self._session, self.config.bureau_url)

    @property
    def spool_file(self) -> Path:
        return self.config.spool_dir / DB_FILE

    async def _read_epoch_seconds(self) -> int:
        """``epoch_seconds`` of the bureau's ``/v1/bureau``, waiting for the bureau."""
        assert self._session is not None
        backoff = Backoff(0.5, 30.0)
        url = self.config.bureau_url + "/v1/bureau"
        while True:
            try:
                async with self._session.get(url, timeout=aiohttp.ClientTimeout(total=10)) as r:
                    if r.status == 200:
                        seconds = (await r.json()).get("epoch_seconds")
                        if isinstance(seconds, int) and seconds > 0:
                            return seconds
                    why = f"HTTP {r.status}"
            except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
                why = type(exc).__name__
            log.warning("cannot read the bureau's epoch length at %s (%s); will retry", url, why)
            await asyncio.sleep(backoff.next_delay())

    # ------------------------------------------------------------------ recovery

    async def _recover(self) -> None:
        for name, raw in (await self.reporter.held()).items():
            if not name.startswith(RECORD_PREFIX):
                continue
            progress = Progress.load(raw)
            if progress.answered is not None:
                answered = progress.answered
                await self._spool(_payload(FactPayload, answered["fact"]),
                                  _payload(ProbePayload, answered["probe"]))
                self.metrics.recovered.inc()
                log.warning("spooled the %s result of %s (%s), judged by a run that did not "
                            "stop cleanly", answered["result"], progress.asking and
                            progress.asking["interaction"], progress.agent)
            elif progress.asking is not None:
                self.metrics.interrupted.inc()
                log.warning("task %s.%s.%s to %s was in flight when the last run ended: its "
                            "answer is unknown, nothing is reported for it (%s)", GENERATOR,
                            progress.epoch, progress.asking["index"], progress.agent,
                            progress.asking["interaction"])
            if progress.asking is not None or progress.answered is not None:
                progress.asking = progress.answered = None
                await self.reporter.hold({progress.name: progress.dump()})
            self._progress[progress.agent] = progress

    # ------------------------------------------------------------------ probing

    async def run_routes(self, stop: asyncio.Event) -> None:
        """Probe every route until ``stop`` is set (or each has sent ``limit`` tasks)."""
        await asyncio.gather(*(self._route_loop(route, stop) for route in self.config.routes))

    async def _pause(self, seconds: float, stop: asyncio.Event) -> bool:
        """Wait ``seconds`` or until ``stop``; True when stopped."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, seconds))
        return stop.is_set()

    async def _route_loop(self, route: Route, stop: asyncio.Event) -> None:
        sent = 0
        mean = 3600.0 / route.probes_per_hour
        while self._limit is None or sent < self._limit:
            if await self._pause(self._gap(mean), stop):
                return
            next_task = self._next_task(route)
            if next_task is None:
                assert self.epoch_seconds is not None
                epoch_end = (self._epoch() + 1) * self.epoch_seconds
                if await self._pause(epoch_end - self._wall(), stop):
                    return
                continue
            await self._probe(route, next_task)
            sent += 1

    def _epoch(self) -> int:
        assert self.epoch_seconds is not None
        return int(self._wall() // self.epoch_seconds)

    def _next_task(self, route: Route) -> ProbeTask | None:
        """The agent's next task in this epoch's batch, of its route's kinds."""
        epoch = self._epoch()
        progress = self._progress.setdefault(route.agent, Progress(route.agent))
        start = progress.next if progress.epoch == epoch else 0
        for index in range(start, self.config.batch_size):
            if KINDS[index % len(KINDS)] in route.kinds:
                return task(epoch, index, self._seed)
        if self._exhausted.get(route.agent) != epoch:
            self._exhausted[route.agent] = epoch
            self.metrics.exhausted.labels(route.agent).inc()
            log.warning("%s: the epoch %d batch has no more tasks of its kinds (batch_size %d);"
                        " the next probe is in epoch %d", route.agent, epoch,
                        self.config.batch_size, epoch + 1)
        return None

    async def _probe(self, route: Route, probe_task: ProbeTask) -> None:
        """One task: record it, send it, judge the answer, report it (module docstring)."""
        assert self._ids is not None
        agent = route.agent
        progress = self._progress[agent]
        interaction = self._ids.next()
        observed_at = _timestamp(self._wall())
        progress.epoch, progress.next = probe_task.epoch, probe_task.index + 1
        progress.asking = {"interaction": interaction, "index": probe_task.index,
                           "observed_at": observed_at}
        progress.answered = None
        await self.reporter.hold({progress.name: progress.dump()})  # step 1

        self.metrics.sent.labels(agent, probe_task.kind).inc()
        try:
            asked = await self._senders[agent].ask(probe_task.text)
        except Exception:  # a fault of the prober's, or a setup it cannot call with
            log.exception("%s to %s as %s: the answer could not be judged; nothing is "
                          "reported for it", probe_task.probe_id, agent, interaction)
            self.metrics.interrupted.inc()
            progress.asking = None
            await self.reporter.hold({progress.name: progress.dump()})
            return
        result = judge(probe_task, asked)
        fact = self.reporter.fact(
            interaction, agent, observed_at=observed_at, answered=asked.answered,
            latency_ms=asked.latency_ms if asked.answered else None,
            well_formed=asked.well_formed if asked.answered else None, claimed=asked.claimed,
            derived="ABANDONED" if result == "unfinished" else None,
        ) if self.config.facts else None
        passed = probe_passed(result)
        probe = None if passed is None else self.reporter.probe(
            interaction, agent, probe_task.probe_id, passed, observed_at=observed_at)
        progress.answered = {"result": result, "fact": _json(fact), "probe": _json(probe)}
        await self.reporter.hold({progress.name: progress.dump()})  # step 2

        self._count(agent, result, asked)
        log.info("%s to %s as %s (%s): %s, %s", probe_task.probe_id, agent, interaction,
                 probe_task.kind, result, asked.note or "-")
        sent = [name for name, entry in (("fact", fact), ("probe", probe)) if entry is not None]
        await self._audit(Probed(interaction, observed_at, agent, probe_task, asked, result),
                          sent)
        await self._spool(fact, probe)  # step 3
        progress.asking = progress.answered = None
        await self.reporter.hold({progress.name: progress.dump()})

    async def _spool(self, fact: FactPayload | None, probe: ProbePayload | None) -> None:
        # The fact first, so that a reader of the ledger sees the call before its verdict.
        for payload in (fact, probe):
            if payload is not None:
                await self.reporter.send(payload)

    def _count(self, agent: str, result: Result, asked: Asked) -> None:
        self.run.results[result] += 1
        self.metrics.results.labels(agent, result).inc()
        if asked.answered and asked.latency_ms is not None:
            self.metrics.latency.labels(agent).observe(asked.latency_ms / 1000)

    async def _audit(self, probed: Probed, entries: list[str]) -> None:
        """One line of the audit log: everything about this probe, the reply included,
        and the names of the ``entries`` it made."""
        path = self.config.audit_log
        if path is None:
            return
        probe_task, asked = probed.task, probed.asked
        line = json.dumps({
            "observed_at": probed.observed_at,
            "interaction": probed.interaction, "agent": probed.agent,
            "probe": probe_task.probe_id,
            "kind": probe_task.kind, "task": probe_task.text, "answer": probe_task.answer.text,
            "reply": None if asked.reply is None else asked.reply[:AUDIT_REPLY_CHARS],
            "result": probed.result, "latency_ms": asked.latency_ms, "note": asked.note,
            "entries": entries,
        }, ensure_ascii=False, sort_keys=True) + "\n"
        await asyncio.to_thread(_append, path, line)

    # ------------------------------------------------------------------ delivery

    def _delivered(self, delivery: Delivery) -> None:
        if delivery.failure is not None:
            self.metrics.delivery_failures.labels(delivery.failure).inc()
            return
        self.run.accepted += delivery.accepted
        self.run.duplicate += delivery.duplicate
        self.metrics.delivered.labels("accepted").inc(delivery.accepted)
        self.metrics.delivered.labels("duplicate").inc(delivery.duplicate)

    def _rejected(self, rejection: Rejection) -> None:
        self.run.rejected += 1
        self.metrics.rejected.labels(rejection.code).inc()

    def _log_stop(self) -> None:
        r = self.run
        counts = ", ".join(f"{r.results[name]} {name.replace('_', ' ')}" for name in RESULTS)
        left = self.reporter.pending
        where = (f"{count(left, 'entry')} {'waits' if left == 1 else 'wait'} in the spool "
                 f"{self.spool_file}: the next start on this spool sends them")
        log.info("stopped: %s sent (%s); %s delivered (%d accepted, %d "
                 "duplicate, %d rejected); %s", count(sum(r.results.values()), "task"), counts,
                 count(r.accepted + r.duplicate + r.rejected, "entry"), r.accepted,
                 r.duplicate, r.rejected,
                 where if left else "nothing left behind")


def _json(payload: FactPayload | ProbePayload | None) -> dict[str, Any] | None:
    return None if payload is None else payloads.to_json(payload)


def _payload(model: type[FactPayload] | type[ProbePayload],
             doc: dict[str, Any] | None) -> Any:
    return None if doc is None else payloads.build(model, doc)


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(line)

