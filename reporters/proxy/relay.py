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


@dataclass(frozen=True, slots=True)
class Relaying:
    """How the proxy relays a call: its upstream session and clock, and the bounds on the
    agent's answer."""

    session: aiohttp.ClientSession
    clock: Callable[[], float]
    #: bounds a JSON answer as a whole, and a stream's wait for each chunk
    timeout: float
    max_body: int
    #: header fields of the agent's answer not relayed (beyond the hop-by-hop ones)
    drop: frozenset[str]


@dataclass(frozen=True, slots=True)
class Upstream:
    """One call as it goes to the agent: the caller's request (a stream is answered on
    it), the agent's URL, and the headers and body sent."""

    request: web.Request
    target: str
    headers: CIMultiDict[str]
    body: bytes


async def forward(relaying: Relaying, call: Upstream, *, on_start: OnStart | None = None,
                  on_event: OnEvent | None = None) -> Buffered | Streamed:
    """Send the call upstream; a stream is relayed when ``on_event`` is given."""
    started = relaying.clock()
    timeout = relaying.timeout
    async with relaying.session.request(
            call.request.method, yarl.URL(call.target, encoded=True), headers=call.headers,
            data=call.body, allow_redirects=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout,
                                          sock_read=timeout)) as resp:
        streaming = resp.headers.get("Content-Type", "").startswith("text/event-stream")
        if not (streaming and on_event is not None):
            return await _buffered(resp, started, relaying)
        out_headers = forwardable(resp.headers, relaying.drop)
        if on_start is not None:
            out_headers.update(await on_start())
        out = web.StreamResponse(status=resp.status, headers=out_headers)
        await out.prepare(call.request)
        relay = _StreamRelay(relaying, started, on_event, out)
        await relay.run(resp)
        return Streamed(resp.status, out, relay.events, relay.clean, relay.too_large)


class _StreamRelay:
    """An event stream relayed to the caller chunk by chunk: written first, read after."""

    def __init__(self, relaying: Relaying, started: float, on_event: OnEvent,
                 out: web.StreamResponse) -> None:
        self._relaying, self._started, self._on_event, self._out = \
            relaying, started, on_event, out
        self._reader: EventReader | None = EventReader(relaying.max_body)
        self.events, self.clean, self.caller_left, self.too_large = 0, True, False, False

    async def run(self, resp: aiohttp.ClientResponse) -> None:
        try:
            async for chunk in resp.content.iter_any():
                await self._write(chunk)
                if self._reader is None:
                    if self.caller_left:
                        break  # nothing more can be read of it, nor sent
                    continue
                await self._read(self._reader, chunk)
        except (aiohttp.ClientError, TimeoutError):
            self.clean = False  # the agent's stream was cut or went silent
        if not self.caller_left:
            with contextlib.suppress(ConnectionError, aiohttp.ClientConnectionResetError):
                await self._out.write_eof()

    async def _write(self, chunk: bytes) -> None:
        if self.caller_left:
            return
        try:
            await self._out.write(chunk)
        except (ConnectionError, aiohttp.ClientConnectionResetError):
            # The caller hung up: what the agent does next is still the agent's to be
            # judged on (SPEC §4, r4), so the stream is read on to its end (each chunk
            # still within ``timeout``).
            self.caller_left = True

    async def _read(self, reader: EventReader, chunk: bytes) -> None:
        try:
            got = reader.feed(chunk)
        except EventTooLarge:
            self._reader, self.clean, self.too_large = None, False, True  # relayed, no longer read
            return
        for event in got:
            self.events += 1
            await self._on_event(event, round((self._relaying.clock() - self._started) * 1000))


async def _buffered(resp: aiohttp.ClientResponse, started: float,
                    relaying: Relaying) -> Buffered:
    chunks: list[bytes] = []
    size = 0
    async with asyncio.timeout(relaying.timeout):
        async for chunk in resp.content.iter_chunked(64 * 1024):
            size += len(chunk)
            if size > relaying.max_body:
                raise TooLarge
            chunks.append(chunk)
    return Buffered(resp.status, CIMultiDict(resp.headers), b"".join(chunks),
                    round((relaying.clock() - started) * 1000))
