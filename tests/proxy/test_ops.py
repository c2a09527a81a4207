"""The proxy's ops listener and own routes, against the real bureau: health, readiness,
and metrics that count what happened."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web

from reporters import wire
from reporters.proxy import ConfigError, from_mapping
from tests.client.helpers import DEAD_URL
from tests.proxy.support import RunningProxy, new_agent, running_proxy, upstream
from tests.support import BureauUnderTest, Samples
from tests.support import sample as value


async def answer(request: web.Request) -> web.Response:
    return web.json_response({"answer": 42})


async def get(px: RunningProxy, url: str, method: str = "GET") -> tuple[int, dict[str, str]]:
    async with px.session.request(method, url) as resp:
        return resp.status, await resp.json()


async def wait_for_sample(px: RunningProxy, name: str, at_least: float,
                          **labels: str) -> Samples:
    """Poll /metrics until the sample reaches ``at_least`` (progress, not a fixed wait)."""
    async with asyncio.timeout(20):
        while True:
            samples = await px.metrics()
            if value(samples, name, **labels) >= at_least:
                return samples
            await asyncio.sleep(0.02)


async def test_health_readiness_and_counts(bureau: BureauUnderTest, tmp_path: Path) -> None:
    async with upstream(answer) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a", "agent": new_agent(), "upstream": up}]) as px:
        assert await get(px, px.ops_url + "/healthz") == (200, {"status": "ok"})
        assert await get(px, px.ops_url + "/readyz") == (200, {"status": "ready"})
        for _ in range(3):
            await px.call("GET", "/a/x")
        async with px.session.get(px.url + "/nowhere") as resp:
            assert resp.status == 404
        before = await px.metrics()
        await px.proxy.settle(release=True)
        after = await px.metrics()
    assert value(before, "bureau_proxy_calls_forwarded_total", route="/a",
                 result="answered") == 3
    assert value(before, "bureau_proxy_calls_unrouted_total") == 1
    assert value(before, "bureau_proxy_upstream_latency_seconds_count", route="/a") == 3
    assert value(after, "bureau_proxy_facts_spooled_total") == 3
    assert value(after, "bureau_proxy_facts_delivered_total", result="accepted") == 3
    assert value(after, "bureau_proxy_facts_held") == 0
    assert value(after, "bureau_proxy_spool_pending") == 0


async def test_facts_held_until_settled_are_counted(bureau: BureauUnderTest,
                                                    tmp_path: Path) -> None:
    caller = wire.generate_key()
    async with upstream(answer) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a", "agent": new_agent(), "upstream": up}], settle=60, quiet=60) as px:
        await px.call("GET", "/a/one", signer=caller)
        await px.call("GET", "/a/two", signer=caller)
        samples = await px.metrics()  # a signed caller's facts wait for the window
        assert value(samples, "bureau_proxy_facts_held") == 2
        assert value(samples, "bureau_proxy_facts_spooled_total") == 0
        await px.proxy.settle(release=True)
        assert value(await px.metrics(), "bureau_proxy_facts_held") == 0


async def test_rejections_by_code(bureau: BureauUnderTest, tmp_path: Path) -> None:
    stranger = wire.generate_key()  # never registered: every fact is UNKNOWN_REPORTER
    async with upstream(answer) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a", "agent": new_agent(), "upstream": up}], reporter=stranger) as px:
        await px.call("GET", "/a/x")
        await px.call("GET", "/a/y")
        await px.proxy.settle(release=True)
        samples = await px.metrics()
    assert value(samples, "bureau_proxy_facts_rejected_total", code="UNKNOWN_REPORTER") == 2
    assert value(samples, "bureau_proxy_facts_delivered_total", result="accepted") == 0


async def test_bureau_away_is_not_ready_and_failures_are_counted(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    async with upstream(answer) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a", "agent": new_agent(), "upstream": up}],
            bureau_url=DEAD_URL, drain_seconds=0.2) as px:
        assert await get(px, px.ops_url + "/healthz") == (200, {"status": "ok"})
        status, body = await get(px, px.ops_url + "/readyz")
        assert status == 503 and body["code"] == "UNAVAILABLE"
        assert DEAD_URL in body["detail"] and "/readyz" in body["detail"]
        status, _, _ = await px.call("GET", "/a/x")  # calls still go through
        assert status == 200
        samples = await wait_for_sample(px, "bureau_proxy_delivery_failures_total", 1,
                                        reason="UNAVAILABLE")
        assert value(samples, "bureau_proxy_delivery_retries_total") >= 1
        assert value(samples, "bureau_proxy_spool_pending") == 1


async def test_own_paths_are_never_forwarded(bureau: BureauUnderTest, tmp_path: Path) -> None:
    seen: list[str] = []

    async def record(request: web.Request) -> web.Response:
        seen.append(request.path)
        return web.json_response({})

    async with upstream(record) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a", "agent": new_agent(), "upstream": up}]) as px:
        assert await get(px, px.url + "/healthz") == (200, {"status": "ok"})
        assert (await get(px, px.url + "/readyz"))[0] == 200
        status, body = await get(px, px.url + "/metrics")
        assert (status, body["code"]) == (404, "NOT_FOUND")
        assert (await get(px, px.url + "/healthz", "POST"))[0] == 405
        assert (await get(px, px.ops_url + "/elsewhere"))[0] == 404
        assert (await get(px, px.ops_url + "/metrics", "DELETE"))[0] == 405
    assert seen == []


@pytest.mark.parametrize("prefix", ["/healthz", "/readyz", "/metrics"])
def test_a_route_may_not_take_the_proxys_own_paths(prefix: str) -> None:
    with pytest.raises(ConfigError, match=prefix):
        from_mapping({"bureau_url": "http://127.0.0.1:8080", "key_file": "k",
                      "spool_dir": "s", "routes": [
                          {"prefix": prefix, "agent": new_agent(), "upstream": "http://x"}]})


def test_ops_listener_settings() -> None:
    base = {"bureau_url": "http://127.0.0.1:8080", "key_file": "k", "spool_dir": "s",
            "routes": [{"prefix": "/a", "agent": new_agent(), "upstream": "http://x"}]}
    default = from_mapping(base)
    assert (default.ops_host, default.ops_port, default.drain_seconds) == ("127.0.0.1", 9465,
                                                                         10.0)
    assert from_mapping({**base, "ops_listen": "off"}).ops_port is None
    assert from_mapping({**base, "ops_listen": "0.0.0.0:9999"}).ops_port == 9999
    with pytest.raises(ConfigError, match="ops_listen"):
        from_mapping({**base, "ops_listen": "9465"})
    with pytest.raises(ConfigError, match="drain_seconds"):
        from_mapping({**base, "drain_seconds": -1})
