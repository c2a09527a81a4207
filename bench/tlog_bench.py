"""The Merkle tree's own costs, without a database (docs/transparency.md).

Appends N entry ids with ``Frontier.extend`` in batches (as the committer would), keeping
every complete node in one flat bytearray per level, then times proofs computed from
those nodes — the CPU part of serving a proof; the server's part is one indexed query
for ``plan.nodes``:

1. append throughput (leaves/s) and the rows written per leaf;
2. inclusion and consistency proofs at size N, random indexes and old sizes: plan +
   hashes, p50 / p99 in microseconds, and the most nodes one proof needed;
3. ``evidence_root`` over a file of F ids.

    python bench/tlog_bench.py [--entries 1000000] [--batch 500] [--proofs 2000]
        [--file 10000]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import time

from reporters.tlog import evidence, merkle, proofs


class LevelStore:
    """Complete nodes as 32-byte slots in one bytearray per level."""

    def __init__(self) -> None:
        self.levels: list[bytearray] = []

    def add(self, level: int, index: int, h: bytes) -> None:
        while len(self.levels) <= level:
            self.levels.append(bytearray())
        data = self.levels[level]
        assert len(data) == index * 32, "nodes of a level complete in order"
        data += h

    def get(self, node: merkle.Node) -> bytes:
        level, index = node
        return bytes(self.levels[level][index * 32:(index + 1) * 32])


def _p(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--proofs", type=int, default=2000)
    parser.add_argument("--file", type=int, default=10_000)
    args = parser.parse_args()
    n, rng = args.entries, random.Random(1)
    ids = [hashlib.sha256(i.to_bytes(8, "big")).hexdigest() for i in range(n)]

    store, frontier, rows = LevelStore(), merkle.Frontier.empty(), 0
    start = time.perf_counter()
    for a in range(0, n, args.batch):
        frontier, new = frontier.extend(merkle.entry_leaf_hash(i) for i in ids[a:a + args.batch])
        for level, index, h in new:
            store.add(level, index, h)
        rows += len(new)
    elapsed = time.perf_counter() - start
    print(f"append: {n} leaves in {elapsed:.2f} s = {n / elapsed:,.0f} leaves/s; "
          f"{rows} node rows ({rows / n:.3f} per leaf), batches of {args.batch}")
    assert proofs.root_at(n, store.get) == frontier.root()

    def inclusion() -> proofs.ProofPlan:
        return proofs.inclusion_plan(rng.randrange(n), n)

    def consistency() -> proofs.ProofPlan:
        return proofs.consistency_plan(rng.randrange(1, n), n)

    for name, make in (("inclusion", inclusion), ("consistency", consistency)):
        times: list[float] = []
        cpu: list[float] = []
        most = 0
        for _ in range(args.proofs):
            t0, c0 = time.perf_counter(), time.thread_time()
            plan = make()
            fetched = {node: store.get(node) for node in plan.nodes}  # the one query
            plan.hashes(fetched)
            times.append((time.perf_counter() - t0) * 1e6)
            cpu.append((time.thread_time() - c0) * 1e6)
            most = max(most, len(plan.nodes))
        # Wall time includes being descheduled on a busy machine (a 4 ms tick at p99 when
        # the cores are shared); CPU time is the proof's own cost.
        print(f"{name} proof at size {n}: wall p50 {statistics.median(times):.0f} µs, "
              f"p99 {_p(times, 0.99):.0f} µs; CPU p50 {statistics.median(cpu):.0f} µs, "
              f"p99 {_p(cpu, 0.99):.0f} µs; at most {most} nodes")

    file = sorted(rng.sample(range(1, n + 1), min(args.file, n)))
    t0 = time.perf_counter()
    evidence.evidence_root(((seq, ids[seq - 1]) for seq in file), n)
    print(f"evidence root over {len(file)} ids: {(time.perf_counter() - t0) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
