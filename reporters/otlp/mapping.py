"""Agent-invocation spans -> facts (SPEC §4): pure, no I/O, no clock.

docs/proxy.md ("The OTLP receiver") has the table this module implements; a test per row
holds the two together. In short:

* **Which spans.** A span is an agent invocation when ``gen_ai.operation.name`` is
  ``invoke_agent`` (any span kind); or it is a CLIENT span of an MCP ``tools/call``
  (``mcp.method.name``, or ``rpc.method`` in the older RPC conventions); or a CLIENT
  span of an A2A send (``rpc.method`` one of A2A 0.3's or 1.0's send methods, a span of
  ``a2a-sdk``'s client transports named ``….send_message`` or
  ``….send_message_streaming``, or any CLIENT span carrying ``a2a.task.state``). Other
  spans (model calls, HTTP, databases) are not the bureau's: they are ignored and counted.
* **Whom.** The subject comes from the operator's tables, looked up in this order:
  ``gen_ai.agent.id``, ``gen_ai.agent.name``, ``server.address`` (or the older
  ``net.peer.name``). No entry: the span is *not mapped* — counted, logged, and never
  guessed.
* **What happened.** ``a2a.task.state`` first (``completed`` SUCCESS, ``failed``
  FAILURE, ``rejected`` DECLINED, ``canceled`` derived ABANDONED; 0.3 and 1.0
  spellings); else ``error.type = tool_error`` (MCP ``isError``) is FAILURE; else an
  error status or ``error.type`` on an ``invoke_agent`` span that is not CLIENT (the
  agent's own run, in process or on its server) is FAILURE: it ran and ended in an
  error (SPEC §4, r4); else, on a CLIENT span, an error with a response seen (an HTTP or
  JSON-RPC status on the span, or a numeric ``error.type``) is answered with no claim,
  and without one it is *not answered* (a timeout, a refused connection); else
  answered, no claim.
* **The rest.** ``latency_ms`` is the span's duration (answered spans), ``observed_at``
  its end (whole seconds, UTC), the interaction ``otel:<trace id>:<span id>`` — so a
  span exported twice is the same fact, byte for byte, and the bureau answers
  ``duplicate``.

Speed: this runs for every span of every export, so it reads attributes in one pass into
a small dict of the names it knows, and builds plain dicts (no model validation; a test
holds what it builds to :class:`reporters.models.FactPayload`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

# The attribute names read, current conventions first, then the older ones that
# instrumentations still emit by default (GenAI conventions up to v1.36, RPC and HTTP
# conventions before their renames).
OPERATION = "gen_ai.operation.name"
AGENT_ID = "gen_ai.agent.id"
AGENT_NAME = "gen_ai.agent.name"
SERVER_ADDRESS = "server.address"
OLD_SERVER_ADDRESS = "net.peer.name"
ERROR_TYPE = "error.type"
MCP_METHOD = "mcp.method.name"
RPC_METHOD = "rpc.method"
TASK_STATE = "a2a.task.state"
#: any of these on a span means a response came back (an HTTP or JSON-RPC status)
RESPONSE_STATUS = ("http.response.status_code", "http.status_code",
                   "rpc.response.status_code", "rpc.jsonrpc.error_code")

_READ = frozenset({OPERATION, AGENT_ID, AGENT_NAME, SERVER_ADDRESS, OLD_SERVER_ADDRESS,
                   ERROR_TYPE, MCP_METHOD, RPC_METHOD, TASK_STATE, *RESPONSE_STATUS})

#: A2A 0.3 and 1.0 methods that send work to an agent (polls and cancels are not new
#: interactions)
A2A_SEND_METHODS = frozenset({"message/send", "message/stream", "SendMessage",
                              "SendStreamingMessage"})
_A2A_SDK_CLIENT = "a2a.client.transports."
_A2A_SDK_SENDS = (".send_message", ".send_message_streaming")

#: The attributes a subject is looked up by, in order; each names a table of the config.
SUBJECT_KEYS = (AGENT_ID, AGENT_NAME, SERVER_ADDRESS)

_CLIENT = Span.SpanKind.SPAN_KIND_CLIENT
_ERROR = Status.StatusCode.STATUS_CODE_ERROR
_MAX_LATENCY_MS = 86_400_000

#: a2a.task.state (A2A 0.3 ``completed``, 1.0 ``TASK_STATE_COMPLETED``) -> (claimed, derived)
_TASK_OUTCOMES: dict[str, tuple[str | None, str | None]] = {
    "completed": ("SUCCESS", None),
    "failed": ("FAILURE", None),
    "rejected": ("DECLINED", None),
    "canceled": (None, "ABANDONED"),
}


def task_state(value: str) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` or ``input-required`` -> ``input-required``."""
    state = value.removeprefix("TASK_STATE_").lower().replace("_", "-")
    return "canceled" if state == "cancelled" else state


@dataclass(frozen=True)
class Subjects:
    """The operator's tables: for each of :data:`SUBJECT_KEYS`, attribute value -> the
    agent's key id."""

    tables: Mapping[str, Mapping[str, str]]

    def lookup(self, attrs: Mapping[str, Any]) -> str | None:
        for name in SUBJECT_KEYS:
            value = attrs.get(name)
            if value is None and name == SERVER_ADDRESS:
                value = attrs.get(OLD_SERVER_ADDRESS)
            if isinstance(value, str):
                subject = self.tables.get(name, {}).get(value)
                if subject is not None:
                    return subject
        return None


@dataclass
class Mapped:
    """What one export request came to."""

    facts: list[dict[str, Any]] = field(default_factory=list)
    #: spans that are not agent invocations
    ignored: int = 0
    #: agent-invocation spans not turned into facts, by reason
    not_mapped: dict[str, int] = field(default_factory=dict)
    #: for the log: what identified each unmapped agent (a few)
    unmapped_agents: list[str] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return sum(self.not_mapped.values())

    def refuse(self, reason: str) -> None:
        self.not_mapped[reason] = self.not_mapped.get(reason, 0) + 1


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return None if kind is None else getattr(any_value, kind)


def _is_agent_invocation(span: Span, attrs: Mapping[str, Any]) -> bool:
    if attrs.get(OPERATION) == "invoke_agent":
        return True
    if span.kind != _CLIENT:
        return False
    if attrs.get(MCP_METHOD) == "tools/call" or TASK_STATE in attrs:
        return True
    method = attrs.get(RPC_METHOD)
    if method == "tools/call" or method in A2A_SEND_METHODS:
        return True
    name = span.name
    return name.startswith(_A2A_SDK_CLIENT) and name.endswith(_A2A_SDK_SENDS)


def outcome(span: Span, attrs: Mapping[str, Any]) -> tuple[bool, str | None, str | None]:
    """``(answered, claimed, derived)`` of an agent-invocation span."""
    state = attrs.get(TASK_STATE)
    if isinstance(state, str):
        claimed, derived = _TASK_OUTCOMES.get(task_state(state), (None, None))
        return True, claimed, derived
    error = attrs.get(ERROR_TYPE)
    if error == "tool_error":
        return True, "FAILURE", None
    if span.status.code == _ERROR or error is not None:
        if span.kind != _CLIENT and attrs.get(OPERATION) == "invoke_agent":
            # the agent's own run span (pydantic-ai's, an agent server's): whatever it
            # raised, it was reached and ran; only a caller's CLIENT span can see that
            # nobody answered
            return True, "FAILURE", None
        responded = (isinstance(error, str) and error.isdigit()) or any(
            name in attrs for name in RESPONSE_STATUS)
        return responded, None, None
    return True, None, None


def _timestamp(unix_nano: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix_nano // 1_000_000_000))


def _spans(request: ExportTraceServiceRequest) -> Iterator[Span]:
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            yield from scope_spans.spans


def map_request(request: ExportTraceServiceRequest, subjects: Subjects,
                promises: Mapping[str, Mapping[str, int]]) -> Mapped:
    """Every span of ``request``: a fact, ignored, or not mapped (and why)."""
    out = Mapped()
    facts = out.facts
    for span in _spans(request):
        attrs = {kv.key: _value(kv.value) for kv in span.attributes if kv.key in _READ}
        if not _is_agent_invocation(span, attrs):
            out.ignored += 1
            continue
        subject = subjects.lookup(attrs)
        if subject is None:
            out.refuse("unmapped_agent")
            if len(out.unmapped_agents) < 5:
                out.unmapped_agents.append(", ".join(
                    f"{k}={attrs[k]!r}" for k in (*SUBJECT_KEYS, OLD_SERVER_ADDRESS)
                    if k in attrs) or "no agent id, name or server address")
            continue
        trace_id, span_id = span.trace_id, span.span_id
        start, end = span.start_time_unix_nano, span.end_time_unix_nano
        if len(trace_id) != 16 or len(span_id) != 8 or not any(trace_id) or \
                not any(span_id) or not 0 < start <= end:
            out.refuse("bad_span")
            continue
        answered, claimed, derived = outcome(span, attrs)
        latency = min((end - start) // 1_000_000, _MAX_LATENCY_MS) if answered else None
        bounds = promises.get(subject)
        facts.append({
            "interaction": f"otel:{trace_id.hex()}:{span_id.hex()}",
            "subject": subject, "caller": None, "observed_at": _timestamp(end),
            "answered": answered, "latency_ms": latency, "well_formed": None,
            "promises": [] if not bounds else [
                {"promise": p, "kept": latency is not None and latency <= max_ms}
                for p, max_ms in bounds.items()],
            "claimed": claimed, "check": None, "derived": derived, "engagement": None,
        })
    return out
