"""What bench/proxy_bench.py reads the proxy's figures against, besides the straight
calls: the disk's own commit of a held record, measured in every round, and the proxy's
own stages timed alone, CPU a call."""

from __future__ import annotations

import json
import sqlite3
import statistics
import time
from pathlib import Path

from reporters import generate_key, key_id
from reporters.httpsig import sign_request_headers


class Disk:
    """The floor under a held fact: what the spool's commit of one held record costs
    alone, here and now — a SQLite transaction in WAL mode with ``synchronous=FULL``
    (an fsync) in the spool's directory. The disk is shared, and its time swings with
    the neighbours' writing (0.1 to 4 ms at p50 within minutes here), so it is probed
    in every round, beside the calls."""

    def __init__(self, directory: Path) -> None:
        self.db = sqlite3.connect(directory / "floor.sqlite3", isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE held (name TEXT PRIMARY KEY, record BLOB NOT NULL)")
        self.n = 0
        # Grown and wrapped first, as a working spool's WAL is: a commit that makes the
        # file longer pays for its metadata too (2-3x, measured), one that overwrites not.
        self.db.execute("PRAGMA synchronous=OFF")
        self.probe(1500, [])
        self.db.execute("PRAGMA synchronous=FULL")

    def probe(self, n: int, ms: list[float]) -> None:
        for _ in range(n):
            self.n += 1
            begun = time.perf_counter()
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("INSERT OR REPLACE INTO held VALUES (?, ?)",
                            (f"px:{self.n}", b"x" * 600))
            self.db.execute("COMMIT")
            ms.append((time.perf_counter() - begun) * 1000)


def stage_costs(n: int, tmp: Path) -> None:
    """CPU of the proxy's own stages, one at a time in this process (medians of five
    passes of ``n``): what bounds a proxy that does a server's and a client's HTTP work
    a call, and these besides."""
    from multidict import CIMultiDict

    from reporters import Reporter
    from reporters._internal import payloads
    from reporters.httpsig import NonceStore, verify_request
    from reporters.proxy.holding import HeldFact, Measured
    from reporters.proxy.measure import well_formed

    key, caller = generate_key(), generate_key()
    reporter = Reporter(key, "http://127.0.0.1:9", tmp / "stages")
    measured = Measured(key_id(caller), key_id(caller), "2026-12-07T00:00:00Z", True, 3, True,
                        {}, None, None)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"answer": 42}}).encode()

    def signature_checks() -> None:
        signed = [CIMultiDict(sign_request_headers(caller, "POST", f"/plain/task-{i}"))
                  for i in range(n)]
        nonces, begun = NonceStore(), time.process_time()
        for i, headers in enumerate(signed):
            verify_request("POST", f"/plain/task-{i}", headers, now=time.time(), nonces=nonces)
        costs["the caller's RFC 9421 signature checked"].append(time.process_time() - begun)

    def releases() -> None:
        begun = time.process_time()
        for i in range(n):
            payloads.envelope_line(payloads.sign(key, reporter.fact(
                f"px:{i}", measured.agent, observed_at=measured.observed_at, caller=measured.caller,
                latency_ms=3, well_formed=True)))
        costs["a fact made and signed (at its release)"].append(time.process_time() - begun)

    def records() -> None:
        begun = time.process_time()
        for i in range(n):
            HeldFact(measured, f"task-{i}", True, 0.0).encode()
            well_formed(200, body, None)
        costs["the answer judged, the held record encoded"].append(time.process_time() - begun)

    costs: dict[str, list[float]] = {}
    for _ in range(5):
        costs.setdefault("the caller's RFC 9421 signature checked", [])
        costs.setdefault("a fact made and signed (at its release)", [])
        costs.setdefault("the answer judged, the held record encoded", [])
        signature_checks()
        releases()
        records()
    print(f"\nthe proxy's own stages, CPU a call in this process ({n} calls, median of 5):")
    for name, seconds in costs.items():
        print(f"  {name:<46} {statistics.median(seconds) * 1000 / n:6.3f} ms")
