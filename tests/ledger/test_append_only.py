"""The database refuses rewrites; ``bureau verify`` finds rewrites made behind its back."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import pytest

from bureau.verify import BadEntry, verify_database
from reporters import wire
from tests.processes import bureau_env, run_cli
from tests.support import BureauUnderTest, fact_payload, kid


async def _ledger_with_facts(bureau: BureauUnderTest, n: int = 5) -> None:
    rep = await bureau.reporter()
    agent = kid(wire.generate_key())
    for i in range(n):
        await bureau.accepted(rep, "fact", fact_payload(f"t-{i}", agent))


@pytest.mark.parametrize("statement", [
    "UPDATE entries SET kind = 'fact' WHERE seq = 2",
    "DELETE FROM entries WHERE seq = 3",
    "TRUNCATE entries CASCADE",
])
async def test_plain_rewrites_are_refused(bureau: BureauUnderTest, statement: str) -> None:
    await _ledger_with_facts(bureau)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
            await conn.execute(statement)
        assert await conn.fetchval("SELECT count(*) FROM entries") == 7  # genesis, reporter, 5
    finally:
        await conn.close()


async def _tamper(database_url: str, sql: str, *args: object) -> None:
    """Change the ledger as a superuser would: with every trigger (the append-only guard
    and the foreign keys) switched off for the session."""
    conn = await asyncpg.connect(database_url)
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL session_replication_role = replica")
            await conn.execute(sql, *args)
    finally:
        await conn.close()


async def _verify(database_url: str) -> BadEntry | None:
    conn = await asyncpg.connect(database_url)
    try:
        await verify_database(conn)
    except BadEntry as bad:
        return bad
    finally:
        await conn.close()
    return None


async def test_verify_passes_on_an_untouched_ledger(bureau: BureauUnderTest) -> None:
    await _ledger_with_facts(bureau)
    assert await _verify(bureau.database_url) is None


async def test_rewritten_payload_is_found(bureau: BureauUnderTest) -> None:
    await _ledger_with_facts(bureau)
    conn = await asyncpg.connect(bureau.database_url)
    raw = bytes(await conn.fetchval("SELECT entry FROM entries WHERE seq = 4"))
    await conn.close()
    entry = json.loads(raw)
    payload = json.loads(wire.b64decode_canonical(entry["envelope"]["payload"]))
    payload["answered"] = False  # what a dishonest insider would like the fact to say
    entry["envelope"]["payload"] = wire.b64encode(wire.canonical_json(payload))
    forged = wire.canonical_json(entry)
    # Even recomputing the id (and leaving the next link dangling) is caught.
    await _tamper(bureau.database_url, "UPDATE entries SET entry = $1, id = $2 WHERE seq = 4",
                  forged, wire.blake3_hex(forged))
    bad = await _verify(bureau.database_url)
    assert bad is not None and bad.seq == 4
    assert "signature" in bad.reason


async def test_rewritten_bytes_without_new_id_are_found(bureau: BureauUnderTest) -> None:
    await _ledger_with_facts(bureau)
    await _tamper(bureau.database_url,
                  "UPDATE entries SET entry = convert_to(replace(convert_from(entry, 'UTF8'),"
                  " '\"kind\":\"fact\"', '\"kind\":\"probe\"'), 'UTF8') WHERE seq = 3")
    bad = await _verify(bureau.database_url)
    assert bad is not None and bad.seq == 3


@pytest.mark.slow
async def test_deleted_entry_is_found(bureau: BureauUnderTest, tmp_path: Path) -> None:
    await _ledger_with_facts(bureau)
    await _tamper(bureau.database_url, "DELETE FROM entries WHERE seq = 5")
    env = bureau_env(bureau.database_url, tmp_path, kid(bureau.admin))
    result = run_cli(env, "verify")
    assert result.returncode == 1
    assert "seq 6" in result.stderr  # the first entry that no longer links


async def test_duplicate_keys_in_a_stored_entry_are_found(bureau: BureauUnderTest) -> None:
    await _ledger_with_facts(bureau)
    await _tamper(bureau.database_url,
                  "UPDATE entries SET entry = overlay(entry placing '{\"seq\":2,' from 1 for 1)"
                  " WHERE seq = 2")
    bad = await _verify(bureau.database_url)
    assert bad is not None and bad.seq == 2


# ------------------------------------------------------------------ indexed columns

OTHER_KEY = kid(wire.generate_key())


@pytest.mark.parametrize(("column", "value"), [
    pytest.param("subject", f"'{OTHER_KEY}'", id="subject"),
    pytest.param("subject", None, id="subject-null"),
    pytest.param("epoch", "epoch + 1", id="epoch"),
    pytest.param("signer", f"'{OTHER_KEY}'", id="signer"),
    pytest.param("content_key", "'" + "0" * 64 + "'", id="content_key"),
    pytest.param("kind", "'probe'", id="kind"),
    pytest.param("recorded_at", "recorded_at + interval '1 microsecond'", id="recorded_at"),
    pytest.param("prev", "'" + "1" * 64 + "'", id="prev"),
])
@pytest.mark.slow
async def test_a_column_changed_behind_verifys_back_is_named(
        bureau: BureauUnderTest, column: str, value: str | None, tmp_path: Path) -> None:
    """Issue 12: an entry's subject and epoch columns were changed and verify still said
    ok, although reads and sealing rely on them. Now every indexed column of one row,
    changed with the triggers off, is named together with its seq."""
    await _ledger_with_facts(bureau)
    literal = "NULL" if value is None else value
    await _tamper(bureau.database_url, f"UPDATE entries SET {column} = {literal} WHERE seq = 4")
    bad = await _verify(bureau.database_url)
    assert bad is not None and bad.seq == 4, bad
    assert f"column {column} disagrees" in bad.reason, bad.reason
    result = run_cli(bureau_env(bureau.database_url, tmp_path, kid(bureau.admin)), "verify")
    assert result.returncode == 1
    assert f"seq 4: column {column} disagrees" in result.stderr, result.stderr


async def test_an_exclusions_subject_is_its_targets(bureau: BureauUnderTest) -> None:
    """An exclusion, written by the bureau, is about the entry it excludes: its subject
    column is checked against that entry's."""
    rep = await bureau.reporter()
    subject = wire.generate_key()
    await bureau.accepted(subject, "enrollment", {
        "name": "s", "anchor": {"kind": "domain", "value": "s.example"}, "operator": "S",
        "promises": []})
    fact = await bureau.accepted(rep, "fact", fact_payload("x-1", kid(subject)))
    dispute = await bureau.accepted(subject, "dispute", {"entry": fact["id"], "reason": "no"})
    await bureau.accepted(bureau.admin, "resolution", {
        "dispute": dispute["id"], "decision": "EXCLUDED", "reason": "the log agrees"})
    assert await _verify(bureau.database_url) is None
    await _tamper(bureau.database_url,
                  "UPDATE entries SET subject = $1 WHERE kind = 'exclusion'", OTHER_KEY)
    bad = await _verify(bureau.database_url)
    assert bad is not None and "column subject disagrees" in bad.reason, bad
