"""Proof serving at a million entries, over real HTTP (SPEC §9; target p99 < 5 ms).

Builds the tree of an N-entry ledger in a fresh database quickly, without signing N
envelopes: a genesis entry and N - 1 placeholder entries (random ids, chained, in the
current epoch so that nothing is sealed), their tree nodes computed with the library
(``Frontier.extend``) and COPYed in, the ledger head moved to the last one. Then starts
``bureau serve`` on it (which signs the head at size N as it starts) and measures:

* ``GET /v1/proofs/inclusion?id=…&size=N`` — random entries, in the published tree;
* ``GET /v1/proofs/consistency?from=…&to=…`` — random pairs of sizes;
* ``GET /checkpoint``;

each one request at a time, then flat out over several connections (throughput: the
latency there is mostly waiting behind the other connections' requests), then paced at
``--rate`` a second over those connections (latency under load).

Each inclusion proof served is checked against the signed head (the client's verify_inclusion).

    python bench/proof_bench.py [--entries 1000000] [--requests 3000] [--connections 8]

To measure again without building again, give it a directory to keep its embedded
database and key in (``PROOF_BENCH_HOME=/some/dir``): a ledger of the same size found
there is used as it is.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import asyncpg
import nacl.signing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bureau.config import DEFAULT_EPOCH_SECONDS
from bureau.intake.clock import epoch_of, format_timestamp
from bureau.scoring.policy import KNOWN_POLICIES, policy_hash
from bureau.storage import db
from reporters import verify_inclusion, verify_note, wire
from reporters.tlog.checkpoint import default_origin
from reporters.tlog.merkle import Frontier, entry_leaf_hash
from tests.processes import ServeProcess, bureau_env

CHUNK = 50_000


async def built(url: str, n: int) -> list[str] | None:
    """The ids of a ledger this bench built before on ``url``, if it has ``n`` entries."""
    conn = await asyncpg.connect(url)
    try:
        if await conn.fetchval("SELECT to_regclass('tree_nodes')") is None:
            return None
        if await conn.fetchval("SELECT seq FROM ledger_head") != n:
            return None
        return [r["id"] for r in await conn.fetch("SELECT id FROM entries ORDER BY seq")]
    finally:
        await conn.close()


async def build(url: str, n: int, signing_public: bytes, admin: str) -> list[str]:
    """The ledger's entries (placeholders after the genesis entry) and its tree."""
    now = dt.datetime.now(dt.UTC)
    epoch = epoch_of(now, DEFAULT_EPOCH_SECONDS)
    stamp = format_timestamp(now)
    rng = random.Random(7)
    conn = await asyncpg.connect(url)
    try:
        await db.migrate(conn)
        ids: list[str] = []
        frontier, prev, nodes_written = Frontier.empty(), wire.ZERO_ID, 0
        policy = next(iter(KNOWN_POLICIES.values()))
        genesis = wire.canonical_json({
            "seq": 1, "prev": prev, "kind": "genesis", "recorded_at": stamp, "epoch": epoch,
            "body": {"policy": policy_hash(policy), "epoch_seconds": DEFAULT_EPOCH_SECONDS,
                     "origin": default_origin(signing_public),
                     # r3: who signs for the ledger, and its admins
                     "key": wire.key_id(signing_public), "admins": [admin]}})
        start = time.perf_counter()
        for low in range(0, n, CHUNK):
            rows = []
            for seq in range(low + 1, min(n, low + CHUNK) + 1):
                if seq == 1:
                    entry, kind = genesis, "genesis"
                    entry_id = wire.blake3_hex(genesis)
                else:
                    entry, kind = b'{"placeholder":true}', "withdrawal"
                    entry_id = rng.randbytes(32).hex()
                rows.append((seq, entry_id, prev, kind, now, epoch, None, None, None, entry))
                ids.append(entry_id)
                prev = entry_id
            frontier, nodes = frontier.extend(entry_leaf_hash(r[1]) for r in rows)
            async with conn.transaction():
                await conn.copy_records_to_table("entries", records=rows, columns=(
                    "seq", "id", "prev", "kind", "recorded_at", "epoch", "signer", "subject",
                    "content_key", "entry"))
                await conn.copy_records_to_table("tree_nodes", records=nodes,
                                                 columns=("level", "idx", "hash"))
            nodes_written += len(nodes)
            print(f"\r  {len(ids):,} entries, {nodes_written:,} tree nodes", end="", flush=True)
        await conn.execute("UPDATE ledger_head SET seq = $1, head = $2, recorded_at = $3",
                           n, prev, now)
        await conn.execute("INSERT INTO ledger_keys (from_seq, seq, bureau, admins) "
                           "VALUES (1, 1, $1, $2)", wire.key_id(signing_public), [admin])
        await conn.execute("ANALYZE")
        print(f"\n  built in {time.perf_counter() - start:.1f} s")
        return ids
    finally:
        await conn.close()


@dataclass(frozen=True)
class Ledger:
    """A ledger this bench built (or found built) under ``home``, and its keys."""

    url: str
    home: Path
    signing: nacl.signing.SigningKey
    admin: nacl.signing.SigningKey
    key_file: Path
    ids: list[str]

    def env(self) -> dict[str, str]:
        """The environment of a ``bureau serve`` on it."""
        return bureau_env(self.url, self.home, wire.signing_key_id(self.admin),
                          BUREAU_SIGNING_KEY=str(self.key_file))


async def prepared(home: Path, entries: int) -> Ledger:
    """The ``entries``-entry ledger in ``home`` (its embedded database, or
    ``BUREAU_DATABASE_URL``): the one built before there, or a new one."""
    home.mkdir(parents=True, exist_ok=True)
    url = os.environ.get("BUREAU_DATABASE_URL") or db.embedded_database_url(home)
    key_file, admin_file = home / "proof-bench.key", home / "proof-bench-admin.key"
    if key_file.exists() and admin_file.exists():  # the ledger's own keys (genesis)
        signing = wire.key_from_pem(key_file.read_text())
        admin = wire.key_from_pem(admin_file.read_text())
    else:
        signing, admin = wire.generate_key(), wire.generate_key()
        key_file.write_text(wire.key_to_pem(signing))
        admin_file.write_text(wire.key_to_pem(admin))
    ids = await built(url, entries)
    if ids is None:
        print(f"building a {entries:,}-entry ledger and its tree ...")
        ids = await build(url, entries, bytes(signing.verify_key), wire.signing_key_id(admin))
    else:
        print(f"the {entries:,}-entry ledger built before on {url}")
    return Ledger(url, home, signing, admin, key_file, ids)


async def server_share_under(session: aiohttp.ClientSession, ops_url: str, route: str,
                             before: tuple[float, float] | None) -> tuple[float, float]:
    """(requests answered within 5 ms, all requests) of ``route`` by the server's own
    clock (the bureau_http_request_seconds histogram on the operator listener), since
    ``before``."""
    async with session.get(ops_url + "/metrics") as resp:
        assert resp.status == 200, resp.status
        text = await resp.text()
    under = total = 0.0
    for line in text.splitlines():
        if not line.startswith("bureau_http_request_seconds_bucket{") or \
                f'route="{route}"' not in line or 'status="200"' not in line:
            continue
        if 'le="0.005"' in line:
            under += float(line.rsplit(" ", 1)[1])
        elif 'le="+Inf"' in line:
            total += float(line.rsplit(" ", 1)[1])
    if before is not None:
        under, total = under - before[0], total - before[1]
    return under, total


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] * 1000


async def measure(url: str, ops_url: str, ids: list[str], requests: int, connections: int,
                  rate: float) -> None:
    n = len(ids)
    rng = random.Random(11)
    async with aiohttp.ClientSession() as session:
        async with session.get(url + "/v1/bureau") as resp:
            vkey = (await resp.json())["vkey"]
        async with session.get(url + "/checkpoint") as resp:
            head = verify_note(await resp.text(), vkey)
        assert head.size == n, head.size
        print(f"published head: size {head.size:,}, root {head.root_hex}")
        # a few published sizes to ask for, with their roots (notes of the bureau's)
        inclusion = [(rng.randrange(n), n) for _ in range(requests)]
        consistency = [tuple(sorted((rng.randrange(1, n + 1), n))) for _ in range(requests)]

        async def timed(path: str) -> tuple[float, object]:
            t0 = time.perf_counter()
            async with session.get(url + path) as resp:
                body = await resp.read()
                assert resp.status == 200, body
            return time.perf_counter() - t0, body

        async def series(paths: list[str], concurrency: int, rate: float | None = None,
                         ) -> tuple[list[float], list[bytes]]:
            """Flat out over ``concurrency`` connections, or paced at ``rate`` a second."""
            times: list[float] = []
            bodies: list[bytes] = []
            queue = list(reversed(paths))
            start = time.perf_counter()

            async def worker() -> None:
                while queue:
                    path, i = queue.pop(), len(paths) - len(queue) - 1
                    if rate:
                        await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
                    t, body = await timed(path)
                    times.append(t)
                    bodies.append(body)  # type: ignore[arg-type]

            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return times, bodies

        inc_paths = [f"/v1/proofs/inclusion?id={ids[i]}&size={s}" for i, s in inclusion]
        con_paths = [f"/v1/proofs/consistency?from={m}&to={s}" for m, s in consistency]
        routes = {"inclusion": "/v1/proofs/inclusion", "consistency": "/v1/proofs/consistency",
                  "/checkpoint": "/checkpoint"}
        for label, paths in (("inclusion", inc_paths), ("consistency", con_paths),
                             ("/checkpoint", ["/checkpoint"] * requests)):
            await series(paths[:1000], 1)  # warm the connection and the caches
            for conc, paced in ((1, None), (connections, None), (connections, rate)):
                before = await server_share_under(session, ops_url, routes[label], None)
                start = time.perf_counter()
                times, bodies = await series(paths, conc, paced)
                wall = time.perf_counter() - start
                under, total = await server_share_under(session, ops_url, routes[label],
                                                         before)
                how = f"{conc} conn" + (f" at {paced:,.0f}/s" if paced else "")
                print(f"{label:12} {how:16} {len(times) / wall:7,.0f} req/s   "
                      f"p50 {pct(times, 50):.2f} ms  p99 {pct(times, 99):.2f} ms  "
                      f"max {max(times) * 1000:.1f} ms   server: {100 * under / total:.1f} % "
                      "within 5 ms")
            if label == "inclusion":
                for body in bodies:
                    proof = json.loads(body)
                    verify_inclusion(ids[proof["leaf_index"]], proof, head)
                print(f"  ({len(times)} proofs of up to "
                      f"{max(len(json.loads(b)['hashes']) for b in bodies)} hashes, each "
                      "checked against the signed head)")
        print(f"(load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} on "
              f"{os.cpu_count()} CPUs)")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--rate", type=float, default=300.0,
                    help="requests a second in the paced phase (default 300)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bureau-proof-bench-") as tmp:
        home = Path(os.environ.get("PROOF_BENCH_HOME") or tmp)
        ledger = await prepared(home, args.entries)
        ids = ledger.ids
        server = ServeProcess(ledger.env(), home / "serve.log")
        await server.start(timeout=120)
        try:
            await measure(server.url, server.ops_url, ids, args.requests, args.connections,
                          args.rate)
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())
