"""The serial section's cost: how long the ledger head lock is held per admitted fact
(docs/scaling.md, "The serial section"), and the single-primary ceiling it implies.

Starts ``bureau serve --workers 1`` on a fresh embedded database (or
BUREAU_DATABASE_URL), sends pre-signed facts in batches of 500 as
``bench/intake_bench.py`` does — first over one connection, one batch at a time (the
section alone), then over several (the section sharing its process with the handlers)
— and reads the bureau's own ``bureau_db_transaction_seconds{name="append_group"}``
before and after each phase: the group-commit transaction runs from the BEGIN that
takes the lock to its COMMIT.

    python bench/head_lock_bench.py [--facts 40000] [--connections 8]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.intake_bench import batch_phase, bench_bureau, presign
from reporters import wire
from tests.processes import ServeProcess

HELD = "bureau_db_transaction_seconds_sum"
GROUPS = "bureau_db_transaction_seconds_count"


def sample(text: str, name: str) -> float:
    """The append_group transactions' committed sample of ``name`` in a scrape."""
    for line in text.splitlines():
        if (line.startswith(name + "{") and 'name="append_group"' in line
                and 'outcome="commit"' in line):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def scrape(server: ServeProcess) -> str:
    async with aiohttp.ClientSession() as s, s.get(server.ops_url + "/metrics") as r:
        return await r.text()


async def phase(server: ServeProcess, lines: list[bytes], connections: int) -> None:
    before = await scrape(server)
    rate = await batch_phase(server.url, lines, connections)
    after = await scrape(server)
    held = sample(after, HELD) - sample(before, HELD)
    groups = sample(after, GROUPS) - sample(before, GROUPS)
    per_fact = held / len(lines)
    print(f"{connections} connection(s): {rate:8,.0f} facts/s, {groups:.0f} groups, "
          f"lock held {per_fact * 1e6:6.1f} µs per fact (busy {held * rate / len(lines):.0%})"
          f"  -> ceiling {1 / per_fact:8,.0f} facts/s", flush=True)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--facts", type=int, default=40_000, help="split over the two phases")
    ap.add_argument("--connections", type=int, default=8)
    args = ap.parse_args()
    rep = wire.generate_key()
    async with bench_bureau(rep, workers=1) as (server, _):
        lines = presign(rep, args.facts, "lock")
        half = len(lines) // 2
        print("bureau serve --workers 1, batches of 500")
        await phase(server, lines[:half], 1)
        await phase(server, lines[half:], args.connections)


if __name__ == "__main__":
    asyncio.run(main())
