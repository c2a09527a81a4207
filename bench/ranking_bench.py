"""The home page's ranked list (bureau.reads.ranking) over one epoch of N reports: the
first view of an epoch decodes every report of it in PostgreSQL and ranks them; later
views and searches scan that list in memory. Prints the time of the first read, then of
the first page, a name search and a key search from memory.

    .venv/bin/python bench/ranking_bench.py [N ...]   (default 1000 10000 50000)
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bureau.reads.ranking import Ranking
from bureau.storage import db
from reporters import wire


def _report(agent: str, name: str, low: float) -> bytes:
    """A report envelope of the size and shape the bureau signs (the signature is not
    checked here: the list only reads payloads)."""
    payload = {"agent": agent, "name": name, "epoch": 1, "ledger": {"seq": 1, "head": "0" * 64},
               "policy": "0" * 64, "score": {"value": low + 0.1, "low": low,
                                             "high": min(1.0, low + 0.2), "weight": 10.0,
                                             "interactions": 10},
               "outcomes": {"ACCEPTED": 9, "FAILED_DISCOVERED": 1}, "unscored": {},
               "reliability": {"observed": 10, "answer_rate": 1.0, "well_formed_rate": 1.0,
                               "latency_ms": {"p50": 100, "p95": 900}, "promises": {}},
               "probes": {"passed": 0, "failed": 0}, "first_seen_epoch": 1,
               "excluded": {"self_dealing": 0, "disputed": 0, "distrusted": 0},
               "value_judgment_share": 0.0, "ground_truth_share": 1.0,
               "provisional_share": 0.0, "reporters": [], "evidence": {"root": "0" * 64}}
    body = wire.canonical_json(payload)
    return wire.canonical_json({"payload": wire.b64encode(body),
                                "payloadType": wire.payload_type("report"),
                                "signatures": [{"keyid": agent, "sig": "A" * 86}]})


async def bench(url: str, n: int) -> None:
    conn = await db.connect(url)
    try:
        await conn.execute("TRUNCATE reports, checkpoints")
        rnd = random.Random(n)
        rows = []
        for i in range(n):
            agent = wire.signing_key_id(wire.generate_key())
            rows.append((agent, 1, _report(agent, f"agent {i}", rnd.random() * 0.8)))
        await conn.copy_records_to_table("reports", records=rows,
                                         columns=["agent", "epoch", "envelope"])
        await conn.execute("INSERT INTO checkpoints (epoch, envelope) VALUES (1, '\\x00')")
        await conn.execute("ANALYZE reports")
        key_part = rows[n // 2][0][8:20]
        reads = []
        for _ in range(3):
            start = time.perf_counter()
            await Ranking().page(conn, None, 1)
            reads.append(time.perf_counter() - start)
        print(f"{n:>7} reports  {'epoch read':<12} median {statistics.median(reads) * 1000:7.1f} "
              "ms  (3 runs: decode, rank, keep)")
        ranking = Ranking()
        await ranking.page(conn, None, 1)
        for label, query in (("first page", None), ("name search", "agent 12"),
                             ("key search", key_part)):
            times = []
            for _ in range(5):
                start = time.perf_counter()
                page = await ranking.page(conn, query, 1)
                times.append(time.perf_counter() - start)
            assert page.rows
            print(f"{n:>7} reports  {label:<12} median {statistics.median(times) * 1000:7.1f} ms"
                  f"  (5 runs, {len(page.rows)} rows shown)")
    finally:
        await conn.close()


async def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="bureau-ranking-") as home:
        url = db.embedded_database_url(Path(home))
        conn = await db.connect(url)
        try:
            await db.migrate(conn)
        finally:
            await conn.close()
        for n in sizes:
            await bench(url, n)


if __name__ == "__main__":
    asyncio.run(main([int(a) for a in sys.argv[1:]] or [1000, 10000, 50000]))
