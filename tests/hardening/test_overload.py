"""Overload (SPEC §6 ``UNAVAILABLE``): a real ``bureau serve`` offered twice what it can
take keeps its memory flat — its intake queue is bounded (``Config.max_pending``), and
past it the answer is ``503`` with ``Retry-After``, never a 500 and never an unbounded
backlog. The bound is lowered here (``--max-pending``) so that it is reached in seconds.

First the server's throughput is measured (closed loop); then an open-loop client offers
twice that, whatever the answers, while the server's RSS is sampled from /proc. The
closed-loop figure is only a starting point: on a shared machine the server may run
faster once the measurement is over, so the offered rate goes up by half again whenever
a stretch of overload passed without the queue filling (no 503), until it does.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import nacl.signing
import pytest

from reporters import wire
from tests.processes import ServeProcess, bureau_env
from tests.support import fact_payload, registration

pytestmark = pytest.mark.slow

BATCH = 500
WARMUP_SECONDS = 2.0
MEASURE_SECONDS = 5.0
MAX_RSS_GROWTH_MB = 150
#: the server's queue bound for this test (``bureau serve --max-pending``; 20,000 by
#: default, which at this machine's rate is ~15 s of backlog: too long to wait for here)
MAX_PENDING = 4000
#: stretches of overload offered at most, each half as much again as the one before,
#: until the queue bound is reached (see the module doc)
MAX_STRETCHES = 4


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@dataclass
class Tally:
    statuses: Counter[int] = field(default_factory=Counter)
    accepted: int = 0
    retry_after_ok: bool = True


def signed_batches(rep: nacl.signing.SigningKey, prefix: str, n: int) -> list[bytes]:
    subject = wire.signing_key_id(wire.generate_key())
    lines = [json.dumps(wire.sign_payload(rep, "fact", fact_payload(
        f"{prefix}-{i}", subject, latency_ms=i))).encode() for i in range(n)]
    return [b"\n".join(lines[i:i + BATCH]) + b"\n" for i in range(0, n, BATCH)]


async def post(session: aiohttp.ClientSession, url: str, body: bytes, tally: Tally) -> None:
    try:
        async with session.post(url + "/v1/evidence/batch", data=body,
                                headers={"Content-Type": "application/x-ndjson"},
                                timeout=aiohttp.ClientTimeout(total=120)) as resp:
            text = await resp.text()
            tally.statuses[resp.status] += 1
            if resp.status == 200:
                tally.accepted += text.count('"accepted"')
            elif resp.status == 503:
                body_ = json.loads(text)
                tally.retry_after_ok &= (resp.headers.get("Retry-After", "").isdigit()
                                         and body_["code"] == "UNAVAILABLE")
    except (aiohttp.ClientError, TimeoutError):
        tally.statuses[0] += 1


async def test_twice_the_capacity_keeps_memory_flat(database_url: str, tmp_path: Path) -> None:
    admin, rep = wire.generate_key(), wire.generate_key()
    server = ServeProcess(bureau_env(database_url, tmp_path, wire.signing_key_id(admin)),
                          tmp_path / "serve.log",
                          extra_args=("--max-pending", str(MAX_PENDING)))
    await server.start()
    assert server.proc is not None
    pid = server.proc.pid
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            env = wire.sign_payload(admin, "reporter", registration(rep, operator="op"))
            async with session.post(server.url + "/v1/evidence", json=env) as resp:
                assert resp.status == 201

            # 1. Throughput, closed loop: eight posters, each waits for its answer;
            # the first WARMUP_SECONDS are not counted.
            queue = signed_batches(rep, "warm", 100 * BATCH)
            warmup, measured = Tally(), Tally()
            start = time.monotonic()

            async def poster() -> None:
                while queue and time.monotonic() - start < WARMUP_SECONDS + MEASURE_SECONDS:
                    warm = time.monotonic() - start < WARMUP_SECONDS
                    await post(session, server.url, queue.pop(), warmup if warm else measured)

            await asyncio.gather(*(poster() for _ in range(8)))
            # The window ends when time is up or the pre-signed batches run out, whichever
            # comes first (a faster server may use them all).
            capacity = measured.accepted / (time.monotonic() - start - WARMUP_SECONDS)
            assert capacity > 0, (measured.statuses, len(queue))
            baseline = rss_mb(pid)

            # 2. Twice that, open loop: a batch every BATCH / (2·capacity) seconds,
            # whether or not earlier ones were answered. At 2x the backlog grows by
            # `capacity` envelopes a second, so the queue bound is reached after
            # max_pending / capacity seconds; offer half as long again past that.
            offered_rate = 2 * capacity
            overload_seconds = min(30.0, 1.5 * MAX_PENDING / capacity + 8)
            load = Tally()
            samples: list[float] = []
            stop = asyncio.Event()

            async def sampler() -> None:
                while not stop.is_set():
                    samples.append(rss_mb(pid))
                    await asyncio.sleep(0.2)

            sampling = asyncio.create_task(sampler())
            tasks: list[asyncio.Task[None]] = []
            sent = 0
            # Each stretch offers `offered_rate` for `overload_seconds`; a stretch that
            # ends without a 503 was not past the server's capacity after all (the
            # machine got faster), so the next offers half as much again: at most
            # MAX_STRETCHES stretches.
            for stretch in range(MAX_STRETCHES):
                if stretch:
                    offered_rate *= 1.5
                total = int(offered_rate * overload_seconds) // BATCH * BATCH + BATCH
                batches = signed_batches(rep, f"load{sent}", total)
                interval = BATCH / offered_rate
                t0 = time.monotonic()
                for i, body in enumerate(batches):
                    await asyncio.sleep(max(0.0, t0 + i * interval - time.monotonic()))
                    tasks.append(asyncio.create_task(post(session, server.url, body, load)))
                sent += total
                if load.statuses[503] > 0:
                    break
            await asyncio.gather(*tasks)
            stop.set()
            await sampling
    finally:
        server.stop()

    peak = max(samples)
    print(f"\ncapacity {capacity:,.0f} envelopes/s; offered up to {offered_rate:,.0f}/s "
          f"in stretches of {overload_seconds:.0f} s ({sent // BATCH} batches of {BATCH}); "
          f"answers {dict(load.statuses)}; accepted {load.accepted}; "
          f"RSS baseline {baseline:.0f} MB, peak {peak:.0f} MB (+{peak - baseline:.0f} MB)")
    assert load.statuses[503] > 0, "past its queue the server said 503"
    assert all(s in (200, 503) for s in load.statuses), load.statuses
    assert load.retry_after_ok, "every 503 is UNAVAILABLE with Retry-After"
    assert load.accepted > 0
    assert peak - baseline < MAX_RSS_GROWTH_MB, (baseline, peak)

