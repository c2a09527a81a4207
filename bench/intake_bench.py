"""Intake throughput and latency, end to end over loopback HTTP.

Starts ``bureau serve`` on a fresh embedded database (or BUREAU_DATABASE_URL), registers
a reporter, pre-signs N distinct facts, then measures:

1. batch intake: ``POST /v1/evidence/batch`` in batches of 500 over a few connections;
   accepted (durable) facts/s, against the single-core PyNaCl verify rate;
2. single-envelope intake: ``POST /v1/evidence`` flat out, facts/s and p50/p99;
3. single-envelope intake paced at a fixed rate (default 1,000/s): p50/p99;

and, for each phase, the commit section: what the group committers spent per envelope
holding the ledger head lock: the wall time, the committer thread's CPU ("python") and
the rest (waiting on PostgreSQL, on the GIL, for a core), summed over the server's
processes (one scrape of the operator listener, which adds them up); and, with the database on this
machine, the CPU its backends spent serving the committers.

    python bench/intake_bench.py [--facts 100000] [--connections 8] [--rate 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import asyncpg
import nacl.signing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bureau.config import default_serve_workers
from reporters import wire
from tests.processes import ServeProcess, bureau_env
from tests.support import now_text


def verify_rate(seconds: float = 2.0) -> float:
    """Single-core Ed25519 verifications per second of a fact-sized PAE message."""
    key = wire.generate_key()
    msg = wire.pae(wire.payload_type("fact"), b"x" * 400)
    sig = key.sign(msg).signature
    vk = nacl.signing.VerifyKey(bytes(key.verify_key))
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(1000):
            vk.verify(msg, sig)
        n += 1000
    return n / (time.perf_counter() - start)


def presign(rep: nacl.signing.SigningKey, n: int, tag: str) -> list[bytes]:
    subjects = [wire.signing_key_id(wire.generate_key()) for _ in range(100)]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    out = []
    for i in range(n):
        payload = {"interaction": f"{tag}-{i}", "subject": subjects[i % 100], "caller": None,
                   "observed_at": now, "answered": True, "latency_ms": 100 + i % 900,
                   "well_formed": True, "promises": [], "claimed": None, "check": None,
                   "derived": None, "engagement": None}
        out.append(json.dumps(wire.sign_payload(rep, "fact", payload),
                              separators=(",", ":")).encode())
    return out


async def batch_phase(url: str, lines: list[bytes], connections: int) -> float:
    batches = [lines[i:i + 500] for i in range(0, len(lines), 500)]
    queue: asyncio.Queue[list[bytes]] = asyncio.Queue()
    for b in batches:
        queue.put_nowait(b)
    accepted = 0

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal accepted
        while not queue.empty():
            batch = queue.get_nowait()
            async with session.post(url + "/v1/evidence/batch", data=b"\n".join(batch),
                                    headers={"Content-Type": "application/x-ndjson"}) as r:
                text = await r.text()
                assert r.status == 200, text
                accepted += text.count('"accepted"')

    start = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(worker(session) for _ in range(connections)))
    elapsed = time.perf_counter() - start
    assert accepted == len(lines), f"only {accepted} of {len(lines)} accepted"
    return len(lines) / elapsed


async def single_phase(url: str, lines: list[bytes], connections: int,
                       rate: float | None) -> tuple[float, list[float]]:
    latencies: list[float] = []
    it = iter(enumerate(lines))
    start = time.perf_counter()

    async def worker(session: aiohttp.ClientSession) -> None:
        for i, line in it:
            if rate:
                delay = start + i / rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            t0 = time.perf_counter()
            async with session.post(url + "/v1/evidence", data=line,
                                    headers={"Content-Type": "application/json"}) as r:
                await r.read()
                assert r.status == 201, r.status
            latencies.append(time.perf_counter() - t0)

    conn = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=conn) as session:
        await asyncio.gather(*(worker(session) for _ in range(connections)))
    return len(lines) / (time.perf_counter() - start), latencies


#: the operator listener's figures of one process: (python s, database s, envelopes)
Section = tuple[float, float, float]
_SECTION_METRICS = {'bureau_commit_section_seconds_total{part="python"}': 0,
                    'bureau_commit_section_seconds_total{part="database"}': 1,
                    "bureau_commit_section_envelopes_total": 2}


async def commit_sections(ops_url: str) -> Section:
    """The commit-section counters summed over the server's processes: one scrape, as
    the operator listener adds up every process's counters (multiprocess metrics)."""
    async with aiohttp.ClientSession() as session, session.get(ops_url + "/metrics") as r:
        text = await r.text()
    values = [0.0, 0.0, 0.0]
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name in _SECTION_METRICS:
            values[_SECTION_METRICS[name]] = float(value)
    return (values[0], values[1], values[2])


async def committer_backends_cpu(url: str) -> dict[int, float]:
    """CPU seconds used so far by each PostgreSQL backend serving a group committer
    (their ``application_name``), read from ``/proc``: only when the database runs on
    this machine (the embedded one does); empty otherwise."""
    conn = await asyncpg.connect(url)
    try:
        pids = [r["pid"] for r in await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'bureau committer'")]
    finally:
        await conn.close()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return cpu


def section_line(before: Section, after: Section, pg_before: dict[int, float],
                 pg_after: dict[int, float]) -> str:
    python, database, n = (a - b for a, b in zip(after, before, strict=True))
    if not n:
        return "  commit section: nothing committed"
    line = (f"  commit section under the head lock: {1e6 * (python + database) / n:.1f} "
            f"µs/envelope wall  (python CPU {1e6 * python / n:.1f}, the rest "
            f"{1e6 * database / n:.1f})")
    if pg_after:
        pg = sum(t - pg_before.get(pid, 0.0) for pid, t in pg_after.items())
        line += f"; PostgreSQL CPU of the committers' sessions {1e6 * pg / n:.1f} µs/envelope"
    return line


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] * 1000


@contextlib.asynccontextmanager
async def bench_bureau(reporter: nacl.signing.SigningKey, *, workers: int | None
                       ) -> AsyncIterator[tuple[ServeProcess, str]]:
    """``bureau serve`` on a fresh embedded database (or ``BUREAU_DATABASE_URL``) with
    ``reporter`` registered for facts: (the server, its database URL); stopped after."""
    admin = wire.generate_key()
    with tempfile.TemporaryDirectory(prefix="bureau-bench-") as tmp:
        home = Path(tmp)
        url = os.environ.get("BUREAU_DATABASE_URL") or ""
        if not url:
            from bureau.storage.db import embedded_database_url
            url = embedded_database_url(home)
        server = ServeProcess(bureau_env(url, home, wire.signing_key_id(admin)),
                              home / "serve.log", workers=workers)
        await server.start()
        try:
            env = wire.sign_payload(admin, "reporter", {
                "reporter": wire.signing_key_id(reporter), "name": "bench",
                "operator": "bench", "roles": ["facts"], "issued_at": now_text()})
            async with aiohttp.ClientSession() as s, \
                    s.post(server.url + "/v1/evidence", json=env) as r:
                assert r.status == 201, await r.text()
            yield server, url
        finally:
            server.stop()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--facts", type=int, default=100_000)
    ap.add_argument("--single", type=int, default=10_000)
    ap.add_argument("--connections", type=int, default=8,
                    help="client connections (8: SO_REUSEPORT spreads them evenly over "
                    "the server processes)")
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--workers", type=int, default=None,
                    help="bureau serve --workers (default: serve's own, one per core)")
    args = ap.parse_args()

    single_core = verify_rate()
    print(f"PyNaCl verify, one core:        {single_core:10,.0f} /s")
    processes = args.workers or default_serve_workers()
    print(f"bureau serve --workers {processes}"
          + ("" if args.workers else " (its default)"))

    rep = wire.generate_key()
    async with bench_bureau(rep, workers=args.workers) as (server, url):
        print(f"pre-signing {args.facts + 2 * args.single:,} facts ...", flush=True)
        lines = presign(rep, args.facts, "batch")
        singles = presign(rep, args.single, "single")
        paced = presign(rep, args.single, "paced")

        section = await commit_sections(server.ops_url)
        pg = await committer_backends_cpu(url)

        async def phase_done() -> None:
            nonlocal section, pg
            section, before = await commit_sections(server.ops_url), section
            pg, pg_before = await committer_backends_cpu(url), pg
            print(section_line(before, section, pg_before, pg))

        rate = await batch_phase(server.url, lines, args.connections)
        print(f"batch intake (500/batch, {args.connections} conns): {rate:10,.0f} facts/s "
              f"durable   ratio to one-core verify: {rate / single_core:.2f}")
        await phase_done()
        rate, lat = await single_phase(server.url, singles, 32, None)
        print(f"single POST, flat out (32 conns): {rate:8,.0f} facts/s   "
              f"p50 {pct(lat, 50):.1f} ms  p99 {pct(lat, 99):.1f} ms")
        await phase_done()
        rate, lat = await single_phase(server.url, paced, 64, args.rate)
        print(f"single POST, paced at {args.rate:,.0f}/s:   {rate:8,.0f} facts/s   "
              f"p50 {pct(lat, 50):.1f} ms  p99 {pct(lat, 99):.1f} ms")
        print(f"(mean latency {statistics.mean(lat) * 1000:.1f} ms)")
        await phase_done()


if __name__ == "__main__":
    asyncio.run(main())
