"""The issue's bomb against a real receiver process (issue 35): a gzip body of a few KB
holding 4 million empty spans. Before, protobuf built them all and the mapping walked
them on the event loop (RSS 69 → 751 MB, 11–16 s, an honest export meanwhile waited
10–15 s). Now the walk stops at ``max_spans``: the answer is ``413`` and the process's
peak memory (``VmHWM``, read from /proc) hardly moves; honest exports sent meanwhile
are answered. Timing targets are in bench/bounds_bench.py, not here."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import aiohttp
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult

import reporters
from tests.otlp.support import agent_spans, export
from tests.otlp.test_crash import OtlpProcess
from tests.proxy.support import new_agent
from tests.support import BureauUnderTest

pytestmark = pytest.mark.slow

SPEC = {"attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Tutor"}}


def span_bomb(spans: int) -> bytes:
    """``spans`` empty spans, gzipped: a request of 1,000 empty spans encoded by
    opentelemetry-proto, repeated (by protobuf's rules, messages concatenated are one
    message whose repeated fields are joined)."""
    piece = ExportTraceServiceRequest()
    scope = piece.resource_spans.add().scope_spans.add()
    for _ in range(1000):
        scope.spans.add()
    return gzip.compress(piece.SerializeToString() * (spans // 1000), 9)


def peak_rss_kb(pid: int) -> int:
    """The process's peak resident memory (``VmHWM``), in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


async def test_the_issues_bomb_is_refused_cheaply_and_honest_exports_are_answered(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    reporters.save_key(key, tmp_path / "r.key")
    (tmp_path / "otlp.json").write_text(json.dumps({
        "bureau_url": bureau.url, "key_file": "r.key", "spool_dir": "spool",
        "agent_names": {"Tutor": new_agent()}}))
    proc = OtlpProcess(tmp_path / "otlp.log", "--config", str(tmp_path / "otlp.json"))
    await proc.start()
    bomb = span_bomb(4_000_000)
    assert len(bomb) < 16_000  # a few KB of gzip
    try:
        assert proc.proc is not None
        url = proc.urls[0]
        assert await export(url, agent_spans([SPEC])) == SpanExportResult.SUCCESS
        before = peak_rss_kb(proc.proc.pid)

        async def send_bomb(session: aiohttp.ClientSession) -> tuple[int, str]:
            async with session.post(url, data=bomb, headers={
                    "Content-Type": "application/x-protobuf",
                    "Content-Encoding": "gzip"}) as resp:
                return resp.status, await resp.text()

        async with aiohttp.ClientSession() as session:
            bombs = [asyncio.create_task(send_bomb(session)) for _ in range(3)]
            honest = [await export(url, agent_spans([SPEC])) for _ in range(3)]
            answers = await asyncio.gather(*bombs)
        assert honest == [SpanExportResult.SUCCESS] * 3
        for status, text in answers:
            assert status in (413, 503), text  # 503: the decoding queue was full
            assert status == 503 or "max_spans" in text
        assert any(status == 413 for status, _ in answers)
        grew = peak_rss_kb(proc.proc.pid) - before
        # before: +680 MB for one bomb; the walk holds the 8 MB inflated body, no more
        assert grew < 64 * 1024, f"peak RSS grew {grew / 1024:.0f} MB"
    finally:
        await proc.stop()
