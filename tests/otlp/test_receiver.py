"""The OTLP receiver end to end: spans made by the OpenTelemetry SDK, exported by its
OTLP/HTTP exporters (protobuf and JSON, gzip or not) to the receiver on loopback, become
the facts docs/proxy.md says, in the spool file; a re-sent export is the same fact; what is
not OTLP is a 400 with a reason; an agent the config does not name is counted, not guessed."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from reporters import wire
from reporters.models import FactPayload
from tests.client.helpers import DEAD_URL
from tests.otlp.support import agent_spans, export, ids, running_receiver, spooled_facts
from tests.proxy.support import ledger_facts, new_agent
from tests.support import BureauUnderTest

TUTOR, TOOLS, PEER = new_agent(), new_agent(), new_agent()
TABLES: dict[str, Any] = {"agent_names": {"Math Tutor": TUTOR},
                          "agent_ids": {"asst_tools": TOOLS},
                          "server_addresses": {"peer.agents.internal": PEER}}

SPANS = [
    {"name": "invoke_agent Math Tutor",
     "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Math Tutor"}},
    {"name": "tools/call search", "attributes": {
        "mcp.method.name": "tools/call", "gen_ai.agent.id": "asst_tools",
        "error.type": "tool_error"}, "error": "tool_error"},
    {"name": "SendMessage", "attributes": {
        "rpc.method": "SendMessage", "server.address": "peer.agents.internal",
        "a2a.task.state": "TASK_STATE_FAILED"}},
    {"name": "chat gpt-4", "attributes": {"gen_ai.operation.name": "chat",
                                          "gen_ai.agent.name": "Math Tutor"}},
]


def _valid(fact: dict[str, Any]) -> dict[str, Any]:
    """The fact as the client's model reads and writes it (it must be unchanged)."""
    assert FactPayload.model_validate(fact).model_dump(mode="json") == fact
    return fact


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
async def test_exported_agent_spans_become_facts(tmp_path: Path, encoding: str,
                                                 compressed: bool) -> None:
    spans = agent_spans(SPANS)
    async with running_receiver(tmp_path, DEAD_URL, drain_seconds=0, **TABLES) as r:
        assert await export(r.url, spans, encoding, compressed) == SpanExportResult.SUCCESS
        assert await r.metric("bureau_otlp_spans_total", result="ignored") == 1
    facts = {f["interaction"]: _valid(f) for f in spooled_facts(tmp_path / "spool")}
    tutor, tool, peer, _chat = spans
    assert set(facts) == {ids(tutor), ids(tool), ids(peer)}  # the chat span is no agent's
    assert {k: facts[ids(tutor)][k] for k in ("subject", "answered", "claimed", "derived")} \
        == {"subject": TUTOR, "answered": True, "claimed": None, "derived": None}
    assert (facts[ids(tool)]["subject"], facts[ids(tool)]["claimed"]) == (TOOLS, "FAILURE")
    assert (facts[ids(peer)]["subject"], facts[ids(peer)]["claimed"]) == (PEER, "FAILURE")
    for span in (tutor, tool, peer):
        assert span.end_time is not None and span.start_time is not None
        fact = facts[ids(span)]
        assert fact["latency_ms"] == (span.end_time - span.start_time) // 1_000_000
        assert fact["observed_at"] == wire_time(span.end_time)


def wire_time(unix_nano: int) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix_nano // 1_000_000_000))


async def test_the_same_export_twice_is_one_fact(bureau: BureauUnderTest,
                                                 tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    spans = agent_spans(SPANS[:3])
    # twice before delivery (a bureau URL where nothing listens, so that nothing is
    # delivered in between): the spool holds each envelope once
    async with running_receiver(tmp_path, DEAD_URL, key=key, drain_seconds=0,
                                **TABLES) as r:
        for encoding in ("protobuf", "json"):
            assert await export(r.url, spans, encoding) == SpanExportResult.SUCCESS
        assert len(spooled_facts(tmp_path / "spool")) == 3
    # the same spool, now with the bureau: delivered once; then once more after: the
    # bureau has them, and answers duplicate
    async with running_receiver(tmp_path, bureau.url, key=key, **TABLES) as r:
        await r.receiver.reporter.flush()
        assert await r.metric("bureau_otlp_facts_delivered_total", result="accepted") == 3
        assert await export(r.url, spans, "json", gzip=True) == SpanExportResult.SUCCESS
        await r.receiver.reporter.flush()
        assert await r.metric("bureau_otlp_facts_delivered_total", result="accepted") == 3
        assert await r.metric("bureau_otlp_facts_delivered_total", result="duplicate") == 3
    stored = await ledger_facts(bureau.database_url, wire.signing_key_id(key))
    assert sorted(f["interaction"] for f in stored) == sorted(ids(s) for s in spans)


@pytest.mark.parametrize(("body", "headers", "status", "reason"), [
    (b"GET / HTTP/1.1\r\n", {"Content-Type": "application/x-protobuf"}, 400, "protobuf"),
    (b"[1, 2]", {"Content-Type": "application/json"}, 400, "object is needed"),
    (b'{"resourceSpans": "many"}', {"Content-Type": "application/json"}, 400, "JSON"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5}]}]}]}',
     {"Content-Type": "application/json"}, 400, "JSON"),
    (b"{not json", {"Content-Type": "application/json"}, 400, "not JSON"),
    (b"\x1f\x8b\x08junk", {"Content-Type": "application/json", "Content-Encoding": "gzip"},
     400, "gzip"),
    (b"{}", {"Content-Type": "text/plain"}, 415, "Content-Type"),
    (b"{}", {"Content-Type": "application/json", "Content-Encoding": "br"}, 415, "br"),
    (gzip.compress(b"{" + b" " * 5000 + b"}"),
     {"Content-Type": "application/json", "Content-Encoding": "gzip"}, 413, "inflated"),
], ids=["junk-protobuf", "json-array", "json-wrong-type", "json-bad-id", "not-json",
        "bad-gzip", "wrong-type", "unknown-encoding", "gzip-bomb"])
async def test_a_body_that_is_not_otlp_is_refused_with_a_reason(
        tmp_path: Path, body: bytes, headers: dict[str, str], status: int,
        reason: str) -> None:
    async with running_receiver(tmp_path, DEAD_URL, drain_seconds=0, max_body=4096, **TABLES) as r:
        async with r.session.post(r.url, data=body, headers=headers) as resp:
            assert resp.status == status
            answer = json.loads(await resp.read())
        assert answer["code"] == 3 and reason in answer["message"], answer
        # and the next, good export is taken as usual
        assert await export(r.url, agent_spans(SPANS[:1])) == SpanExportResult.SUCCESS
    assert len(spooled_facts(tmp_path / "spool")) == 1


async def test_unmapped_agents_are_counted_in_partial_success_never_guessed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    spans = agent_spans([
        SPANS[0],
        {"attributes": {"gen_ai.operation.name": "invoke_agent",
                        "gen_ai.agent.name": "Stranger"}},
        {"name": "message/send", "attributes": {"rpc.method": "message/send",
                                                "server.address": "elsewhere.example"}},
        SPANS[3],
    ])
    body = encode_spans(spans).SerializeToString()
    caplog.set_level(logging.WARNING, "reporters.otlp")
    async with running_receiver(tmp_path, DEAD_URL, drain_seconds=0, **TABLES) as r:
        async with r.session.post(r.url, data=body,
                                  headers={"Content-Type": "application/x-protobuf"}) as resp:
            assert resp.status == 200
            answer = ExportTraceServiceResponse.FromString(await resp.read())
        assert answer.partial_success.rejected_spans == 2
        assert "2 unmapped_agent" in answer.partial_success.error_message
        assert await r.metric("bureau_otlp_spans_not_mapped_total",
                              reason="unmapped_agent") == 2
        assert await r.metric("bureau_otlp_requests_total", result="partial") == 1
    assert [f["subject"] for f in spooled_facts(tmp_path / "spool")] == [TUTOR]
    assert "gen_ai.agent.name='Stranger'" in caplog.text
    assert "server.address='elsewhere.example'" in caplog.text


async def test_everything_mapped_answers_without_partial_success(tmp_path: Path) -> None:
    body = encode_spans(agent_spans(SPANS[:1])).SerializeToString()
    async with running_receiver(tmp_path, DEAD_URL, drain_seconds=0, **TABLES) as r:
        async with r.session.post(r.url, data=body,
                                  headers={"Content-Type": "application/x-protobuf"}) as resp:
            answer = ExportTraceServiceResponse.FromString(await resp.read())
        async with r.session.post(r.url, data=b"{}",
                                  headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 200 and json.loads(await resp.read()) == {}
    assert not answer.HasField("partial_success")


@pytest.mark.parametrize("attributes", [
    {"net.peer.name": "peer.agents.internal", "gen_ai.operation.name": "invoke_agent"},
    {"gen_ai.agent.id": "asst_tools", "gen_ai.agent.name": "Math Tutor",
     "gen_ai.operation.name": "invoke_agent"},
], ids=["older-net.peer.name", "agent-id-before-name"])
async def test_the_subject_lookup(tmp_path: Path, attributes: dict[str, Any]) -> None:
    async with running_receiver(tmp_path, DEAD_URL, drain_seconds=0, **TABLES) as r:
        await export(r.url, agent_spans([{"attributes": attributes}]))
    (fact,) = spooled_facts(tmp_path / "spool")
    assert fact["subject"] == (PEER if "net.peer.name" in attributes else TOOLS)


async def test_latency_promises(tmp_path: Path) -> None:
    agents = {TUTOR: {"promises": [{"promise": "fast", "max_ms": 60_000},
                                   {"promise": "instant", "max_ms": 0}]}}
    async with running_receiver(tmp_path, DEAD_URL, drain_seconds=0, agents=agents, **TABLES) as r:
        await export(r.url, agent_spans([{**SPANS[0], "name": "slow"}]))
    (fact,) = spooled_facts(tmp_path / "spool")
    kept = {p["promise"]: p["kept"] for p in fact["promises"]}
    assert kept["fast"] is True
    assert kept["instant"] is (fact["latency_ms"] == 0)
