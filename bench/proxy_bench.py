"""What the reporting proxy adds to a call: forwarding, measuring, and holding the fact
on disk (fsynced) before the caller gets its answer (docs/proxy.md, "Holding and
durability").

Starts a trivial agent on loopback and a proxy in front of it (in this process, its
spool in a temporary directory; the bureau URL points nowhere, so facts only pile up in
the spool: delivery is not what is measured), then:

1. sequential calls straight to the agent, then through the proxy: p50/p99 latency;
2. concurrent calls through the proxy (``--concurrency``): calls/s, p50/p99 — calls
   that arrive together share one fsync (the spool's group commit).

Signed callers (RFC 9421, signed before the clock starts) are held for the settle
window, as in production; unsigned ones are released at once, and cost the proxy no
signature check.

    python bench/proxy_bench.py [--calls 2000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reporters import generate_key, key_id
from reporters.httpsig import sign_request_headers
from reporters.proxy import Proxy, from_mapping


async def _site(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


def _summary(name: str, latencies: list[float], seconds: float) -> str:
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return (f"{name:<44} {len(ms) / seconds:8.0f} calls/s   p50 {statistics.median(ms):6.2f} ms"
            f"   p99 {p99:6.2f} ms")


async def _calls(session: aiohttp.ClientSession, url: str, n: int, concurrency: int,
                 signed: bool) -> tuple[list[float], float]:
    caller = generate_key()
    latencies: list[float] = []
    # Signed before the clock starts: signing is the caller's cost, not the proxy's.
    requests = [(f"{url}/task-{i}", sign_request_headers(caller, "POST", f"{url}/task-{i}")
                 if signed else {}) for i in range(n)]
    todo = iter(requests)

    async def worker() -> None:
        for target, headers in todo:
            started = time.perf_counter()
            async with session.post(target, data=b'{"q": 1}', headers=headers) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


async def main(calls: int, concurrency: int) -> None:
    async def agent(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"answer": 42})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", agent)
    agent_runner, agent_url = await _site(app)
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp:
        config = from_mapping({
            "bureau_url": "http://127.0.0.1:9", "key_file": "unused", "spool_dir": tmp,
            "settle_seconds": 600, "quiet_seconds": 600, "ops_listen": "off",
            "drain_seconds": 0.5,
            "routes": [{"prefix": "/a", "agent": key_id(generate_key()),
                        "upstream": agent_url}]})
        proxy = Proxy(config, generate_key())
        proxy_runner, proxy_url = await _site(proxy.app())
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            await _calls(session, proxy_url + "/a", 50, 1, True)  # warm up
            print(f"{calls} calls each; the spool fsyncs (SQLite, synchronous=FULL)")
            lat, secs = await _calls(session, agent_url, calls, 1, True)
            print(_summary("straight to the agent, 1 at a time", lat, secs))
            lat, secs = await _calls(session, proxy_url + "/a", calls, 1, True)
            print(_summary("through the proxy, 1 at a time", lat, secs))
            lat, secs = await _calls(session, proxy_url + "/a", calls, 1, False)
            print(_summary("through the proxy, 1 at a time, unsigned", lat, secs))
            lat, secs = await _calls(session, agent_url, calls, concurrency, True)
            print(_summary(f"straight to the agent, {concurrency} at once", lat, secs))
            lat, secs = await _calls(session, proxy_url + "/a", calls, concurrency, True)
            print(_summary(f"through the proxy, {concurrency} at once", lat, secs))
            lat, secs = await _calls(session, proxy_url + "/a", calls, concurrency, False)
            print(_summary(f"through the proxy, {concurrency} at once, unsigned", lat, secs))
            print(f"facts held on disk at the end: {proxy.facts.count}")
        await proxy_runner.cleanup()
    await agent_runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.concurrency))
