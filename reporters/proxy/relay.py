"""Forwarding a protocol call (A2A, MCP) and relaying its answer, streams unbuffered.

A JSON answer is read whole (bounded by ``max_body``) and judged before the caller has
it, as a plain call's. An event stream (``text/event-stream``) is relayed chunk by chunk
as it arrives: each chunk is written to the caller first and read afterwards, so reading
never delays an event; ``on_start`` runs once the agent's headers are in, before the
caller's are sent (it holds the fact, so the caller's ``Bureau-Interaction`` is already
durable), and ``on_event`` for every event, with the milliseconds since the request
went upstream. A caller that hangs up mid-stream does not end the reading: the agent's
stream is read on to its end, so its fact says what the agent did.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import aiohttp
import yarl
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from reporters.protocols.sse import Event, EventReader, EventTooLarge

# RFC 9110 §7.6.1 hop-by-hop fields, plus what aiohttp recomputes for us.
_HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length"})


def forwardable(headers: CIMultiDictProxy[str] | CIMultiDict[str],
                extra_drop: frozenset[str] = frozenset()) -> CIMultiDict[str]:
    """``headers`` less the hop-by-hop fields, including those ``Connection`` names."""
    named = {t.strip().lower() for v in headers.getall("Connection", []) for t in v.split(",")}
    drop = _HOP_BY_HOP | named | extra_drop
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        if name.lower() not in drop:
            out.add(name, value)
    return out


OnStart = Callable[[], Awaitable[Mapping[str, str]]]
OnEvent = Callable[[Event, int], Awaitable[None]]


class TooLarge(Exception):
    """The agent's (non-streamed) answer is larger than ``max_body``."""


@dataclass(frozen=True, slots=True)
class Buffered:
    status: int
    headers: CIMultiDict[str]
    body: bytes
    latency_ms: int


@dataclass(frozen=True, slots=True)
class Streamed:
    status: int
    response: web.StreamResponse  # already sent
    events: int
    clean: bool  # the agent's stream ended normally (not cut, not unreadable)
    #: an event passed ``max_body``: relayed on, no longer read (and nothing held for it)
    too_large: bool = False


async def forward(session: aiohttp.ClientSession, request: web.Request, target: str,
                  headers: CIMultiDict[str], body: bytes, *, timeout: float, max_body: int,
                  clock: Callable[[], float], drop: frozenset[str],
                  on_start: OnStart | None = None,
                  on_event: OnEvent | None = None) -> Buffered | Streamed:
    """Send the call upstream; a stream is relayed when ``on_event`` is given.
    ``timeout`` bounds a JSON answer as a whole, and a stream's wait for each chunk."""
    started = clock()
    async with session.request(
            request.method, yarl.URL(target, encoded=True), headers=headers, data=body,
            allow_redirects=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout,
                                          sock_read=timeout)) as resp:
        streaming = resp.headers.get("Content-Type", "").startswith("text/event-stream")
        if not (streaming and on_event is not None):
            return await _buffered(resp, started, clock, timeout, max_body)
        out_headers = forwardable(resp.headers, drop)
        if on_start is not None:
            out_headers.update(await on_start())
        out = web.StreamResponse(status=resp.status, headers=out_headers)
        await out.prepare(request)
        reader: EventReader | None = EventReader(max_body)
        events, clean, caller_left, too_large = 0, True, False, False
        try:
            async for chunk in resp.content.iter_any():
                if not caller_left:
                    try:
                        await out.write(chunk)
                    except (ConnectionError, aiohttp.ClientConnectionResetError):
                        # The caller hung up: what the agent does next is still the
                        # agent's to be judged on (SPEC §4, r4), so the stream is read
                        # on to its end (each chunk still within ``timeout``).
                        caller_left = True
                if reader is None:
                    if caller_left:
                        break  # nothing more can be read of it, nor sent
                    continue
                try:
                    got = reader.feed(chunk)
                except EventTooLarge:
                    reader, clean, too_large = None, False, True  # relayed, no longer read
                    continue
                for event in got:
                    events += 1
                    await on_event(event, round((clock() - started) * 1000))
        except (aiohttp.ClientError, TimeoutError):
            clean = False  # the agent's stream was cut or went silent
        if not caller_left:
            with contextlib.suppress(ConnectionError, aiohttp.ClientConnectionResetError):
                await out.write_eof()
        return Streamed(resp.status, out, events, clean, too_large)


async def _buffered(resp: aiohttp.ClientResponse, started: float,
                    clock: Callable[[], float], timeout: float, max_body: int) -> Buffered:
    chunks: list[bytes] = []
    size = 0
    async with asyncio.timeout(timeout):
        async for chunk in resp.content.iter_chunked(64 * 1024):
            size += len(chunk)
            if size > max_body:
                raise TooLarge
            chunks.append(chunk)
    return Buffered(resp.status, CIMultiDict(resp.headers), b"".join(chunks),
                    round((clock() - started) * 1000))
