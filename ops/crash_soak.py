"""Crash soak: 20 random ``kill -9`` of ``bureau serve`` while 10,000 facts and their
10,000 attestations stream in, then the same envelopes again with no kills, and a
comparison (tests/hardening/soak.py says exactly what is compared and why).

    python ops/crash_soak.py [--facts 10000] [--kills 20] [--seed N] [--json]

It runs on the PostgreSQL server named by ``BUREAU_DATABASE_URL`` (creating and dropping
two databases on it), or on a throwaway embedded one. Exit status 0 when nothing
acknowledged was lost, nothing was admitted twice, ``bureau verify`` passed on both
runs, and the entries, derived index rows and final reports of both runs are identical.
A smaller version runs in the test suite: tests/hardening/test_crash.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncpg  # noqa: E402

from tests.hardening import soak  # noqa: E402


def _log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


async def _with_database(server_url: str, run: soak.Script, home: Path, kills: int,
                         seed: int) -> soak.Outcome:
    name = "bureau_soak_" + secrets.token_hex(6)
    conn = await asyncpg.connect(server_url)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    try:
        url = urlunsplit(urlsplit(server_url)._replace(path="/" + name))
        return await soak.run(run, url, home, kills=kills, seed=seed, log=_log)
    finally:
        conn = await asyncpg.connect(server_url)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


async def main(args: argparse.Namespace, server_url: str, home: Path) -> int:
    _log(f"signing {args.facts} facts and {args.facts} attestations")
    script = soak.Script.make(args.seed, args.facts)
    _log(f"crash run: {len(script.batches)} batches, {args.kills} kills")
    crashed = await _with_database(server_url, script, home / "crash", args.kills, args.seed)
    _log("clean run")
    clean = await _with_database(server_url, script, home / "clean", 0, args.seed)
    problems = soak.compare(crashed, clean, args.facts)
    summary = {
        "facts": args.facts, "attestations": args.facts, "kills": crashed.kills,
        "batches": len(script.batches), "batches_resent": crashed.resent_batches,
        "acknowledged": len(crashed.acknowledged), "acknowledged_lost": crashed.lost,
        "entries_by_kind": crashed.kinds, "duplicates": crashed.distinct_content < 0,
        "verify": crashed.verify_output, "reports_compared": len(clean.reports),
        "reports_identical": crashed.reports == clean.reports,
        "payloads_identical": crashed.payloads == clean.payloads,
        "tables_identical": crashed.tables == clean.tables,
        "crash_run_seconds": round(crashed.seconds, 1),
        "clean_run_seconds": round(clean.seconds, 1), "problems": problems,
    }
    print(json.dumps(summary, indent=2 if not args.json else None))
    return 1 if problems or crashed.kills < args.kills else 0


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--json", action="store_true", help="one-line JSON summary")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bureau-crash-soak-") as tmp:
        home = Path(tmp)
        given = os.environ.get("BUREAU_DATABASE_URL")
        if given:
            return asyncio.run(main(args, given, home))
        import pgserver

        server = pgserver.get_server(home / "pgdata", cleanup_mode="stop")  # type: ignore[attr-defined]
        try:
            return asyncio.run(main(args, server.get_uri(), home))
        finally:
            server.cleanup()


if __name__ == "__main__":
    sys.exit(cli())
