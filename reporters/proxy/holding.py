"""Facts the proxy has decided to report, from that moment until the spool has them.

A fact cannot be amended, and its ``derived`` (what the caller did next) is known only
later (:mod:`reporters.proxy.tracker`), so the proxy *holds* each fact until then. Held
facts live on disk, not only in memory:

* **Hold.** When a call has been answered and measured, its fact is written (fsynced)
  into the spool's database with :meth:`reporters.Reporter.hold` *before* the caller
  gets the answer — together, in the same transaction, with what that call changed: the
  thread it extends (attempts, last attempt and its time, on the thread's first fact)
  and the facts it settled at once (a switch, a retry, an unsigned call).
* **Release.** A settled fact is signed and spooled with ``Reporter.send(...,
  releasing=interaction)``: the held record is deleted in the transaction that spools
  the envelope. So at every instant a fact is either held or spooled, never both, never
  neither.
* **Open A2A tasks** (reporters.proxy.tasks) are held the same way from their first
  answer, their record rewritten at every turn, and enter the tracker only when they
  end: then they are a call like any other.
* **Recover.** At start, records left by a run that did not stop cleanly come back:
  settled ones are released as they were settled; open threads go back into the tracker
  with their attempts and times (moved onto this run's clock), so their ``derived``
  comes out as if the proxy had never stopped. Signing is deterministic (Ed25519) and the
  fact is made from the record alone, so a fact spooled and delivered before a crash and
  released again after it is the same envelope: the bureau answers ``duplicate``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from reporters import Reporter
from reporters._internal.errors import BureauClientError
from reporters._internal.wording import count
from reporters.models import FactPayload
from reporters.proxy.measure import Check, Claimed
from reporters.proxy.metrics import ProxyMetrics
from reporters.proxy.tasks import OpenTasks, TaskTurn
from reporters.proxy.tracker import Call, Derived, DerivedOutcomes, Settled, Thread

log = logging.getLogger("reporters.proxy")

#: Version of the held record's JSON form.
RECORD_VERSION = 1


@dataclass(frozen=True, slots=True)
class Measured:
    """Everything of a fact but ``derived``: what the proxy saw of one call."""

    agent: str
    caller: str | None
    observed_at: str
    answered: bool
    latency_ms: int | None
    well_formed: bool | None
    promises: Mapping[str, bool]
    claimed: Claimed | None
    check: Check | None


@dataclass(frozen=True, slots=True)
class ThreadMark:
    """On a thread's first fact while the thread is open: what a restart needs."""

    attempts: int
    last: str  # the interaction of the thread's last attempt
    last_satisfactory: bool
    last_at: float  # wall clock (Unix seconds) when the last attempt was answered


@dataclass(frozen=True, slots=True)
class OpenMark:
    """On the fact of an A2A task that has not ended: what a restart needs."""

    task_id: str | None
    state: int | None
    last_at: float  # wall clock (Unix seconds) of the task's last turn
    started_at: float  # wall clock when the task's first call went upstream
    unlisted_skill: str | None = None  # see reporters.proxy.tasks.TaskTurn


#: ``derived`` left to the tracker (what the caller does next), in :meth:`HeldFacts.end`.
TRACKED: Literal["tracked"] = "tracked"


@dataclass(slots=True)
class HeldFact:
    measured: Measured
    task: str
    satisfactory: bool
    answered_at: float  # wall clock (Unix seconds) when the caller got its answer
    thread: ThreadMark | None = None  # set while this fact heads an open thread
    settled: bool = False
    derived: Derived | None = None
    open: OpenMark | None = None  # set while this fact's A2A task has not ended

    def encode(self) -> bytes:
        m = self.measured
        doc: dict[str, Any] = {
            "v": RECORD_VERSION,
            "fact": {"subject": m.agent, "caller": m.caller, "observed_at": m.observed_at,
                     "answered": m.answered, "latency_ms": m.latency_ms,
                     "well_formed": m.well_formed, "promises": dict(m.promises),
                     "claimed": m.claimed, "check": m.check},
            "task": self.task, "satisfactory": self.satisfactory,
            "answered_at": self.answered_at,
            "thread": None if self.thread is None else {
                "attempts": self.thread.attempts, "last": self.thread.last,
                "last_satisfactory": self.thread.last_satisfactory,
                "last_at": self.thread.last_at},
            "settled": self.settled, "derived": self.derived,
        }
        if self.open is not None:
            doc["open"] = {"task_id": self.open.task_id, "state": self.open.state,
                           "last_at": self.open.last_at, "started_at": self.open.started_at,
                           "unlisted_skill": self.open.unlisted_skill}
        return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def decode(cls, raw: bytes) -> HeldFact:
        doc = json.loads(raw)
        if doc.get("v") != RECORD_VERSION:
            raise ValueError(f"held record version {doc.get('v')!r} is not {RECORD_VERSION}")
        f, t = doc["fact"], doc["thread"]
        measured = Measured(f["subject"], f["caller"], f["observed_at"], f["answered"],
                            f["latency_ms"], f["well_formed"], f["promises"], f["claimed"],
                            f["check"])
        thread = None if t is None else ThreadMark(t["attempts"], t["last"],
                                                   t["last_satisfactory"], t["last_at"])
        o = doc.get("open")
        open_mark = None if o is None else OpenMark(o["task_id"], o["state"], o["last_at"],
                                                    o.get("started_at", o["last_at"]),
                                                    o.get("unlisted_skill"))
        return cls(measured, doc["task"], doc["satisfactory"], doc["answered_at"], thread,
                   doc["settled"], doc["derived"], open_mark)


class HeldFacts:
    """Holds, releases and recovers the proxy's facts (see the module docstring).

    ``clock`` is the tracker's (monotonic seconds), ``wall`` Unix seconds; held records
    keep wall times, which :meth:`recover` moves onto the clock.
    """

    def __init__(self, reporter: Reporter, tracker: DerivedOutcomes, metrics: ProxyMetrics,
                 *, clock: Callable[[], float], wall: Callable[[], float]) -> None:
        self.reporter = reporter
        self.tracker = tracker
        self.metrics = metrics
        self._clock = clock
        self._wall = wall
        self._facts: dict[str, HeldFact] = {}
        #: A2A tasks begun and not ended; their facts are in ``_facts`` too
        self.tasks = OpenTasks(clock, tracker.quiet)
        self._ready: list[Settled] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def count(self) -> int:
        """Facts held: not yet spooled."""
        return len(self._facts)

    def measured(self, interaction: str) -> Measured | None:
        """What is held of ``interaction`` so far (an open A2A task's fact)."""
        fact = self._facts.get(interaction)
        return None if fact is None or fact.settled else fact.measured

    def task_key(self, interaction: str, default: str) -> str:
        """The tracker's task of a held fact (an open A2A task's), else ``default``."""
        fact = self._facts.get(interaction)
        return default if fact is None else fact.task

    # ------------------------------------------------------------------ lifecycle

    async def recover(self) -> int:
        """Take back what an earlier run left held; returns how many facts that was."""
        now_clock, now_wall = self._clock(), self._wall()

        def on_clock(wall_at: float) -> float:
            return now_clock - max(0.0, now_wall - wall_at)

        threads: list[Thread] = []
        for interaction, raw in (await self.reporter.held()).items():
            fact = HeldFact.decode(raw)
            self._facts[interaction] = fact
            if not fact.settled and fact.open is not None and fact.open.task_id is not None:
                o = fact.open
                self.tasks.turn(interaction, (fact.measured.agent, fact.measured.caller),
                                TaskTurn(o.task_id, o.state, o.unlisted_skill),
                                (on_clock(o.last_at), on_clock(o.started_at)))
                continue
            if fact.settled or fact.open is not None or fact.thread is None or \
                    fact.measured.caller is None:
                # Settled before the stop (a thread's first fact always has its mark).
                self._ready.append(Settled(interaction, fact.derived))
                continue
            head = Call(interaction, fact.measured.agent, fact.measured.caller, fact.task,
                        fact.satisfactory, on_clock(fact.answered_at))
            mark = fact.thread
            last = Call(mark.last, head.agent, head.caller, head.task, mark.last_satisfactory,
                        on_clock(mark.last_at))
            threads.append(Thread(head, last, mark.attempts))
        self.tracker.restore(threads)
        self.metrics.recovered.inc(len(self._facts))
        return len(self._facts)

    def start(self) -> None:
        """Start releasing facts as their ``derived`` becomes known."""
        self._task = asyncio.create_task(self._release_loop(), name="proxy-release")
        self._wake.set()  # anything recovered as settled goes at once

    async def stop(self, timeout: float) -> None:
        """Stop the release loop, then release every held fact with what is known now
        (the tracker's ``drain``), for at most ``timeout`` seconds: a fact not spooled by
        then stays held on disk, and the next start carries on with it."""
        if self._task is not None:
            # Not cancelled: a fact taken off the queue must reach the spool.
            self._stopping = True
            self._wake.set()
            await self._task
            self._task = None
        self._settled(self.tracker.drain())
        self._settled(self.tasks.drain())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._send_ready(), timeout)

    async def settle(self, *, release: bool = False) -> None:
        """Wait until nothing is held or queued and the bureau has answered for every
        spooled fact. ``release``: do not wait out the windows (as :meth:`stop` does)."""
        if release:
            self._settled(self.tracker.drain())
            self._settled(self.tasks.drain())
        while self._facts or self._ready:
            self._wake.set()
            await asyncio.sleep(0.02)
        await self.reporter.flush()

    # ------------------------------------------------------------------ holding

    async def hold(self, interaction: str, measured: Measured, task: str,
                   satisfactory: bool) -> None:
        """Hold the fact of one answered call (durably, before the caller is answered),
        and tell the tracker about the call."""
        fact = HeldFact(measured, task, satisfactory, self._wall())
        self._facts[interaction] = fact
        await self._write(interaction, self._track(interaction, fact))

    async def hold_open(self, interaction: str, measured: Measured, task: str,
                        turn: TaskTurn) -> None:
        """Hold the fact of an A2A task that has not ended, or rewrite it at a new turn
        (durably, before the caller has the answer)."""
        wall = self._wall()
        fact = self._facts.get(interaction)
        if fact is None or fact.settled:
            fact = self._facts[interaction] = HeldFact(measured, task, False, wall)
        fact.measured, fact.task = measured, task
        open_task = self.tasks.turn(interaction, (measured.agent, measured.caller), turn)
        started_at = wall - max(0.0, self._clock() - open_task.started)
        fact.open = OpenMark(open_task.task_id, open_task.state, wall, started_at,
                             open_task.unlisted_skill)
        await self._write(interaction, {interaction})

    async def end(self, interaction: str, measured: Measured, task: str, satisfactory: bool,
                  derived: Derived | str | None = TRACKED) -> None:
        """An A2A task has ended (or a call is decided that never opened one): its fact
        is final but for ``derived``, which is the given one, or :data:`TRACKED`: left to
        the tracker, as a plain call's. A satisfactory end closes the caller's thread."""
        self.tasks.close(interaction)
        fact = self._facts.get(interaction)
        if fact is None or fact.settled:
            fact = self._facts[interaction] = HeldFact(measured, task, satisfactory,
                                                       self._wall())
        fact.measured, fact.task, fact.satisfactory, fact.open = (measured, task,
                                                                  satisfactory, None)
        fact.answered_at = self._wall()
        if derived == TRACKED:
            changed = self._track(interaction, fact)
            if satisfactory:
                closed = self.tracker.close(fact.measured.caller, task)
                changed |= set(self._settled([closed] if closed else []))
        else:
            given = cast("Derived | None", derived)  # not TRACKED: mypy cannot narrow it
            changed = {interaction, *self._settled([Settled(interaction, given)])}
        await self._write(interaction, changed)

    def _track(self, interaction: str, fact: HeldFact) -> set[str]:
        """Tell the tracker about the call of ``fact``; the facts that changed."""
        measured = fact.measured
        # The tracker's time is when the caller got its answer: a retry follows that.
        settled = self.tracker.observe(Call(interaction, measured.agent, measured.caller,
                                            fact.task, fact.satisfactory, self._clock()))
        changed = {interaction, *self._settled(settled)}
        if measured.caller is not None:
            thread = self.tracker.thread(measured.caller, fact.task)
            if thread is not None:
                head = self._facts[thread.head.interaction]
                head.thread = ThreadMark(thread.attempts, thread.last.interaction,
                                         thread.last.satisfactory, fact.answered_at)
                changed.add(thread.head.interaction)
        return changed

    async def _write(self, interaction: str, changed: set[str]) -> None:
        records = {i: self._facts[i].encode() for i in changed if i in self._facts}
        # Written in the order decided: the release loop runs only once this coroutine
        # yields, and the hold is queued for the spool's writer before it does, so a
        # release decided later is also written later.
        try:
            await self.reporter.hold(records)
        except BureauClientError as exc:
            # The call is answered all the same (the proxy reports, it does not
            # gatekeep); the fact stays in memory and is spooled when released.
            log.error("fact %s not held on disk: %s %s", interaction, exc.code, exc.detail)

    def _settled(self, settled: Iterable[Settled]) -> list[str]:
        """Mark facts settled and queue them for release; their interactions."""
        out = []
        for s in settled:
            fact = self._facts.get(s.interaction)
            if fact is None or fact.settled:
                continue
            fact.settled, fact.derived, fact.thread = True, s.derived, None
            self._ready.append(s)
            out.append(s.interaction)
        if out:
            self._wake.set()
        return out

    # ------------------------------------------------------------------ releasing

    async def _release_loop(self) -> None:
        # Facts settled by a call are queued at once and wake this loop; the tracker's
        # windows are looked at once a tick. (Looking on every wake costs O(held) per
        # call: measured, 2,000 held facts made each call 4 ms slower.)
        tick = min(1.0, self.tracker.window / 4)
        next_look = self._clock()
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, next_look - self._clock()))
            self._wake.clear()
            if self._clock() >= next_look:
                self._settled(self.tracker.due())
                self._settled(self.tasks.due())
                next_look = self._clock() + tick
            await self._send_ready()

    async def _send_ready(self) -> None:
        ready, self._ready = self._ready, []
        made = [(s.interaction, fact, payload) for s, fact, payload in map(self._made, ready)
                if payload is not None]
        if not made:
            return
        try:
            # One spool write for them all, riding with the next hold's transaction
            # (Reporter.release): releasing costs no fsync of its own.
            await self.reporter.release([(interaction, payload)
                                         for interaction, _, payload in made])
        except BureauClientError as exc:  # the spool failed (disk full?): next tick
            log.error("%s not spooled: %s %s", count(len(made), "fact"), exc.code, exc.detail)
            self._requeue(ready)
            return
        except asyncio.CancelledError:  # torn down mid-way: back on the queue
            self._requeue(ready)
            raise
        for interaction, fact, _ in made:
            # Only now: settle() must not see "nothing held" before the fact is spooled.
            if self._facts.get(interaction) is fact:
                del self._facts[interaction]
        self.metrics.spooled.inc(len(made))

    def _requeue(self, ready: list[Settled]) -> None:
        queued = {s.interaction for s in self._ready}
        self._ready += [s for s in ready
                        if s.interaction in self._facts and s.interaction not in queued]

    def _made(self, settled: Settled) -> tuple[Settled, HeldFact | None, FactPayload | None]:
        """The fact of ``settled`` and its payload; no payload when it is gone, or cannot
        be made (a bug: logged and dropped, never retried)."""
        fact = self._facts.get(settled.interaction)
        if fact is None:
            return settled, None, None
        m = fact.measured
        try:
            return settled, fact, self.reporter.fact(
                settled.interaction, m.agent, observed_at=m.observed_at, answered=m.answered,
                caller=m.caller, latency_ms=m.latency_ms, well_formed=m.well_formed,
                promises=m.promises, claimed=m.claimed, check=m.check, derived=fact.derived)
        except BureauClientError as exc:  # SCHEMA: a fact the proxy made badly
            log.error("fact %s cannot be made: %s", settled.interaction, exc)
            del self._facts[settled.interaction]
            return settled, None, None
