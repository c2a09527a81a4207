"""The genesis entry (SPEC §3, §10 r2): entry 1 of every ledger holds the settings it was
created with, and afterwards the ledger's values rule — a start with a different pinned
value is refused, naming the ledger's value (revision 1 silently mixed 6-hour and
60-second epochs)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import asyncpg
import pytest

from bureau import keyfiles
from bureau.config import Config
from bureau.http.keys import CONFIG
from bureau.intake import genesis
from bureau.intake.chaining import GroupTx
from bureau.intake.flush import flush
from bureau.intake.genesis import StartRefused
from bureau.intake.state import FIRST, GroupState
from bureau.scoring.policy import DEFAULT_POLICY_NAME, KNOWN_POLICIES, policy_hash
from bureau.storage import db
from bureau.verify import BadEntry, verify_database
from reporters import wire
from reporters.tlog.checkpoint import default_origin
from tests.processes import bureau_env, run_cli
from tests.support import BureauUnderTest, kid, start_bureau

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


async def _entry_one(database_url: str) -> tuple[str, dict[str, object]]:
    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow("SELECT kind, entry FROM entries WHERE seq = 1")
    finally:
        await conn.close()
    assert row is not None
    return row["kind"], json.loads(row["entry"])


async def test_entry_one_is_the_genesis_entry(bureau: BureauUnderTest) -> None:
    kind, entry = await _entry_one(bureau.database_url)
    assert kind == "genesis" and entry["prev"] == wire.ZERO_ID
    assert entry["body"] == {
        "policy": policy_hash(KNOWN_POLICIES[DEFAULT_POLICY_NAME]),  # the default
        "epoch_seconds": bureau.config.epoch_seconds,
        "origin": default_origin(bytes(bureau.signing_key.verify_key)),
        # r3: who signs for the ledger, and its admins (sorted)
        "key": kid(bureau.signing_key), "admins": [kid(bureau.admin)]}
    rep = await bureau.reporter()
    assert rep is not None  # the first submission is entry 2


async def test_the_ledger_settings_rule_a_later_start(database_url: str,
                                                      tmp_path: Path) -> None:
    async with start_bureau(database_url, tmp_path / "a", epoch_seconds=3600,
                            origin="bureau.example/one"):
        pass
    _, entry = await _entry_one(database_url)
    assert entry["body"]["epoch_seconds"] == 3600
    assert entry["body"]["origin"] == "bureau.example/one"
    # Unpinned settings (as the tests' configurations are) take the ledger's values.
    async with start_bureau(database_url, tmp_path / "b", epoch_seconds=60) as again:
        settled = again.app[CONFIG]
        assert (settled.epoch_seconds, settled.origin) == (3600, "bureau.example/one")
    # Pinned ones (set explicitly, as BUREAU_EPOCH_SECONDS does) must agree.
    with pytest.raises(StartRefused, match=r"BUREAU_EPOCH_SECONDS is 60 .* 3600"):
        async with start_bureau(database_url, tmp_path / "c", epoch_seconds=60,
                                pinned=frozenset({"epoch_seconds"})):
            pass
    with pytest.raises(StartRefused, match=r"BUREAU_ORIGIN .*bureau\.example/one"):
        async with start_bureau(database_url, tmp_path / "d", origin="other",
                                pinned=frozenset({"origin"})):
            pass


@pytest.mark.slow
async def test_serve_refuses_a_different_epoch_length_in_one_line(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    env = bureau_env(bureau.database_url, tmp_path, kid(bureau.admin),
                     BUREAU_EPOCH_SECONDS="60")
    keyfiles.write_key(tmp_path / "signing.key", bureau.signing_key)  # the ledger's key
    done = run_cli(env, "serve", "--port", "0", "--ops-port", "0")
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("refusing to start: BUREAU_EPOCH_SECONDS is 60 but this ledger was created with "
            "21600") in done.stderr
    assert "Traceback" not in done.stderr


async def test_verify_wants_the_genesis_entry_first(database_url: str) -> None:
    """A chain whose entry 1 is not a genesis entry is not a revision-2 ledger."""
    conn = await asyncpg.connect(database_url)
    try:
        await db.migrate(conn)
        async with conn.transaction():
            tx = GroupTx(conn, GroupState(), FIRST, NOW, 3600)
            tx.append("seal", body={"epoch": 0, "seq": 0, "head": wire.ZERO_ID})
            await flush(tx)
        with pytest.raises(BadEntry, match="genesis"):
            await verify_database(conn)
        with pytest.raises(StartRefused, match="earlier revision"):
            await genesis.read(conn)
    finally:
        await conn.close()


def test_a_new_ledger_takes_the_configured_settings() -> None:
    key = wire.generate_key()
    admin = kid(wire.generate_key())
    config = dataclasses.replace(Config(), epoch_seconds=60, origin=None,
                                 admin_keys=frozenset({admin}))
    settings = genesis.requested(config, key.verify_key)
    assert DEFAULT_POLICY_NAME == "v4"  # docs/scoring.md, "Policy v4"
    assert settings == genesis.LedgerSettings(policy_hash(KNOWN_POLICIES["v4"]), 60,
                                              default_origin(bytes(key.verify_key)),
                                              kid(key), (admin,))
    with pytest.raises(StartRefused, match="not a log origin"):
        genesis.requested(dataclasses.replace(config, origin="has space"), key.verify_key)
