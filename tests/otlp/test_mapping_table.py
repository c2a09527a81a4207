"""Every row of docs/proxy.md's two OTLP tables ("Which spans, and what they say"),
shown: for each row, spans made by the OpenTelemetry SDK and exported by its OTLP
exporter to a receiver on loopback, and the fact the receiver spooled — or none. The
expected values are read from the table itself: a row without an example here, or an
example without its row, fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanKind

from tests.client.helpers import DEAD_URL
from tests.docs.test_docs import _table_rows
from tests.otlp.support import agent_spans, export, running_receiver, spooled_facts
from tests.proxy.support import new_agent

DOCS = Path(__file__).resolve().parents[2] / "docs"
TEXT = (DOCS / "proxy.md").read_text()
SECTION = TEXT[TEXT.index("### Which spans, and what they say"):]
SPANS_TABLE = _table_rows(SECTION, "| span | becomes |")
OUTCOMES_TABLE = _table_rows(SECTION, "| what the span shows |")

AGENT = new_agent()
TABLES = {"server_addresses": {"peer.agents.internal": AGENT},
          "agent_names": {"Math Tutor": AGENT}}
PEER = {"server.address": "peer.agents.internal"}
INVOKE = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Math Tutor"}
A2A_SDK_SEND = "a2a.client.transports.jsonrpc.JsonRpcTransport.send_message"


def _span(name: str = "span", kind: SpanKind = SpanKind.CLIENT, error: str | None = None,
          **attributes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "kind": kind, "attributes": attributes}
    if error is not None:
        spec["error"] = error
    return spec


def _task(method: str, state: str) -> dict[str, Any]:
    return _span(**{"rpc.method": method, "a2a.task.state": state, **PEER})


#: the first cell of each row of "| span | becomes |" -> spans it covers
SELECTED: dict[str, list[dict[str, Any]]] = {
    "`gen_ai.operation.name = invoke_agent` (any kind)": [
        _span(kind=kind, **INVOKE) for kind in (SpanKind.INTERNAL, SpanKind.CLIENT,
                                                SpanKind.SERVER)],
    "CLIENT, `mcp.method.name = tools/call` (or `rpc.method = tools/call`, older RPC "
    "conventions)": [_span(**{"mcp.method.name": "tools/call", **PEER}),
                     _span(**{"rpc.system": "jsonrpc", "rpc.method": "tools/call", **PEER})],
    "CLIENT, `rpc.method` one of `message/send`, `message/stream`, `SendMessage`, "
    "`SendStreamingMessage`; or a span of `a2a-sdk`'s client transports named "
    "`….send_message` / `….send_message_streaming`; or any CLIENT span with "
    "`a2a.task.state`": [
        *(_span(**{"rpc.method": m, **PEER}) for m in (
            "message/send", "message/stream", "SendMessage", "SendStreamingMessage")),
        _span(A2A_SDK_SEND, **PEER), _span(A2A_SDK_SEND + "_streaming", **PEER),
        _span(**{"a2a.task.state": "working", **PEER})],
    "an LLM client's own spans (`gen_ai.operation.name = chat`, `text_completion`, "
    "`embeddings`: `opentelemetry-instrumentation-openai-v2`, pydantic-ai's model "
    "requests)": [_span(**{"gen_ai.operation.name": op, "gen_ai.agent.name": "Math Tutor",
                           **PEER}) for op in ("chat", "text_completion", "embeddings")],
    "anything else (HTTP, databases, tools run in process)": [
        _span("GET", **{"http.request.method": "GET", **PEER}),
        _span("SELECT", **{"db.system": "postgresql", **PEER}),
        _span("execute_tool add", SpanKind.INTERNAL, **{
            "gen_ai.operation.name": "execute_tool", "gen_ai.agent.name": "Math Tutor"}),
        _span(**{"rpc.method": "tasks/get", **PEER})],  # a poll is no new interaction
    "an agent span whose id, name and server address are in no table": [
        _span(**{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Stranger"}),
        _span(**{"mcp.method.name": "tools/call", "server.address": "elsewhere"})],
}

#: the first cell of each row of "| what the span shows | ..." -> spans it covers
OUTCOMES: dict[str, list[dict[str, Any]]] = {
    "`a2a.task.state` `completed` / `TASK_STATE_COMPLETED`": [
        _task("message/send", "completed"), _task("SendMessage", "TASK_STATE_COMPLETED")],
    "`a2a.task.state` `failed`": [_task("message/stream", "failed"),
                                  _task("SendMessage", "TASK_STATE_FAILED")],
    "`a2a.task.state` `rejected`": [_task("SendStreamingMessage", "TASK_STATE_REJECTED"),
                                    _task("message/send", "rejected")],
    "`a2a.task.state` `canceled`": [_task("message/send", "canceled"),
                                    _task("SendMessage", "TASK_STATE_CANCELLED")],
    "`a2a.task.state` `input-required`, `auth-required`, other": [
        _task("SendMessage", "TASK_STATE_INPUT_REQUIRED"),
        _task("message/send", "auth-required"), _task("message/send", "working")],
    "`error.type = tool_error` (MCP `isError`)": [
        _span(error="tool_error", **{"mcp.method.name": "tools/call",
                                     "error.type": "tool_error", **PEER})],
    "an `invoke_agent` span that is not CLIENT (the agent's own run: pydantic-ai's, an "
    "agent server's) with status ERROR or `error.type`, whatever it raised": [
        _span(kind=SpanKind.INTERNAL, error="ValueError: no", **INVOKE),
        _span(kind=SpanKind.INTERNAL, **{**INVOKE, "error.type": "UnexpectedModelBehavior"}),
        _span(kind=SpanKind.SERVER, error="boom", **INVOKE),
        # what it raised may name a status of its own model call: still its failure
        _span(kind=SpanKind.INTERNAL, error="503", **{**INVOKE, "error.type": "503"}),
        _span(kind=SpanKind.INTERNAL, error="timeout", **{**INVOKE, "error.type": "timeout"})],
    "a CLIENT span with status ERROR or `error.type`, a response seen "
    "(`http.response.status_code`, `http.status_code`, `rpc.response.status_code`, "
    "`rpc.jsonrpc.error_code`, or a numeric `error.type`)": [
        _span(error="503", **{**INVOKE, "error.type": "503"}),
        _span(error="500", **{**INVOKE, "http.response.status_code": 500}),
        _span(error="500", **{"mcp.method.name": "tools/call", "http.status_code": 500,
                              **PEER}),
        _span(error="x", **{"rpc.method": "SendMessage", "rpc.response.status_code": "X",
                            **PEER}),
        _span(error="-32603", **{"rpc.method": "message/send",
                                 "rpc.jsonrpc.error_code": -32603, **PEER})],
    "a CLIENT span with status ERROR or `error.type`, no response seen (a timeout, a "
    "refused connection, a name that does not resolve)": [
        _span(error="timeout", **{**INVOKE, "error.type": "timeout"}),
        _span(error="refused", **{"rpc.method": "SendMessage", **PEER}),
        _span(**{"mcp.method.name": "tools/call", "error.type": "ConnectError", **PEER})],
    "status unset or OK": [_span(kind=SpanKind.INTERNAL, **INVOKE),
                           _span(**{"rpc.system": "jsonrpc", "rpc.method": "tools/call",
                                    **PEER}),
                           _span(A2A_SDK_SEND, **PEER)],
}


def _cell(text: str) -> Any:
    """A cell of the outcomes table as the fact's value."""
    return {"true": True, "false": False, "null": None}.get(text, text.strip("`"))


def test_every_row_has_its_examples_and_every_example_its_row() -> None:
    assert [row[0] for row in SPANS_TABLE] == list(SELECTED)
    assert [row[0] for row in OUTCOMES_TABLE] == list(OUTCOMES)


async def _facts(tmp: Path, specs: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    spans = agent_spans(specs)
    async with running_receiver(tmp, DEAD_URL, drain_seconds=0, **TABLES) as r:
        assert await export(r.url, spans) == SpanExportResult.SUCCESS
    return spans, spooled_facts(tmp / "spool")


@pytest.mark.parametrize("row", SPANS_TABLE, ids=[r[0][:40] for r in SPANS_TABLE])
async def test_which_spans(tmp_path: Path, row: list[str]) -> None:
    specs = SELECTED[row[0]]
    _, facts = await _facts(tmp_path, specs)
    becomes = row[1]
    assert becomes.startswith(("a fact", "ignored", "not mapped")), becomes
    assert len(facts) == (len(specs) if becomes.startswith("a fact") else 0)


@pytest.mark.parametrize("row", OUTCOMES_TABLE, ids=[r[0][:40] for r in OUTCOMES_TABLE])
async def test_what_they_say(tmp_path: Path, row: list[str]) -> None:
    answered, claimed, derived, latency = (_cell(c) for c in row[1:])
    spans, facts = await _facts(tmp_path, OUTCOMES[row[0]])
    assert len(facts) == len(spans)
    by_id = {f["interaction"]: f for f in facts}
    for span in spans:
        context = span.get_span_context()
        assert context is not None and span.start_time and span.end_time
        fact = by_id[f"otel:{context.trace_id:032x}:{context.span_id:016x}"]
        assert (fact["answered"], fact["claimed"], fact["derived"]) == \
            (answered, claimed, derived), span.name
        duration = (span.end_time - span.start_time) // 1_000_000
        assert fact["latency_ms"] == (duration if latency == "the span's duration" else None)
