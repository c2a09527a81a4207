"""Proof bundles and cards on the accuracy bench's population (issue 34; docs/benchmarks.md,
"Tiles and the static mirror"). Targets: a bundle verifies offline in < 5 ms; the card
is at most 4 KB for every report.

The accuracy bench's plans (bureau/simulate/accuracy: agents of known quality, honest
callers and the attack catalogue's adversaries, at each ground-truth coverage) played
through a live in-process bureau and sealed, as ``make bench-accuracy`` does; then every
report of the epoch — agents, callers, adversaries — is fetched as its proof bundle and
its card (``GET /v1/agents/{agent}/proof``, ``/card``), each card measured, and each
verified offline with ``reporters.verify_bundle`` / ``verify_card`` (the code
``bureau-check bundle`` and ``card`` run), timed.

    python bench/portable_bench.py [--seeds 3] [--agents 24] [--calls 40] [--coverages ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bureau.simulate.accuracy.play import play
from bureau.simulate.accuracy.run import add_arguments, plans, sweep_of
from bureau.simulate.local import local_bureau
from reporters import verify_bundle, verify_card
from reporters.portable import MAX_CARD_BYTES


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


async def measure(args: argparse.Namespace) -> int:
    todo = [p for _, _, _, p in plans(sweep_of(args))]
    async with local_bureau(10) as target:
        start = time.perf_counter()
        played = await play(target, todo)
        print(f"{len(todo)} plans played and sealed in {time.perf_counter() - start:.0f} s")
        keys = sorted({k for p in played for k in (*p.agents, *p.callers)})
        sizes, bundle_ms, card_ms, reports = [], [], [], 0
        async with aiohttp.ClientSession() as session:
            async with session.get(target.url + "/v1/bureau") as resp:
                vkey = (await resp.json())["vkey"]
            for key in keys:
                async with session.get(f"{target.url}/v1/agents/{key}/proof") as resp:
                    if resp.status == 404:
                        continue
                    bundle = json.loads(await resp.read())
                async with session.get(f"{target.url}/v1/agents/{key}/card") as resp:
                    card_body = await resp.read()
                reports += 1
                sizes.append(len(card_body))
                card = json.loads(card_body)
                t0 = time.perf_counter()
                verify_bundle(bundle, [vkey], agent=key)
                t1 = time.perf_counter()
                verify_card(card, [vkey], agent=key)
                t2 = time.perf_counter()
                bundle_ms.append((t1 - t0) * 1000)
                card_ms.append((t2 - t1) * 1000)
    over = sum(1 for s in sizes if s > MAX_CARD_BYTES)
    print(f"{reports} reports of the population (agents, callers, adversaries)")
    print(f"card size: max {max(sizes):,} B, p50 {pct(sizes, 50):,} B, min {min(sizes):,} B; "
          f"{over} over {MAX_CARD_BYTES:,} B (the 4 KB target)")
    print(f"bundle verified offline: p50 {pct(bundle_ms, 50):.2f} ms, p99 "
          f"{pct(bundle_ms, 99):.2f} ms, max {max(bundle_ms):.2f} ms (target < 5 ms)")
    print(f"card verified offline: p50 {pct(card_ms, 50):.2f} ms, p99 {pct(card_ms, 99):.2f} "
          f"ms, max {max(card_ms):.2f} ms")
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} on "
          f"{os.cpu_count()} CPUs")
    return 1 if over else 0


def main() -> int:
    for name in ("bureau", "reporters", "aiohttp.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    return asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
