"""What an export may decode to, and how long its bytes may take (issue 35): every bound
of ``[limits]`` refused at ``413`` naming it and counted, the walk equal to protobuf's own
reading, the decoding queue bounded, head and body deadlines. The memory of the issue's
bomb in a real receiver process is in tests/otlp/test_bomb.py."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace.export import SpanExportResult

from reporters.otlp.bounds import (
    Limits,
    OverLimit,
    check_json_size,
    count_json,
    scan_protobuf,
)
from reporters.otlp.decode import NotOtlp
from reporters.otlp.mapping import Subjects
from reporters.otlp.work import (
    INLINE_BYTES,
    Decoder,
    Refused,
    Request,
    Rules,
    decode_and_map,
    inline,
)
from tests.client.helpers import DEAD_URL
from tests.otlp.support import agent_spans, export, running_receiver
from tests.proxy.support import new_agent, stalled
from tests.support import until

PROTOBUF = {"Content-Type": "application/x-protobuf"}
SPEC = {"attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Tutor"}}


def _settings(**limits: int) -> dict[str, Any]:
    return {"agent_names": {"Tutor": new_agent()}, "limits": limits}


def _request(spans: int = 1, attributes: int = 0, events: int = 0, links: int = 0,
             scopes: int = 1) -> ExportTraceServiceRequest:
    """An export built with opentelemetry-proto's own types."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.add(key="service.name", value=AnyValue(string_value="svc"))
    for s in range(scopes):
        ss = rs.scope_spans.add()
        for i in range(spans if s == 0 else 0):
            span = ss.spans.add(trace_id=bytes([1] * 16), span_id=bytes([2] * 8),
                                name=f"s{i}")
            for a in range(attributes):
                span.attributes.add(key=f"a{a}", value=AnyValue(int_value=a))
            for _ in range(events):
                span.events.add(name="e")
            for _ in range(links):
                span.links.add(trace_id=bytes([3] * 16), span_id=bytes([4] * 8))
    return req


def _nested(depth: int) -> ExportTraceServiceRequest:
    """One span whose one attribute is a key-value list ``depth`` lists deep."""
    req = _request()
    value = AnyValue(string_value="bottom")
    for _ in range(depth):
        outer = AnyValue()
        outer.kvlist_value.values.append(KeyValue(key="k", value=value))
        value = outer
    req.resource_spans[0].scope_spans[0].spans[0].attributes.append(
        KeyValue(key="deep", value=value))
    return req


def test_the_walk_counts_what_protobuf_reads() -> None:
    req = _request(spans=7, attributes=3, events=2, links=1, scopes=2)
    counts = scan_protobuf(req.SerializeToString(), Limits())
    assert counts["max_spans"] == 7
    assert counts["max_blocks"] == 1 + 2
    assert counts["max_attributes"] == 1 + 7 * 3  # the resource's, and each span's
    assert (counts["max_events"], counts["max_links"]) == (14, 7)
    # a message concatenated to itself is, by protobuf's rules, the two merged
    twice = scan_protobuf(req.SerializeToString() * 2, Limits())
    assert twice["max_spans"] == 14
    as_json = json_format.MessageToDict(req)
    assert count_json(as_json, Limits()) == {k: v for k, v in counts.items()
                                             if k != "max_fields"}
    snake = json_format.MessageToDict(req, preserving_proto_field_name=True)
    assert count_json(snake, Limits()) == count_json(as_json, Limits())


def _with_array(values: int, nested: int = 0) -> ExportTraceServiceRequest:
    """One span whose one attribute is an array of ``values`` empty values, each of the
    first ``nested`` of them an array of one value itself."""
    req = _request()
    outer = AnyValue()
    for i in range(values):
        item = outer.array_value.values.add()
        if i < nested:
            item.array_value.values.add(string_value="inner")
    req.resource_spans[0].scope_spans[0].spans[0].attributes.append(
        KeyValue(key="list", value=outer))
    return req


def test_the_values_of_arrays_count_as_attributes() -> None:
    """An array's values were held by max_fields alone (2 million empty values in 3.9 KB
    of gzip cost 92 MB): they count against max_attributes like key-value pairs, in
    protobuf and in JSON alike, arrays in arrays too."""
    req = _with_array(values=5, nested=2)
    counts = scan_protobuf(req.SerializeToString(), Limits())
    assert counts["max_attributes"] == 1 + 1 + 5 + 2  # resource's, the span's, 5 + 2 values
    assert count_json(json_format.MessageToDict(req), Limits())["max_attributes"] == 9
    big = _with_array(values=20_000).SerializeToString()
    with pytest.raises(OverLimit) as caught:
        scan_protobuf(big, Limits(max_attributes=10_000))
    assert caught.value.limit == "attributes"


@pytest.mark.parametrize(("limit", "request_", "label"), [
    pytest.param({"max_spans": 5}, _request(spans=6), "spans", id="spans"),
    pytest.param({"max_blocks": 3}, _request(scopes=3), "blocks", id="blocks"),
    pytest.param({"max_attributes": 10}, _request(spans=2, attributes=5), "attributes",
                 id="attributes"),
    pytest.param({"max_events": 3}, _request(events=4), "events", id="events"),
    pytest.param({"max_links": 3}, _request(links=4), "links", id="links"),
    pytest.param({"max_depth": 10}, _nested(4), "depth", id="depth"),
    pytest.param({"max_fields": 30}, _request(spans=8), "fields", id="fields"),
    pytest.param({"max_json_tokens": 30}, _request(spans=8), "json_tokens", id="json-tokens"),
])
async def test_each_bound_is_413_naming_it_and_counted(
        tmp_path: Path, limit: dict[str, int], request_: ExportTraceServiceRequest,
        label: str) -> None:
    bodies = [(request_.SerializeToString(), PROTOBUF),
              (gzip.compress(request_.SerializeToString()),
               {**PROTOBUF, "Content-Encoding": "gzip"}),
              (json_format.MessageToJson(request_).encode(),
               {"Content-Type": "application/json"})]
    # each encoding spends the budget of its own: fields protobuf's, tokens JSON's
    if label == "fields":
        bodies = bodies[:2]
    elif label == "json_tokens":
        bodies = bodies[2:]
    async with running_receiver(tmp_path, DEAD_URL, **_settings(**limit)) as r:
        for body, headers in bodies:
            async with r.session.post(r.url, data=body, headers=headers) as resp:
                assert resp.status == 413, await resp.text()
                assert next(iter(limit)) in (await resp.json())["message"]
        assert await r.metric("bureau_otlp_limits_total", limit=label) == len(bodies)
        assert await r.metric("bureau_otlp_requests_total",
                              result="too_large") == len(bodies)


async def test_a_body_just_within_every_bound_is_taken(tmp_path: Path) -> None:
    async with running_receiver(tmp_path, DEAD_URL, **_settings(max_spans=2)) as r:
        spans = agent_spans([SPEC, SPEC])
        assert await export(r.url, spans) == SpanExportResult.SUCCESS
        assert await export(r.url, spans, gzip=True) == SpanExportResult.SUCCESS
        assert await export(r.url, spans, "json") == SpanExportResult.SUCCESS
        assert await export(r.url, agent_spans([SPEC] * 3)) == SpanExportResult.FAILURE


def test_json_is_bounded_before_it_is_parsed() -> None:
    body = json.dumps({"resourceSpans": [{}] * 100}).encode()  # 1 string, 101 objects, 1 array
    with pytest.raises(OverLimit) as caught:
        check_json_size(body, Limits(max_json_tokens=102))
    assert caught.value.limit == "json_tokens"
    check_json_size(body, Limits(max_json_tokens=103))


@pytest.mark.parametrize(("limit", "request_"), [
    pytest.param({"max_spans": 5}, _request(spans=6), id="spans"),
    pytest.param({"max_attributes": 10}, _request(spans=2, attributes=5), id="attributes"),
    pytest.param({"max_depth": 10}, _nested(4), id="depth"),
])
def test_json_is_counted_before_json_format_builds_it(
        limit: dict[str, int], request_: ExportTraceServiceRequest) -> None:
    """Counting the message json_format had built came too late: 2 million empty spans
    in 5.7 MiB of JSON were built (475 MB, 39 s) before max_spans refused them. So the
    parsed document is counted first — seen here because a span json_format would refuse
    (a trace id that is not hex) does not hide the bound from it."""
    doc = json_format.MessageToDict(request_)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]["traceId"] = 5
    body = json.dumps(doc).encode()
    rules = Rules(1 << 24, Limits(**limit), Subjects({}), {})
    with pytest.raises(Refused) as caught:
        decode_and_map(Request(body, "", "application/json"), rules)
    assert caught.value.status == 413 and next(iter(limit)) in caught.value.reason
    with pytest.raises(NotOtlp) as unbounded:  # within the bounds: json_format's answer
        decode_and_map(Request(body, "", "application/json"), Rules(
            1 << 24, Limits(), Subjects({}), {}))
    assert unbounded.value.status == 400


def test_only_small_plain_protobuf_is_decoded_on_the_event_loop() -> None:
    """16 KiB of JSON values cost json_format 120 ms on the event loop (the same in
    protobuf: 6 ms), so JSON, however small, is decoded in the worker thread."""
    small = _request().SerializeToString()
    as_json = json_format.MessageToJson(_request()).encode()
    assert len(small) < 1024 and len(as_json) < 1024
    assert inline(Request(small, "", "application/x-protobuf"))
    assert not inline(Request(small, "gzip", "application/x-protobuf"))
    assert not inline(Request(small * (INLINE_BYTES // len(small) + 1), "",
                              "application/x-protobuf"))
    assert not inline(Request(as_json, "", "application/json; charset=utf-8"))


async def test_the_decoding_queue_is_bounded() -> None:
    decoder = Decoder(queue=1)
    decoder.start()
    release = threading.Event()
    try:
        first = asyncio.create_task(decoder.run(release.wait))
        second = asyncio.create_task(decoder.run(release.wait))
        await until("both handed to the thread", lambda: decoder.waiting == 2)
        with pytest.raises(Refused) as caught:
            await decoder.run(lambda: True)
        assert (caught.value.status, caught.value.limit) == (503, "decode_queue")
        release.set()
        assert await first and await second
        assert await decoder.run(lambda: 42) == 42  # room again
    finally:
        release.set()
        decoder.close()


async def test_a_body_that_does_not_arrive_is_408_within_body_seconds(tmp_path: Path) -> None:
    async with running_receiver(tmp_path, DEAD_URL, body_seconds=0.5,
                                **_settings()) as r:
        answer = await stalled(r.url, b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: "
                               b"application/x-protobuf\r\nContent-Length: 10\r\n\r\n\x0a")
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert await r.metric("bureau_otlp_limits_total", limit="body_seconds") == 1
        assert await r.metric("bureau_otlp_requests_total", result="too_slow") == 1


async def test_a_head_that_does_not_arrive_is_cut_at_header_seconds(tmp_path: Path) -> None:
    async with running_receiver(tmp_path, DEAD_URL, header_seconds=0.5,
                                **_settings()) as r:
        # the head, and never the rest: closed, no answer
        assert await stalled(r.url, b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n") == b""
        assert await r.metric("bureau_otlp_limits_total", limit="header_seconds") == 1
        # an honest exporter on a connection of its own is answered as ever
        assert await export(r.url, agent_spans([SPEC])) == SpanExportResult.SUCCESS
        async with aiohttp.ClientSession() as session, session.get(
                r.ops_url + "/healthz") as resp:
            assert resp.status == 200
