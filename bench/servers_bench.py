"""``GET /v0/servers`` at 10 and at 10,000 linked agents (issue 35): the page's cost must
not grow with what anyone can enrol for free.

For each size N, a fresh bureau (in this process, HTTP on loopback, the embedded
PostgreSQL) gets N enrolled agents, each linking an MCP server name of its own and one
honest name that every one of them claims (N − 1 squatters on it), and one sealed epoch.
Then, one request at a time: ``?limit=1``, a full page (``?limit=100``), the squatted
name, and a search; and a fact POST alone and while a reader loops on ``?limit=1``.
Prints each one's p50 and p99 per N, and the difference of the p99s (the target: within
10 ms).

    python bench/servers_bench.py [--agents 10 10000] [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reporters import identity_links, wire
from tests.support import enrollment, fact_payload, fresh_database, interaction_id, start_bureau
from tests.views.support import EPOCH_SECONDS, next_epoch

HONEST = "io.github.honest/weather"
PUBLIC_URL = "https://bureau.example.test"


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _timed(session: aiohttp.ClientSession, method: str, url: str, n: int,
                 body_of: object = None) -> list[float]:
    out = []
    for _ in range(n):
        data = body_of() if callable(body_of) else None
        started = time.perf_counter()
        async with session.request(method, url, data=data,
                                   headers={"Content-Type": "application/json"}) as resp:
            await resp.read()
            assert resp.status < 300, (url, resp.status)
        out.append(time.perf_counter() - started)
    return out


async def measure(pg: str, n: int, requests: int) -> dict[str, list[float]]:
    async with fresh_database(pg, "servers_bench_") as url, \
            start_bureau(url, Path(tempfile.mkdtemp()), epoch_seconds=EPOCH_SECONDS,
                         public_url=PUBLIC_URL) as bureau:
        lines = []
        for i in range(n):
            key = wire.generate_key()
            links = [identity_links.mcp(HONEST), identity_links.mcp(f"io.github.a{i}/s")]
            lines.append(wire.sign_payload(key, "enrollment", {
                **enrollment(f"agent {i}"), "links": links}))
        for i in range(0, n, 1000):
            answers = await bureau.batch(lines[i:i + 1000])
            assert all(a.get("status") == "accepted" for a in answers), answers[:3]
        reporter = await bureau.reporter(("facts",))
        subject = wire.signing_key_id(wire.generate_key())
        await next_epoch(bureau)
        base, s = bureau.url, bureau.session

        def fact() -> bytes:
            return wire.canonical_json(wire.sign_payload(
                reporter, "fact", fact_payload(interaction_id(), subject)))

        for path in ("/v0/servers?limit=1", "/v0/servers?limit=100"):  # warm up: the
            await _timed(s, "GET", base + path, 50)  # pool, plans, the seal's aftermath
        out = {
            "?limit=1": await _timed(s, "GET", base + "/v0/servers?limit=1", requests),
            "?limit=100": await _timed(s, "GET", base + "/v0/servers?limit=100", requests),
            "squatted name": await _timed(s, "GET", base + "/v0/servers/" + quote(HONEST, safe=""),
                                          requests),
            "search": await _timed(s, "GET", base + "/v0/servers?search=a1", requests),
            "fact POST alone": await _timed(s, "POST", base + "/v1/evidence", requests, fact),
        }
        stop = asyncio.Event()

        async def reader() -> None:
            while not stop.is_set():
                await _timed(s, "GET", base + "/v0/servers?limit=1", 1)

        task = asyncio.create_task(reader())
        out["fact POST, reader on"] = await _timed(s, "POST", base + "/v1/evidence", requests,
                                                   fact)
        stop.set()
        await task
        return out


async def main(sizes: list[int], requests: int) -> None:
    import pgserver

    with tempfile.TemporaryDirectory(prefix="servers-bench-") as tmp:
        server = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop")  # type: ignore[attr-defined]
        try:
            results = {n: await measure(server.get_uri(), n, requests) for n in sizes}
        finally:
            with contextlib.suppress(Exception):
                server.cleanup()
    first, last = sizes[0], sizes[-1]
    for what in results[first]:
        for n in sizes:
            t = results[n][what]
            print(f"{what:<22} {n:>6} agents  p50 {_p(t, .5):7.2f} ms  p99 {_p(t, .99):7.2f} ms")
        print(f"{what:<22} p99 at {last} minus p99 at {first}: "
              f"{_p(results[last][what], .99) - _p(results[first][what], .99):+.2f} ms "
              "(target: within 10 ms)")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    for name in ("bureau", "reporters", "aiohttp.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[10, 10_000])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.agents, args.requests))
