"""``bureau serve``'s port has a deadline for each request's head (issue 33; the proxy's
since issue 35): a client trickling its head — a slow-loris — is cut off
``BUREAU_HEADER_SECONDS`` after its first byte, and a connection idle after an answer is
kept as long and no longer (aiohttp's own keep-alive held it for an hour). Nothing here
sleeps: the trickle sends its next byte whenever the server has not closed within a
moment, and every test waits on the server closing, with a generous timeout."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from bureau.config import Config
from bureau.http.keys import CONFIG
from bureau.http.listener import service_runner
from tests.support import BureauUnderTest, sample, scrape, start_bureau

#: the configured deadline of these tests (10 s in service)
HEADER_SECONDS = 0.5
#: how long any of these tests waits for the server to close before failing
GIVE_UP = 60


def _as_serve_runs_it(app: web.Application) -> web.AppRunner:
    return service_runner(app, app[CONFIG].header_seconds)


@asynccontextmanager
async def _served(database_url: str, home: Path) -> AsyncIterator[BureauUnderTest]:
    async with start_bureau(database_url, home, header_seconds=HEADER_SECONDS,
                            listener=_as_serve_runs_it) as bureau:
        yield bureau


async def _connect(bureau: BureauUnderTest) -> tuple[asyncio.StreamReader,
                                                      asyncio.StreamWriter]:
    host, port = bureau.url.split("//", 1)[1].rsplit(":", 1)
    return await asyncio.open_connection(host, int(port))


async def _trickle_head(bureau: BureauUnderTest) -> tuple[bytes, float]:
    """Send a request head that never ends, a byte at a time — the next one whenever
    50 ms pass without the server closing — until the server closes. Returns what it
    sent before closing, and the seconds from the first byte to the close."""
    head = b"GET /healthz HTTP/1.1\r\nHost: bureau\r\nX-Slow: "
    reader, writer = await _connect(bureau)
    answered = b""
    started = time.monotonic()
    try:
        async with asyncio.timeout(GIVE_UP):
            for sent in itertools.count():
                writer.write(head[sent:sent + 1] or b"a")
                try:
                    chunk = await asyncio.wait_for(reader.read(65536), 0.05)
                except TimeoutError:  # still open: the next byte
                    continue
                if not chunk:
                    break
                answered += chunk
    except ConnectionError:  # the close, seen as a reset
        pass
    finally:
        writer.close()
    return answered, time.monotonic() - started


async def _until_closed(bureau: BureauUnderTest, sent: bytes) -> tuple[bytes, float]:
    """Send ``sent`` and nothing more; everything the server answered before it closed,
    and the seconds until it did."""
    reader, writer = await _connect(bureau)
    started = time.monotonic()
    try:
        writer.write(sent)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), GIVE_UP), time.monotonic() - started
    finally:
        writer.close()


async def _late_heads(bureau: BureauUnderTest) -> float:
    return sample(await scrape(bureau.session, bureau.ops_url), "bureau_http_late_heads_total")


async def test_a_head_trickled_a_byte_at_a_time_is_cut_off(database_url: str,
                                                           tmp_path: Path) -> None:
    async with _served(database_url, tmp_path) as bureau:
        before = await _late_heads(bureau)
        answered, elapsed = await _trickle_head(bureau)
        assert answered == b""  # no request yet, so no answer: the connection is closed
        assert elapsed >= HEADER_SECONDS  # not before the deadline, however it trickles
        assert await _late_heads(bureau) == before + 1
        async with bureau.session.get(bureau.url + "/healthz") as resp:  # an honest one
            assert resp.status == 200
    await bureau.verify()


async def test_a_connection_that_sends_nothing_is_closed(database_url: str,
                                                         tmp_path: Path) -> None:
    async with _served(database_url, tmp_path) as bureau:
        before = await _late_heads(bureau)
        answered, elapsed = await _until_closed(bureau, b"")
        assert answered == b"" and elapsed >= HEADER_SECONDS
        assert await _late_heads(bureau) == before + 1


async def test_the_keep_alive_is_the_head_deadline(database_url: str,
                                                   tmp_path: Path) -> None:
    """One complete request, then silence — or a next head begun while it was being
    answered (pipelined) and never finished: answered, then closed no sooner than the
    head deadline (aiohttp's keep-alive was 3630 s); an idle close is not counted."""
    async with _served(database_url, tmp_path) as bureau:
        whole = b"GET /healthz HTTP/1.1\r\nHost: bureau\r\n\r\n"
        for then in (b"", b"GET /healthz HTTP/1.1\r\nHost: bureau\r\nX-Slow: 1"):
            before = await _late_heads(bureau)
            answered, elapsed = await _until_closed(bureau, whole + then)
            assert answered.startswith(b"HTTP/1.1 200"), answered
            assert answered.count(b"HTTP/1.1") == 1  # the unfinished head is not answered
            assert elapsed >= HEADER_SECONDS
            if not then:  # idle after its answer: closed by the keep-alive, not counted
                assert await _late_heads(bureau) == before


def test_the_deadline_is_configured_by_bureau_header_seconds() -> None:
    assert Config.from_env({}).header_seconds == 10.0
    assert Config.from_env({"BUREAU_HEADER_SECONDS": "2.5"}).header_seconds == 2.5
    for bad in ("0", "-1", "3601"):
        with pytest.raises(ValueError, match=r"^BUREAU_HEADER_SECONDS must be more than 0"):
            Config.from_env({"BUREAU_HEADER_SECONDS": bad})
