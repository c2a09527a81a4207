"""Header and body deadlines at the proxy (issue 35): a 10-byte body trickled over 77 s
was forwarded and answered 200; a head that never ends held its connection for ever.
Now: ``408`` past ``body_seconds``, the connection closed past ``header_seconds``, both
counted, and an honest call meanwhile answered as ever. Nothing here sleeps: each test
waits on the server's own deadline."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from tests.proxy.support import new_agent, running_proxy, stalled, upstream
from tests.support import BureauUnderTest, sample, scrape


async def _ok(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def test_a_body_that_does_not_arrive_is_408_and_never_forwarded(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    asked: list[str] = []

    async def agent(request: web.Request) -> web.Response:
        asked.append(request.path)
        return await _ok(request)

    async with upstream(agent) as up, running_proxy(
            bureau, tmp_path, [{"prefix": "/a", "agent": new_agent(), "upstream": up}],
            body_seconds=0.5, header_seconds=30) as p:
        answer = await stalled(p.url, b"POST /a/x HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                      b"application/json\r\nContent-Length: 10\r\n\r\n{")
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"MALFORMED_ENVELOPE" in answer and b"0.5 s" in answer
        assert asked == []  # nothing judged or forwarded from a partial body
        status, _, _ = await p.call("POST", "/a/x", {"q": 1})  # an honest call
        assert status == 200 and asked == ["/x"]
        samples = await scrape(p.session, p.ops_url)
        assert sample(samples, "bureau_proxy_limits_total", limit="body_seconds") == 1
    await bureau.verify()


async def test_a_head_that_does_not_arrive_closes_its_connection(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    async with upstream(_ok) as up, running_proxy(
            bureau, tmp_path, [{"prefix": "/a", "agent": new_agent(), "upstream": up}],
            header_seconds=0.5) as p:
        assert await stalled(p.url, b"GET /a/x HTTP/1.1\r\nHost: x\r\nX-Slow: 1") == b""
        assert await stalled(p.url, b"") == b""  # a connection that sends nothing at all
        status, _, _ = await p.call("GET", "/a/x")
        assert status == 200
        samples = await scrape(p.session, p.ops_url)
        assert sample(samples, "bureau_proxy_limits_total", limit="header_seconds") == 2
    await bureau.verify()


async def test_one_request_then_silence_does_not_hold_a_connection(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    """A complete request, then a next head begun while it was being handled (pipelined)
    and never finished — or nothing at all: the head deadline was never armed, and
    aiohttp's keep-alive (3630 s) held the connection for an hour. Now the connection
    waits for its next head no longer than header_seconds after its answer."""
    async with upstream(_ok) as up, running_proxy(
            bureau, tmp_path, [{"prefix": "/a", "agent": new_agent(), "upstream": up}],
            header_seconds=0.5) as p:
        whole = b"GET /a/x HTTP/1.1\r\nHost: x\r\n\r\n"
        for then in (b"GET /a/y HTTP/1.1\r\nHost: x\r\nX-Slow: 1", b""):
            answer = await stalled(p.url, whole + then)  # before: no close for 3630 s
            assert answer.startswith(b"HTTP/1.1 200"), answer
            assert answer.count(b"HTTP/1.1") == 1  # the unfinished head was not answered
    await bureau.verify()
