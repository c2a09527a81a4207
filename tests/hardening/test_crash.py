"""The crash soak, small (tests/hardening/soak.py; the full one is ops/crash_soak.py):
kill -9 of ``bureau serve`` while facts and their attestations stream in, every
unanswered batch re-sent. Nothing acknowledged is lost, nothing is admitted twice,
``bureau verify`` passes, and the entries, derived rows and final reports are those of a
clean run over the same envelopes."""

from __future__ import annotations

import secrets
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from tests.hardening import soak

pytestmark = pytest.mark.slow

FACTS = 1000
KILLS = 4
SEED = 20261130


async def _new_database(server_url: str) -> tuple[str, str]:
    name = "bureau_soak_" + secrets.token_hex(6)
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return name, urlunsplit(urlsplit(server_url)._replace(path="/" + name))


async def _drop(server_url: str, name: str) -> None:
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def test_kill_9_during_facts_and_attestations(pg_server_url: str, tmp_path: Path) -> None:
    script = soak.Script.make(SEED, FACTS)
    names = []
    try:
        name, crash_url = await _new_database(pg_server_url)
        names.append(name)
        crashed = await soak.run(script, crash_url, tmp_path / "crash", kills=KILLS, seed=SEED)
        name, clean_url = await _new_database(pg_server_url)
        names.append(name)
        clean = await soak.run(script, clean_url, tmp_path / "clean", kills=0, seed=SEED)
    finally:
        for name in names:
            await _drop(pg_server_url, name)
    print(f"\ncrash run: {crashed.kills} kills, {crashed.resent_batches} batches re-sent, "
          f"{len(crashed.acknowledged)} acknowledged, kinds {crashed.kinds}, "
          f"{crashed.seconds:.1f} s; clean run {clean.seconds:.1f} s")
    assert crashed.kills == KILLS
    assert len(clean.reports) == len(script.agents)
    assert soak.compare(crashed, clean, FACTS) == []
