"""The static mirror after a seal (issue 34; docs/benchmarks.md, "Tiles and the static
mirror"). Target: after the seal of 10,000 new entries, the mirror is current within
2 s on a quiet machine.

A bureau in this process (HTTP on loopback, an embedded PostgreSQL, the test clock to
move between epochs): ``--agents`` agents enrolled and ``--new`` facts about them, the
epoch sealed and mirrored; then ``--new`` more facts, the next seal, and the pass of
the mirror that brings it current, timed by stage: the tiles of the new entries and the
checkpoint, the epoch (its partial tiles, checkpoint, note, every agent's report, proof
bundle and card, the latest paths, the pages), ``/v1/bureau`` and the home page. With
``serve --mirror`` the pass starts within half a second of the epoch's checkpoint (the
task looks twice a second). The seal and report build are printed beside it.

    python bench/mirror_bench.py [--agents 1000] [--new 10000] [--dir DIR]

``--dir`` puts the mirror where it will live (default: under /var/tmp): the time is
mostly the file system's (a file created and renamed per read).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import nacl.signing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bureau.http.keys import PUBLISHER
from bureau.mirror.documents import Site
from bureau.mirror.sync import Mirror, PassResult
from reporters import wire
from tests.support import BureauUnderTest, fact_payload, start_bureau
from tests.tiles.support import grow
from tests.views.support import EPOCH_SECONDS, next_epoch


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


async def facts(bureau: BureauUnderTest, reporter: nacl.signing.SigningKey,
                agents: list[str], n: int, tag: str) -> None:
    """``n`` facts about ``agents``, 1,000 an HTTP batch."""
    for low in range(0, n, 1000):
        lines = [wire.sign_payload(reporter, "fact", fact_payload(
            f"{tag}-{i}", agents[i % len(agents)], agents[(i + 1) % len(agents)],
            check="PASS")) for i in range(low, min(n, low + 1000))]
        answers = await bureau.batch(lines)
        assert all(a["status"] == "accepted" for a in answers), answers[:2]


def show(label: str, result: PassResult, seconds: float) -> None:
    stages = ", ".join(f"{k} {v:.2f} s" for k, v in result.seconds.items())
    print(f"  {label}: {seconds:.2f} s ({stages}); tree size {result.size:,}, "
          f"{result.agents:,} agents, {result.files:,} files "
          f"({1000 * seconds / max(result.files, 1):.2f} ms a file)")


async def run(url: str, home: Path, root: Path, agents_n: int, new: int) -> None:
    async with start_bureau(url, home, epoch_seconds=EPOCH_SECONDS) as bureau:
        before = time.perf_counter()
        await grow(bureau, agents_n)
        conn = await asyncpg.connect(url)
        try:
            agents = [r["subject"] for r in await conn.fetch(
                "SELECT subject FROM entries WHERE kind = 'enrollment' ORDER BY seq")]
        finally:
            await conn.close()
        reporter = await bureau.reporter(("facts",))
        await facts(bureau, reporter, agents, new, "first")
        await next_epoch(bureau)
        await bureau.app[PUBLISHER].tick()
        print(f"  {agents_n:,} agents and {new:,} facts, sealed, in "
              f"{time.perf_counter() - before:.1f} s")
        mirror = Mirror(root, Site(bureau.log_key.origin, EPOCH_SECONDS, None, None))
        conn = await asyncpg.connect(url)
        try:
            start = time.perf_counter()
            result = await mirror.sync(conn)
            show("the first mirror (everything)", result, time.perf_counter() - start)
            await facts(bureau, reporter, agents, new, "second")
            start = time.perf_counter()
            await next_epoch(bureau)
            await bureau.app[PUBLISHER].tick()
            sealed = time.perf_counter() - start
            print(f"  {new:,} new entries: seal, reports and their cards built in "
                  f"{sealed:.2f} s")
            start = time.perf_counter()
            result = await mirror.sync(conn)
            current = time.perf_counter() - start
            show("the mirror after the seal", result, current)
            print(f"  => current {current:.2f} s after the epoch's checkpoint (+ at most "
                  f"0.5 s with serve --mirror; target 2 s); load average {load()} on "
                  f"{os.cpu_count()} CPUs")
            start = time.perf_counter()
            result = await mirror.sync(conn)
            show("a pass with nothing new", result, time.perf_counter() - start)
        finally:
            await conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--new", type=int, default=10_000)
    ap.add_argument("--dir", type=Path, default=None,
                    help="where to write the mirror (default: a new directory in /var/tmp)")
    args = ap.parse_args()
    import pgserver

    print(f"load average {load()} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bureau-mirror-bench-", dir="/var/tmp") as tmp:
        server = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop")
        try:
            asyncio.run(run(server.get_uri(), Path(tmp) / "home",
                            args.dir or Path(tmp) / "mirror", args.agents, args.new))
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
