"""Agent cards read with bounds (issue 35): a card is read up to ``max_card_bytes`` and not
kept, and a signed card's ``jku`` is followed only to hosts the operator configured,
never to a loopback or private address it did not name."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentCardSignature
from aiohttp import web
from google.protobuf import json_format

from reporters.proxy.cards import jwks_keys
from reporters.proxy.config import Route
from reporters.proxy.jku import GuardedResolver, jku_allowed, trusted_hosts
from tests.proxy.support import new_agent, running_proxy, upstream
from tests.support import BureauUnderTest, sample, scrape, until

CARD_PATH = "/.well-known/agent-card.json"
HUGE = 32 * 1024 * 1024
CHUNK = b" " * (256 * 1024)


def _route(upstream_url: str, *hosts: str) -> Route:
    return Route("/a", new_agent(), upstream_url, protocol="a2a", card_jku_hosts=hosts)


def signed_card(jku: str) -> bytes:
    """A card as a2a-sdk writes it, signed (its signature is never checked here: no key
    is fetched), whose protected header names ``jku``."""
    header = base64.urlsafe_b64encode(json.dumps(
        {"alg": "ES256", "kid": "k1", "jku": jku}).encode()).decode().rstrip("=")
    card = AgentCard(name="weather", description="forecasts", version="1.0.0",
                     capabilities=AgentCapabilities(),
                     signatures=[AgentCardSignature(protected=header, signature="c2ln")])
    return json.dumps(json_format.MessageToDict(card)).encode()


@asynccontextmanager
async def trap() -> AsyncIterator[list[bytes]]:
    """A TCP listener on loopback that records what each connection sent first."""
    seen: list[bytes] = []

    async def took(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.read(64))
        writer.close()

    server = await asyncio.start_server(took, "127.0.0.1", 0)
    try:
        seen.append(str(server.sockets[0].getsockname()[1]).encode())  # [0]: the port
        yield seen
    finally:
        server.close()


async def test_a_huge_card_costs_only_the_cap_and_is_not_kept(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    async def card(request: web.Request) -> web.StreamResponse:
        out = web.StreamResponse(headers={"Content-Type": "application/json"})
        await out.prepare(request)
        with contextlib.suppress(ConnectionError):  # the proxy hangs up at its cap
            for _ in range(HUGE // len(CHUNK)):
                await out.write(CHUNK)
            await out.write_eof()
        return out

    import reporters.protocols.a2a  # noqa: F401 - imported before the tracing starts

    tracemalloc.start()
    try:
        async with upstream(card) as up, running_proxy(
                bureau, tmp_path, [{"prefix": "/a", "agent": new_agent(), "upstream": up,
                                    "protocol": "a2a"}], max_card_bytes=64 * 1024) as p:
            _, peak = tracemalloc.get_traced_memory()
            samples = await scrape(p.session, p.ops_url)
            assert sample(samples, "bureau_proxy_agent_card_failures_total", route="/a",
                          reason="too_large") == 1
            assert sample(samples, "bureau_proxy_limits_total", limit="card_size") == 1
            assert p.proxy.cards.declared("/a") is None
    finally:
        tracemalloc.stop()
    # before: the whole 32 MiB read and held (peak above it). After: 8.2 MiB for a 32 MiB
    # card and for a 96 MiB one alike — the proxy's start and both ends' buffers
    assert peak < 16 * 1024 * 1024, f"{peak / 2**20:.1f} MiB for a 32 MiB card"
    await bureau.verify()


async def test_a_jku_to_a_host_not_configured_is_never_fetched(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    async with trap() as seen:
        jku = f"https://127.0.0.1:{int(seen[0])}/jwks.json"

        async def card(request: web.Request) -> web.Response:
            return web.Response(body=signed_card(jku), content_type="application/json")

        async with upstream(card) as up, running_proxy(
                bureau, tmp_path, [{"prefix": "/a", "agent": new_agent(), "upstream": up,
                                    "protocol": "a2a"}]) as p:
            samples = await scrape(p.session, p.ops_url)
            assert sample(samples, "bureau_proxy_limits_total", limit="jku_host") == 1
            assert sample(samples, "bureau_proxy_agent_card_failures_total", route="/a",
                          reason="bad_signature") == 1
        assert seen[1:] == []  # before: a TLS ClientHello arrived on the card's port
    await bureau.verify()


async def test_a_listed_jku_host_is_fetched_with_the_cap(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    """Listed as an address literal, the host is the operator's word: it is fetched
    (here it answers no TLS, so the card stays unused), bounded like the card."""
    async with trap() as seen:
        port = int(seen[0])
        jku = f"https://127.0.0.1:{port}/jwks.json"

        async def card(request: web.Request) -> web.Response:
            return web.Response(body=signed_card(jku), content_type="application/json")

        async with upstream(card) as up, running_proxy(
                bureau, tmp_path, [{"prefix": "/a", "agent": new_agent(), "upstream": up,
                                    "protocol": "a2a",
                                    "card_jku_hosts": [f"127.0.0.1:{port}"]}]) as p:
            await until("the listed host was asked", lambda: len(seen) > 1)
            samples = await scrape(p.session, p.ops_url)
            assert sample(samples, "bureau_proxy_limits_total", limit="jku_host") == 0
        assert seen[1].startswith(b"\x16\x03")  # a TLS handshake: the fetch was made
    await bureau.verify()


def test_where_a_jku_may_point() -> None:
    route = _route("http://agent.internal:9001/api", "keys.example.com",
                   "pinned.example.com:8443", "10.0.0.7")
    assert jku_allowed("https://agent.internal:9001/jwks", route) is None  # the upstream
    assert jku_allowed("https://keys.example.com/jwks", route) is None
    assert jku_allowed("https://KEYS.example.com:444/jwks", route) is None  # any port
    assert jku_allowed("https://pinned.example.com:8443/j", route) is None
    assert jku_allowed("https://10.0.0.7/j", route) is None
    for refused in ("https://agent.internal:9002/jwks", "https://pinned.example.com/j",
                    "https://evil.example/jwks", "https://127.0.0.1:9001/jwks",
                    "https://user@/x", "https://[::1]:99999/x"):
        assert jku_allowed(refused, route) is not None, refused


async def test_a_listed_name_that_resolves_to_loopback_is_refused() -> None:
    """Names are checked where they resolve, when the connection opens: ``localhost``
    listed by name is not a public address; the upstream's host and address literals
    listed are the operator's word."""
    resolver = GuardedResolver(trusted_hosts(
        [_route("http://127.0.0.2:9001", "localhost", "127.0.0.3")]))
    try:
        with pytest.raises(OSError, match="not a public address"):
            await resolver.resolve("localhost", 443)
        assert (await resolver.resolve("127.0.0.2", 443))[0]["host"] == "127.0.0.2"
        assert (await resolver.resolve("127.0.0.3", 443))[0]["host"] == "127.0.0.3"
    finally:
        await resolver.close()



@pytest.mark.parametrize("jwks", [b"[" * 50_000 + b"]" * 50_000, b"[1]", b"null", b"5",
                                  b'{"keys": [5]}', b"\xff"],
                         ids=["deep", "a list", "null", "a number", "no key", "not utf-8"])
def test_a_hostile_jwks_has_no_keys(jwks: bytes) -> None:
    """What a card's jku serves is the agent's word (by default the jku may only point at
    the agent's own upstream). A JWKS nested 50,000 deep, or one that is not an object,
    raised RecursionError or AttributeError out of the card reader — at the proxy's start
    that stopped the proxy. Now it is a JWKS with no keys: the card is ``bad_signature``
    and the route works."""
    assert jwks_keys(jwks) == []


def test_a_jwks_keys_are_read() -> None:
    key = {"kty": "OKP", "crv": "Ed25519", "kid": "k1",
           "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
    [found] = jwks_keys(json.dumps({"keys": [key]}).encode())
    assert found.key_id == "k1"
