"""Relayed event streams are capped by the event, not only by the line (issue 35): the
``data:`` lines of an event that never ends are not held, on every relayed stream —
the MCP session's plumbing GET included. Memory is measured in-process (tracemalloc):
the stream is many times ``max_body``, what the proxy holds stays near ``max_body``."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from aiohttp import web

from tests.proxy.support import new_agent, running_proxy, upstream
from tests.support import BureauUnderTest, sample, scrape

MAX_BODY = 1024 * 1024
STREAM_BYTES = 24 * MAX_BODY
LINE = b"data: " + b"x" * (64 * 1024 - 7) + b"\n"  # one data line, never a blank one


async def _endless_event(request: web.Request) -> web.StreamResponse:
    """An MCP server's session stream whose one event never ends."""
    out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await out.prepare(request)
    for _ in range(STREAM_BYTES // len(LINE)):
        await out.write(LINE)
    await out.write_eof()
    return out


async def test_an_endless_event_on_the_mcp_plumbing_get_holds_only_the_cap(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    async with upstream(_endless_event) as up, running_proxy(
            bureau, tmp_path, [{"prefix": "/m", "agent": new_agent(), "upstream": up,
                                "protocol": "mcp"}], max_body=MAX_BODY) as p:
        tracemalloc.start()
        try:
            relayed = 0
            async with p.session.get(p.url + "/m/mcp", headers={
                    "Accept": "text/event-stream", "Mcp-Session-Id": "s-1"}) as resp:
                assert resp.status == 200
                async for chunk in resp.content.iter_any():
                    relayed += len(chunk)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert relayed == STREAM_BYTES // len(LINE) * len(LINE)  # every byte relayed
        # before: every data line held (peak above the 24 MiB stream)
        assert peak < 6 * MAX_BODY, f"{peak / 2**20:.1f} MiB held for a 24 MiB stream"
        samples = await scrape(p.session, p.ops_url)
        assert sample(samples, "bureau_proxy_limits_total", limit="event_size") == 1
    await bureau.verify()
