"""The log as C2SP tlog-tiles at a million entries (issue 34; docs/benchmarks.md, "Tiles
and the static mirror"). Targets: tile reads from the bureau p99 < 2 ms; from the
static mirror 0 database queries, and a proof in at most 2·⌈log₂₅₆ n⌉ + 2 tile fetches.

The ledger is proof_bench's (placeholder entries with random ids and their tree, built
in a fresh database in about a minute, or kept with ``TILES_BENCH_HOME=/dir``). Then:

1. ``bureau serve`` on it; ``GET /tile/…`` one request at a time over loopback HTTP:
   random full level-0 tiles and entry bundles read once each (from PostgreSQL), the
   same again (from the process's memory), the level-1 tiles and partial tiles; beside
   ``GET /checkpoint`` in the same run, the anchor (a route that reads one row);
2. ``bureau mirror DIR`` of it (the tiles of a million entries), timed;
3. the bureau stopped, DIR served by Debian's nginx (or ``python -m http.server``):
   inclusion and consistency proofs computed by bureau-check's own reader from the
   tiles, every tile checked against the signed checkpoint, each proof's tile fetches
   counted, and PostgreSQL's committed transactions counted over the whole phase.

    python bench/tiles_bench.py [--entries 1000000] [--reads 2000] [--proofs 200]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from proof_bench import Ledger, pct, prepared  # the bench next door

from bureau.mirror.documents import Site
from bureau.mirror.sync import Mirror
from bureau.transparency.heads import LogKey
from reporters import TreeHead, verify_consistency, verify_inclusion, verify_note
from reporters.check.bureau import Bureau
from reporters.tlog.checkpoint import default_origin
from reporters.tlog.merkle import RootAccumulator, entry_leaf_hash
from reporters.tlog.tiles import TILE_WIDTH, Tile, tiles_of
from tests.processes import ServeProcess
from tests.tiles.programs import static_server


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


async def _timed(session: aiohttp.ClientSession, url: str) -> float:
    t0 = time.perf_counter()
    async with session.get(url) as resp:
        await resp.read()
        assert resp.status == 200, (url, resp.status)
    return time.perf_counter() - t0


async def server_buckets(session: aiohttp.ClientSession, ops_url: str, route: str
                         ) -> dict[str, float]:
    """The bureau's own ``bureau_http_request_seconds`` buckets of ``route`` (200s)."""
    async with session.get(ops_url + "/metrics") as resp:
        text = await resp.text()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("bureau_http_request_seconds_bucket{") and \
                f'route="{route}"' in line and 'status="200"' in line:
            le = line.split('le="', 1)[1].split('"', 1)[0]
            out[le] = out.get(le, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def _share(after: dict[str, float], before: dict[str, float], le: str) -> float:
    done = after.get("+Inf", 0.0) - before.get("+Inf", 0.0)
    return 100 * (after.get(le, 0.0) - before.get(le, 0.0)) / done if done else 0.0


async def tile_reads(url: str, ops_url: str, n: int, reads: int) -> None:
    """Step 1: one request at a time."""
    rng = random.Random(5)
    full = n // TILE_WIDTH
    picked = rng.sample(range(full), min(reads, full))
    cases = {  # in this order: the memory keeps the last 2,048 full tiles read
        "level-0 tile, first read (PostgreSQL)": [Tile(0, i, 256) for i in picked],
        "level-0 tile, read again (memory)": [Tile(0, i, 256) for i in picked],
        "entry bundle, first read (PostgreSQL)": [Tile(-1, i, 256) for i in picked],
        "level-1 tile (memory after the first)": [Tile(1, i % max(1, full // 256), 256)
                                                  for i in picked] if full >= 256 else [],
        "partial tiles of the head (PostgreSQL)": [t for t in tiles_of(n) if not t.full
                                                   and not t.is_entries] * (reads // 4 + 1),
    }
    async with aiohttp.ClientSession() as session:
        for _ in range(50):  # warm the connection (not the tiles)
            await _timed(session, f"{url}/checkpoint")
        anchor = [await _timed(session, f"{url}/checkpoint") for _ in range(reads)]
        print(f"  {'GET /checkpoint (the anchor: one row)':44} p50 {pct(anchor, 50):.2f} ms  "
              f"p99 {pct(anchor, 99):.2f} ms")
        for label, tiles in cases.items():
            if not tiles:
                continue
            before = await server_buckets(session, ops_url, "/tile/{tile}")
            times = [await _timed(session, f"{url}/{t.path}") for t in tiles]
            after = await server_buckets(session, ops_url, "/tile/{tile}")
            print(f"  {label:44} p50 {pct(times, 50):.2f} ms  p99 {pct(times, 99):.2f} ms  "
                  f"({len(times)} reads; p99 {pct(times, 99) / pct(anchor, 99):.2f}x the "
                  f"anchor's; server: {_share(after, before, '0.001'):.1f} % within 1 ms, "
                  f"{_share(after, before, '0.0025'):.1f} % within 2.5 ms)")


async def transactions(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("SELECT pg_stat_force_next_flush()")
        value: int = await conn.fetchval(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()")
        return value
    finally:
        await conn.close()


async def from_the_mirror(url: str, root: Path, ids: list[str], vkey: str, proofs: int,
                          work: Path) -> None:
    """Step 3: the bureau is stopped; proofs from the mirror's tiles."""
    n = len(ids)
    bound = 2 * math.ceil(math.log(n, 256)) + 2
    rng = random.Random(9)
    before = await transactions(url)
    async with static_server(root, work / "server") as server, \
            aiohttp.ClientSession() as session:
        reader = Bureau(server.url, session)
        async with session.get(server.url + "/checkpoint") as resp:
            head = verify_note(await resp.text(), vkey)
        assert await reader.static()
        counts, times = [], []
        for _ in range(proofs):
            index = rng.randrange(n)
            start, fetched = time.perf_counter(), reader.tiles_fetched
            proof = await reader.inclusion(ids[index], head, index)
            verify_inclusion(ids[index], proof, head, leaf_index=index)
            times.append(time.perf_counter() - start)
            counts.append(reader.tiles_fetched - fetched)
        print(f"  inclusion from {server.kind}: {proofs} proofs, tile fetches max "
              f"{max(counts)} (bound 2·⌈log256 n⌉+2 = {bound}), mean "
              f"{sum(counts) / len(counts):.1f}; p50 {pct(times, 50):.1f} ms, p99 "
              f"{pct(times, 99):.1f} ms a proof (parallel fetches, each tile checked)")
        counts = []
        for old, root in _roots(ids, sorted(rng.sample(range(1, n), proofs // 4 + 1))):
            fetched = reader.tiles_fetched
            proof = await reader.consistency(old, head)
            verify_consistency(proof, TreeHead(old, root), head)
            counts.append(reader.tiles_fetched - fetched)
        print(f"  consistency from {server.kind}: {len(counts)} proofs, each checked, tile "
              f"fetches max {max(counts)} (bound {bound})")
    after = await transactions(url)
    print(f"  PostgreSQL committed {after - before} transactions over this phase: the "
          "bench's own, that read the count (the bureau is stopped: every read above came "
          "from files)")


def _roots(ids: list[str], sizes: list[int]) -> list[tuple[int, str]]:
    """The root of the tree at each of ``sizes`` (ascending), in one pass over the ids."""
    acc, at, out = RootAccumulator(), 0, []
    for size in sizes:
        for entry_id in ids[at:size]:
            acc.push(entry_leaf_hash(entry_id))
        at = size
        out.append((size, acc.root().hex()))
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--reads", type=int, default=2000)
    ap.add_argument("--proofs", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bureau-tiles-bench-", dir="/var/tmp") as tmp:
        home = Path(os.environ.get("TILES_BENCH_HOME") or tmp)
        ledger = await prepared(home, args.entries)
        try:
            await run(ledger, home, args)
        finally:  # before its directory goes: a server without its data cannot stop
            if not os.environ.get("BUREAU_DATABASE_URL"):
                import pgserver

                pgserver.get_server(home / "pgdata", cleanup_mode="stop").cleanup()


async def run(ledger: Ledger, home: Path, args: argparse.Namespace) -> None:
    url, ids, signing = ledger.url, ledger.ids, ledger.signing
    print(f"load average {load()} on {os.cpu_count()} CPUs")
    server = ServeProcess(ledger.env(), home / "serve.log")
    await server.start(timeout=120)
    try:
        print(f"1. tiles from the bureau ({args.entries:,} entries, one request at a "
              "time, loopback HTTP)")
        await tile_reads(server.url, server.ops_url, args.entries, args.reads)
    finally:
        server.stop()
    origin = default_origin(bytes(signing.verify_key))
    root = home / "mirror"
    mirror = Mirror(root, Site(origin, 21600, None, None))
    conn = await asyncpg.connect(url)
    try:
        start = time.perf_counter()
        result = await mirror.sync(conn)
        print(f"2. bureau mirror: tree size {result.size:,}: {result.files:,} files in "
              f"{time.perf_counter() - start:.1f} s (tiles {result.seconds['tiles']:.1f} s)")
    finally:
        mirror.close()
        await conn.close()
    print("3. from the mirror, the bureau stopped")
    vkey = LogKey.of(origin, signing).vkey
    await from_the_mirror(url, root, ids, vkey, args.proofs, home)
    print(f"load average {load()}")


if __name__ == "__main__":
    asyncio.run(main())
