"""Derived outcomes (SPEC §4 ``derived``): what the caller did next, read from the calls.

Pure: no I/O, and the clock is injected, so tests drive time by hand. The proxy feeds
every call to :meth:`DerivedOutcomes.observe` and asks :meth:`DerivedOutcomes.due`
regularly; each returns the interactions whose fact may now be reported, with their
``derived`` value. A fact is reported once (a different fact for the same interaction
would be ``CONFLICTING_FACT``), so a fact whose ``derived`` is still open is *held* here
until it is known.

Definitions (docs/proxy.md says the same for gateway operators):

* A **task** is what the caller asked for: the hash of method, path below the route
  prefix, query and body. Two calls are the same task whatever agent they went to.
* A **thread** is one signed caller's attempts at one task with one agent: a call
  opens one, and the same caller sending the same task to the same agent within
  ``window`` seconds of the end of the thread's last attempt is a *retry*, another attempt in it.
  Only the thread's first attempt (its head) carries the thread's ``derived``; later
  attempts are reported at once with ``derived: null`` and only what was measured of
  them. So a task costs its agent at most one derived outcome, however often retried.
* ``SWITCHED_AGENT`` — the same caller sends the same task to *another* agent within
  ``window`` of the thread's last attempt: the head is settled at once.
* ``RETRY_ACCEPTED`` — a thread with more than one attempt whose last attempt was
  satisfactory (answered, well-formed, not an error status), and no further retry or
  switch came within ``window``: the caller kept the answer.
* ``ABANDONED`` — a thread whose last attempt was *not* satisfactory, after which the
  caller sent nothing at all (to any route) for ``quiet`` seconds. A caller that got a
  good answer and left is satisfied, not gone: that is ``null``.
* Otherwise ``null``: one satisfactory attempt; or an unsatisfactory one after which the
  caller came back with something else (we cannot tell what it thought).
* Unsigned callers (``caller`` unknown) cannot be followed: ``null`` at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Derived = Literal["RETRY_ACCEPTED", "SWITCHED_AGENT", "ABANDONED"]


@dataclass(frozen=True, slots=True)
class Call:
    """One forwarded call, as the tracker needs it."""

    interaction: str
    agent: str  # the subject's key id
    caller: str | None  # verified RFC 9421 signer, or None
    task: str  # see the module docstring
    satisfactory: bool
    at: float  # the tracker's clock when the call was answered (or failed), seconds


@dataclass(frozen=True, slots=True)
class Settled:
    """A fact that may be reported now, and its ``derived``."""

    interaction: str
    derived: Derived | None


@dataclass(frozen=True, slots=True)
class Thread:
    """An open thread as the tracker holds it: enough to carry it across a restart."""

    head: Call
    last: Call
    attempts: int


@dataclass(slots=True)
class _Thread:
    head: Call
    last: Call
    attempts: int = 1


@dataclass
class DerivedOutcomes:
    """Holds thread heads until their ``derived`` is known.

    ``window`` — seconds within which a repeat of a task is a retry or a switch, and
    after which a satisfactory thread is settled; ``quiet`` (≥ ``window``) — seconds of
    silence from a caller after an unsatisfactory attempt that make it ``ABANDONED``;
    ``max_held`` — bound on held threads: beyond it the oldest is settled with what is
    known so far (so memory stays bounded under any traffic).
    """

    clock: Callable[[], float]
    window: float = 30.0
    quiet: float = 300.0
    max_held: int = 100_000
    _threads: dict[tuple[str, str], _Thread] = field(default_factory=dict)
    _last_seen: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.window <= 0 or self.quiet < self.window:
            raise ValueError("need 0 < window <= quiet")

    @property
    def held(self) -> int:
        """Facts held, waiting for their ``derived``."""
        return len(self._threads)

    def observe(self, call: Call) -> list[Settled]:
        """Record ``call``; return the facts it lets us report at once."""
        if call.caller is None:
            return [Settled(call.interaction, None)]
        out: list[Settled] = []
        key = (call.caller, call.task)
        thread = self._threads.get(key)
        if thread is not None and call.at - thread.last.at > self.window:
            # Too late to be a retry: settle the old thread as if by due(), but the
            # caller is evidently back, so it cannot be ABANDONED.
            del self._threads[key]
            out.append(self._resolve(thread, came_back=True))
            thread = None
        self._last_seen[call.caller] = max(call.at, self._last_seen.get(call.caller, call.at))
        if thread is None:
            self._open(key, call, out)
        elif thread.head.agent == call.agent:
            thread.last = call
            thread.attempts += 1
            out.append(Settled(call.interaction, None))  # a retry carries nothing itself
        else:
            del self._threads[key]
            out.append(Settled(thread.head.interaction, "SWITCHED_AGENT"))
            self._open(key, call, out)
        return out

    def due(self) -> list[Settled]:
        """Threads whose ``derived`` became known by now; they are released."""
        now = self.clock()
        out: list[Settled] = []
        for key, thread in list(self._threads.items()):
            idle = now - thread.last.at
            if idle < self.window:
                continue
            back = self._last_seen.get(key[0], thread.last.at) > thread.last.at
            if thread.last.satisfactory or back or idle >= self.quiet:
                del self._threads[key]
                out.append(self._resolve(thread, came_back=back))
        self._forget_callers(now)
        return out

    def drain(self) -> list[Settled]:
        """Shutdown: release everything held with the best answer known now (an open
        unsatisfactory thread is ``null``: we did not wait long enough to say)."""
        out = self.due()
        for thread in self._threads.values():
            if thread.last.satisfactory:
                out.append(self._resolve(thread, came_back=True))
            else:
                out.append(Settled(thread.head.interaction, None))
        self._threads.clear()
        return out

    def close(self, caller: str | None, task: str) -> Settled | None:
        """Settle the open thread of ``caller`` at ``task`` now, as a satisfactory end
        settles it (an A2A task that completed: the next task in its context is a new
        request, not a retry)."""
        thread = None if caller is None else self._threads.pop((caller, task), None)
        return None if thread is None else self._resolve(thread, came_back=True)

    def thread(self, caller: str, task: str) -> Thread | None:
        """The open thread of ``caller`` at ``task``, if there is one."""
        t = self._threads.get((caller, task))
        return None if t is None else Thread(t.head, t.last, t.attempts)

    def restore(self, threads: list[Thread]) -> None:
        """Re-open threads a previous run held (their calls' ``at`` already moved onto
        this tracker's clock), oldest head first, as if they had never been away. Each
        caller counts as last seen at the latest call of its threads: the call that
        would show it came back is always the last of some open thread."""
        for t in sorted(threads, key=lambda t: t.head.at):
            if t.head.caller is None:
                continue
            self._threads[(t.head.caller, t.head.task)] = _Thread(t.head, t.last, t.attempts)
            seen = self._last_seen.get(t.head.caller, t.last.at)
            self._last_seen[t.head.caller] = max(seen, t.last.at)

    def next_deadline(self) -> float | None:
        """The earliest time at which :meth:`due` may release something."""
        if not self._threads:
            return None
        return min(t.last.at for t in self._threads.values()) + self.window

    # ------------------------------------------------------------------ internals

    def _open(self, key: tuple[str, str], call: Call, out: list[Settled]) -> None:
        self._threads[key] = _Thread(call, call)
        while len(self._threads) > self.max_held:
            oldest_key = next(iter(self._threads))
            out.append(self._resolve(self._threads.pop(oldest_key), came_back=True))

    def _resolve(self, thread: _Thread, *, came_back: bool) -> Settled:
        if thread.last.satisfactory:
            derived: Derived | None = "RETRY_ACCEPTED" if thread.attempts > 1 else None
        else:
            derived = None if came_back else "ABANDONED"
        return Settled(thread.head.interaction, derived)

    def _forget_callers(self, now: float) -> None:
        """Drop callers with no open thread that have been quiet longer than ``quiet``."""
        open_callers = {caller for caller, _ in self._threads}
        for caller, seen in list(self._last_seen.items()):
            if caller not in open_callers and now - seen > self.quiet:
                del self._last_seen[caller]
