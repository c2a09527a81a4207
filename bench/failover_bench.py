"""How long intake is away when the primary dies (docs/scaling.md "High availability"):
the time from ``kill -9`` of the primary to the first envelope accepted, over several
failovers of one pg_auto_failover formation on loopback (tests/scaling/autofailover.py).

One ``bureau serve`` on the formation's multi-host URL; each run kills whichever node is
the primary (PostgreSQL and its keeper at once), a client posts a new fact every 20 ms
until one is accepted, the monitor's promotion is timed too, and the killed node is
started again and waited for as the new secondary before the next run. By default the
monitor notices a dead node in about 2 s and waits 2 s for it to demote itself (what
the test uses); ``--defaults`` keeps pg_auto_failover's own settings (20 s and 30 s),
what an operator gets without tuning.

It also times single POSTs on the new primary while it is alone (replication off:
pg_auto_failover's ``wait_primary``) and again once the old primary is back as its
synchronous secondary: the price of synchronous replication on one group commit.

    python bench/failover_bench.py [--runs 5] [--defaults] [--posts 200]

Needs Debian's postgresql-15-auto-failover (`pg_autoctl`); says so and exits 2 without.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import nacl.signing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reporters import wire
from tests.processes import ServeProcess, bureau_env
from tests.scaling.autofailover import (
    FAST_MONITOR,
    Formation,
    Unavailable,
    find_tools,
    first_accepted,
    formation,
)
from tests.support import fact_payload, issued


async def single_posts(serve: ServeProcess, session: aiohttp.ClientSession,
                       rep: nacl.signing.SigningKey, subject: str, label: str,
                       n: int) -> float:
    """The median latency of ``n`` single POSTs of a new fact, one at a time."""
    took = []
    for i in range(n):
        envelope = wire.sign_payload(rep, "fact", fact_payload(f"{label}-{i}", subject))
        t0 = time.perf_counter()
        async with session.post(serve.url + "/v1/evidence", json=envelope) as resp:
            assert resp.status == 201, await resp.text()
        took.append(time.perf_counter() - t0)
    return statistics.median(took)


@dataclass
class Run:
    first_accepted: float  # seconds from the kill
    promoted: float  # seconds from the kill to the monitor's promotion
    answers: int  # answered 503 before the first accepted
    alone: float  # median single POST, the new primary alone (replication off)
    synchronous: float  # the same once the old primary is its synchronous secondary


async def one_failover(f: Formation, serve: ServeProcess, session: aiohttp.ClientSession,
                       rep: nacl.signing.SigningKey, subject: str, run: int,
                       posts: int) -> Run:
    """Kill the primary, time the failover, bring the old primary back as the
    secondary; single POSTs timed before (alone) and after (synchronous)."""
    primary = await f.primary()
    secondary = f.secondary_of(primary)
    await f.wait_primary(primary, with_secondary=True)
    for i in range(20):  # intake is warm on this primary
        envelope = wire.sign_payload(rep, "fact", fact_payload(f"warm-{run}-{i}", subject))
        async with session.post(serve.url + "/v1/evidence", json=envelope) as resp:
            assert resp.status == 201, await resp.text()
    killed_at = time.monotonic()
    f.kill(primary)
    probe = asyncio.create_task(first_accepted(session, serve.url, lambda i: wire.sign_payload(
        rep, "fact", fact_payload(f"probe-{run}-{i}", subject)), killed_at))
    await f.wait_primary(secondary, with_secondary=False)
    promoted = time.monotonic() - killed_at
    probed = await probe
    alone = await single_posts(serve, session, rep, subject, f"alone-{run}", posts)
    f.run(primary)  # back as the secondary of the new primary
    await f.wait_primary(secondary, with_secondary=True)
    synchronous = await single_posts(serve, session, rep, subject, f"sync-{run}", posts)
    return Run(probed.seconds, promoted, sum(probed.answers.values()), alone, synchronous)


async def bench(f: Formation, runs: int, posts: int) -> list[Run]:
    await f.wait_primary(f.nodes[0], with_secondary=True)
    admin, rep = wire.generate_key(), wire.generate_key()
    with tempfile.TemporaryDirectory(prefix="bureau-failover-bench-") as tmp:
        env = bureau_env(f.uri(), Path(tmp), wire.signing_key_id(admin))
        serve = ServeProcess(env, Path(tmp) / "serve.log")
        await serve.start(timeout=120)
        try:
            async with aiohttp.ClientSession() as session:
                registration = wire.sign_payload(admin, "reporter", {
                    "reporter": wire.signing_key_id(rep), "name": "bench", "operator": "op",
                    "roles": ["facts"], "issued_at": issued()})
                async with session.post(serve.url + "/v1/evidence", json=registration) as r:
                    assert r.status == 201, await r.text()
                subject = wire.signing_key_id(wire.generate_key())
                results = []
                for run in range(runs):
                    r = await one_failover(f, serve, session, rep, subject, run, posts)
                    results.append(r)
                    print(f"run {run + 1}: first envelope accepted {r.first_accepted:6.2f} s "
                          f"after the kill (monitor's promotion {r.promoted:6.2f} s; "
                          f"{r.answers} answers 503 before it); single POST median "
                          f"{r.alone * 1e3:.2f} ms alone, {r.synchronous * 1e3:.2f} ms "
                          "synchronous", flush=True)
                return results
        finally:
            serve.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--defaults", action="store_true",
                    help="pg_auto_failover's own monitor settings, not the test's")
    ap.add_argument("--posts", type=int, default=200,
                    help="single POSTs timed in each run, alone and synchronous")
    args = ap.parse_args()
    try:
        find_tools()
    except Unavailable as why:
        print(f"cannot run: {why}")
        return 2
    settings: dict[str, str] = {} if args.defaults else FAST_MONITOR
    with formation(monitor_settings=settings) as f:
        results = asyncio.run(bench(f, args.runs, args.posts))
    firsts = [r.first_accepted for r in results]
    promoted = [r.promoted for r in results]
    ratio = [r.synchronous / r.alone for r in results]
    print(f"failover, {'default' if args.defaults else 'test'} monitor settings, "
          f"{len(results)} runs: kill -9 -> first accepted envelope min "
          f"{min(firsts):.2f} s, median {statistics.median(firsts):.2f} s, max "
          f"{max(firsts):.2f} s; -> monitor's promotion median "
          f"{statistics.median(promoted):.2f} s")
    print(f"synchronous replication: a single POST takes {statistics.median(ratio):.2f}x "
          f"as long as on the primary alone (median of {len(results)} runs; "
          f"{min(ratio):.2f}x to {max(ratio):.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
