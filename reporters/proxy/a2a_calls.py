"""A2A calls through the proxy: one fact per task, decided by the task's last state.

:class:`A2ACalls` handles a JSON-RPC call whose method is an A2A method
(:mod:`reporters.protocols.a2a` reads it, :mod:`reporters.protocols.a2a_shapes` mends
what real agents write that a2a-sdk refuses). What it does with each (docs/proxy.md,
"A2A"):

* a send or a streaming send that names no task this caller follows starts a new
  interaction; one that names a task of this caller's (a continuation) is a turn of it;
* a poll (``tasks/get``), a cancel or a resubscription of a task this caller follows is
  a turn of it; of any other task (another caller's included), it is forwarded and makes
  no fact — what another party does is not the agent's behaviour (SPEC §4, r4);
* every turn rewrites the held fact (durably, before the caller has the answer):
  ``latency_ms`` is the first answer's until the proxy sees the task's final state, then
  the time from the task's first call to the answer or event that showed it;
  ``well_formed`` stays true only while every answer was valid for its method, the
  card's promises are kept only while every turn kept them;
* a final state ends the task (``claimed`` from it; the caller's own cancel is
  ``derived: ABANDONED``; otherwise the tracker decides ``derived`` from what the caller
  does next, by the task's *context*: a new task in the same context after a failed one
  is a retry, the same context sent to another agent a switch); so does an error answer
  to a new send, or a plain message reply; a task left waiting or running ends after
  ``quiet_seconds`` without a turn (reporters.proxy.tasks).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

from a2a.types.a2a_pb2 import TaskState
from aiohttp import web

from reporters.protocols import a2a, a2a_shapes, jsonrpc
from reporters.protocols.answers import parse_strict
from reporters.protocols.sse import Event
from reporters.proxy.holding import TRACKED, Measured
from reporters.proxy.measure import promises_kept, task_hash
from reporters.proxy.protocol_call import FORWARD_FAILURES, ProtocolCall, ProxyServices
from reporters.proxy.relay import Buffered, Streamed
from reporters.proxy.tasks import OpenTask, TaskTurn


def _and(a: bool | None, b: bool | None) -> bool | None:
    """Both known: both; one known: it; neither: None."""
    if a is None:
        return b
    return a if b is None else a and b


@dataclass
class _Seen:
    """What this call has shown of its task so far."""

    asked: a2a.Asked
    turns: list[a2a.Turn] = field(default_factory=list)
    first_ms: int | None = None  # to this call's first answer (or event)
    final_ms: int | None = None  # to the answer or event that first showed a final state
    well_formed: bool | None = None
    error_code: int | None = None
    ended: bool = False
    #: a streaming call: whether it was answered with a clean stream of valid events
    streamed: bool | None = None
    deviations: set[str] = field(default_factory=set)

    def answer(self, doc: object, latency_ms: int) -> a2a.Turn | None:
        """Read one JSON-RPC answer (a body, or a stream event's data)."""
        if self.first_ms is None:
            self.first_ms = latency_ms
        got = jsonrpc.read_answer(doc)
        if got is None:
            self.well_formed = False
            return None
        if got.error_code is not None:
            self.error_code = got.error_code
            self.well_formed = _and(self.well_formed, True)
            return None
        turn, deviations = a2a_shapes.read_result(self.asked.kind, self.asked.version,
                                                  got.result)
        self.deviations |= deviations
        self.well_formed = _and(self.well_formed, turn is not None)
        if turn is not None:
            self.turns.append(turn)
            if self.final_ms is None and a2a.is_final(turn.state):
                self.final_ms = latency_ms
        return turn


class A2ACalls:
    def __init__(self, proxy: ProxyServices) -> None:
        self.proxy = proxy

    async def close(self) -> None:
        """Nothing of its own runs in the background (the tasks are the proxy's)."""

    async def handle(self, call: ProtocolCall, rpc: jsonrpc.Request) -> web.StreamResponse:
        p = self.proxy
        asked = a2a.read_request(rpc.method, rpc.params)
        task = None if asked is None else p.facts.tasks.find(call.route.agent, call.caller,
                                                             asked.task_id)
        if asked is None or (asked.kind in ("get", "cancel", "resubscribe") and task is None):
            p.metrics.protocol_calls.labels(call.route.prefix, "a2a", "none").inc()
            return await p.pass_through(call)  # bookkeeping, or a task we do not follow
        p.metrics.protocol_calls.labels(call.route.prefix, "a2a", "fact").inc()
        return await _TaskCall(p, call, asked, task).relay()


class _TaskCall:
    """One call that is a turn of a task this caller follows, or starts one: relayed, read,
    and its task's fact held or ended."""

    def __init__(self, p: ProxyServices, call: ProtocolCall, asked: a2a.Asked,
                 task: OpenTask | None) -> None:
        self.p, self.call, self.asked, self.task = p, call, asked, task
        self.agent = call.route.agent
        self.interaction = task.interaction if task is not None else p.next_interaction()
        self.seen = _Seen(asked)
        self.base = p.facts.measured(self.interaction) or Measured(
            self.agent, call.caller, p.timestamp(call.wall), True, None, None, {}, None, None)
        self.request_task = task_hash("POST", call.sub_path, call.query, call.body)
        self.unlisted = task.unlisted_skill if task is not None else a2a.unlisted_skill(
            p.cards.declared(call.route.prefix), asked)
        self.call_started = p.now()
        if task is None:
            p.facts.tasks.begin(self.interaction, self.call_started)
        self.provisional: asyncio.Task[None] | None = None

    async def relay(self) -> web.StreamResponse:
        """Hold the fact, forward the call, then judge what came back."""
        self._hold_provisional()
        try:
            relayed = await self.p.forward(self.call, on_start=self._on_start,
                                           on_event=self._on_event)
        except FORWARD_FAILURES as exc:
            return await self._unanswered(exc)
        if isinstance(relayed, Streamed):
            return await self._after_stream(relayed)
        return await self._after_answer(relayed)

    def _hold_provisional(self) -> None:
        # A stream's headers carry the interaction id, so its fact must be on disk
        # before they go back. Held while the request is upstream, the fsync overlaps
        # the agent's own time and does not delay the first event. Until an answer
        # comes, the record says none came (a crash then reports just that).
        if self.asked.kind in ("stream", "resubscribe"):
            self.provisional = asyncio.create_task(self.p.facts.hold_open(
                self.interaction, replace(self.base, answered=self.task is not None),
                self._context_key(), TaskTurn(self.asked.task_id, None, self.unlisted)))

    async def _on_start(self) -> dict[str, str]:
        if self.provisional is not None:
            await self.provisional
        else:
            await self.p.facts.hold_open(self.interaction, self._measured(),
                                         self._context_key(), TaskTurn(None, None, self.unlisted))
        return self.p.marks(self.interaction)

    async def _on_event(self, event: Event, latency_ms: int) -> None:
        ok, doc = parse_strict(event.data)
        self.seen.answer(doc if ok else None, latency_ms)
        if self.seen.turns or self.seen.error_code is not None:
            await self._decide()

    async def _unanswered(self, exc: BaseException) -> web.Response:
        p = self.p
        if self.provisional is not None:
            await self.provisional  # written in order: the end below comes after it
        if self.task is not None:
            return p.failure(exc, {})
        # nothing began: a call the agent did not answer
        m = replace(self.base, answered=False, latency_ms=None, well_formed=None,
                    promises=promises_kept(False, None, p.config.promises.get(self.agent, {})))
        await p.facts.end(self.interaction, m, self.request_task, False)
        return p.failure(exc, p.marks(self.interaction))

    async def _after_stream(self, relayed: Streamed) -> web.StreamResponse:
        seen = self.seen
        if not seen.ended:  # the stream ended before the task did: it was cut,
            # unless the task waits for the caller (a stream stops there in A2A)
            seen.streamed = relayed.clean and relayed.events > 0 and \
                seen.well_formed is not False and _latest_state(seen.turns) in a2a.WAITING
            if relayed.events == 0:
                seen.well_formed = False
            await self._decide()
        return relayed.response

    async def _after_answer(self, relayed: Buffered) -> web.Response:
        if self.provisional is not None:
            await self.provisional
        _judge_buffered(self.seen, relayed)
        if self.asked.kind in ("stream", "resubscribe"):
            self.seen.streamed = False  # a streaming call answered without a stream
        await self._decide()
        return self.p.respond(relayed, self.p.marks(self.interaction))

    def _latency(self) -> int | None:
        """To the answer that showed the final state, from the task's first call
        (SPEC §4, r4); until then the first answer's."""
        if self.seen.final_ms is not None:
            started = self.p.facts.tasks.started(self.interaction)
            before = 0 if started is None else round((self.call_started - started) * 1000)
            return max(0, before) + self.seen.final_ms
        return self.base.latency_ms if self.base.latency_ms is not None else self.seen.first_ms

    def _measured(self) -> Measured:
        p, seen, base, prefix = self.p, self.seen, self.base, self.call.route.prefix
        p.deviations.seen(prefix, self.agent, seen.deviations)
        promises = dict(promises_kept(True, self._latency(),
                                      p.config.promises.get(self.agent, {})))
        card = a2a.card_promises(p.cards.declared(prefix), self.asked, seen.turns,
                                 seen.streamed)
        for name, kept in {**base.promises, **card}.items():
            promises[name] = kept and base.promises.get(name, True) and card.get(name, True)
        return replace(base, answered=True, latency_ms=self._latency(),
                       well_formed=_and(base.well_formed, seen.well_formed), promises=promises)

    def _context_key(self) -> str:
        for turn in reversed(self.seen.turns):
            if turn.context_id:
                return "a2a-context:" + turn.context_id
        if self.task is None:
            return self.request_task
        return self.p.facts.task_key(self.interaction, self.request_task)

    async def _decide(self) -> None:
        """After an answer or an event: end the task, or hold its new turn."""
        seen = self.seen
        if seen.ended:
            return
        last = seen.turns[-1] if seen.turns else None
        state = last.state if last is not None else None
        final = last is not None and a2a.is_final(state)
        if final and seen.streamed is None and self.asked.kind in ("stream", "resubscribe"):
            seen.streamed = seen.well_formed is not False  # it got this far
        m = self._measured()
        if final:
            assert state is not None
            await self._end_at_final_state(m, state)
        elif self.task is None and (last is None or last.task_id is None):
            await self._end_without_task(m)
        else:
            task_id = last.task_id if last is not None else None
            await self.p.facts.hold_open(self.interaction, m, self._context_key(), TaskTurn(
                task_id, _latest_state(seen.turns), self.unlisted))

    async def _end_at_final_state(self, m: Measured, state: int) -> None:
        self.seen.ended = True
        # A cancel by a signed caller is its own (tasks are found by caller); an unsigned
        # one may be anybody's: nothing can be said (null), as for every unsigned
        # caller's derived.
        cancelled = state == TaskState.TASK_STATE_CANCELED and \
            self.asked.kind == "cancel" and self.call.caller is not None
        satisfactory = state == TaskState.TASK_STATE_COMPLETED and m.well_formed is not False
        claimed = a2a.STATE_CLAIMS[state]
        if claimed == "FAILURE" and self.unlisted is not None:
            # asked for a skill the card does not offer: refused, not failed
            claimed = "DECLINED"
        await self.p.facts.end(self.interaction, replace(m, claimed=claimed),
                               self._context_key(), satisfactory,
                               "ABANDONED" if cancelled else TRACKED)

    async def _end_without_task(self, m: Measured) -> None:
        """A new send answered without a task: an error, a bad answer, a message."""
        seen = self.seen
        seen.ended = True
        claimed = None if seen.error_code is None else a2a.error_claim(seen.error_code)
        satisfactory = seen.error_code is None and m.well_formed is True
        await self.p.facts.end(self.interaction, replace(m, claimed=claimed),
                               self._context_key(), satisfactory)


def _judge_buffered(seen: _Seen, up: Buffered) -> None:
    ok, doc = parse_strict(up.body)
    if not ok or (up.status >= 400 and not isinstance(doc, dict)):
        seen.first_ms = up.latency_ms
        seen.well_formed = False
        return
    seen.answer(doc, up.latency_ms)


def _latest_state(turns: list[a2a.Turn]) -> int | None:
    for turn in reversed(turns):
        if turn.state is not None:
            return turn.state
    return None
