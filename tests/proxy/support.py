"""Helpers for the proxy tests: real upstream servers on loopback, a proxy in front of
them reporting to the real bureau, and the facts as the ledger stored them."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import nacl.signing
from aiohttp import web

from reporters import wire
from reporters.httpsig import sign_request_headers
from reporters.proxy import INTERACTION_HEADER, DeliverableCheck, Proxy, from_mapping
from tests.support import BureauUnderTest, scrape, serving

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def upstream(handler: Handler) -> AsyncIterator[str]:
    """An agent's HTTP endpoint on 127.0.0.1, port 0; yields its base URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    async with serving(app) as url:
        yield url


class ShiftedClock:
    """A proxy's clock in tests (monotonic seconds): real time, plus an offset the test
    moves forward. Give the proxy windows no machine is slow enough to pass while the
    calls run (``settle_seconds``, ``quiet_seconds`` of a minute), then :meth:`advance`
    past them: what a window decides is then decided by the test, never by the
    machine's speed."""

    __test__ = False

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


@dataclass
class RunningProxy:
    url: str
    proxy: Proxy
    session: aiohttp.ClientSession
    ops_url: str

    async def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """The ops listener's /metrics: (sample name, sorted labels) -> value."""
        return await scrape(self.session, self.ops_url)

    async def call(self, method: str, path: str, body: Any = None,
                   signer: nacl.signing.SigningKey | None = None,
                   headers: Mapping[str, str] | None = None) -> tuple[int, bytes, str]:
        """One call through the proxy; returns (status, body, interaction id)."""
        all_headers = dict(headers or {})
        url = self.url + path
        if signer is not None:
            all_headers.update(sign_request_headers(signer, method, url))
        data = json.dumps(body).encode() if body is not None else None
        async with self.session.request(method, url, data=data, headers=all_headers) as resp:
            return resp.status, await resp.read(), resp.headers[INTERACTION_HEADER]


@asynccontextmanager
async def running_proxy(bureau: BureauUnderTest, tmp: Path, routes: list[dict[str, Any]],
                        *, agents: Mapping[str, Any] | None = None, settle: float = 0.3,
                        quiet: float = 0.8, proxy_id: str = "px-test",
                        checks: Mapping[str, DeliverableCheck] | None = None,
                        reporter: nacl.signing.SigningKey | None = None,
                        clock: Callable[[], float] = time.monotonic,
                        **settings: Any) -> AsyncIterator[RunningProxy]:
    """A proxy in this process on a loopback port, and its ops listener on another;
    ``settings`` are more config fields (``bureau_url`` overrides the bureau's);
    ``clock`` is the proxy's (a :class:`ShiftedClock` lets the test pass its windows)."""
    key = reporter if reporter is not None else await bureau.reporter(("facts",))
    config = from_mapping({
        "bureau_url": bureau.url, "key_file": "unused.key", "spool_dir": str(tmp / "spool"),
        "proxy_id": proxy_id, "settle_seconds": settle, "quiet_seconds": quiet,
        "routes": routes, "agents": dict(agents or {}), **settings}, tmp)
    proxy = Proxy(config, key, checks=checks, clock=clock)
    async with serving(proxy.runner()) as url, serving(proxy.ops_app()) as ops_url, \
            aiohttp.ClientSession() as session:
        yield RunningProxy(url, proxy, session, ops_url)


async def ledger_facts(database_url: str, reporter: str) -> list[dict[str, Any]]:
    """Every fact entry signed by ``reporter``, decoded, in ledger order (duplicates and
    all, if there were any)."""
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT entry FROM entries WHERE kind = 'fact' AND signer = $1"
                                " ORDER BY seq", reporter)
    finally:
        await conn.close()
    return [json.loads(base64.b64decode(json.loads(row["entry"])["envelope"]["payload"]))
            for row in rows]


async def stored_facts(database_url: str, reporter: str) -> dict[str, dict[str, Any]]:
    """Every fact entry signed by ``reporter``: interaction -> decoded payload."""
    return {f["interaction"]: f for f in await ledger_facts(database_url, reporter)}


async def metric(session: aiohttp.ClientSession, ops_url: str, name: str) -> float:
    """One unlabelled sample of an ops listener's /metrics."""
    samples = await scrape(session, ops_url)
    assert (name, ()) in samples, f"{name} not exported"
    return samples[(name, ())]


def new_agent() -> str:
    """A key id for an agent behind the proxy (facts need no enrollment)."""
    return wire.signing_key_id(wire.generate_key())


async def stalled(url: str, sent: bytes) -> bytes:
    """Open a connection to ``url``'s host and port, send ``sent`` (a request cut short)
    and nothing more; return everything the server answered before it closed."""
    import asyncio

    hostport = url.split("//", 1)[1].split("/", 1)[0]
    host, port = hostport.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(sent)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 60)  # the server's deadline ends it
    finally:
        writer.close()
