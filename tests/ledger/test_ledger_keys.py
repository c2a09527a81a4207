"""One key per ledger (SPEC §3 "Who signs for the ledger", §9, §10 r3; issue 20 finding 2).

The genesis entry pins the bureau key and the admin set; the admin ``keys`` payload
rotates them from the next entry on. A start with another key or admin set is refused,
naming the ledger's; a node joining an existing ledger creates no keys; a process whose
key is no longer in force signs nothing and is not ready; ``/v1/bureau`` serves the
history and the admins; ``bureau verify`` checks every signature against the key in force
where it stands. On revision-2 main a second node with its own BUREAU_HOME started with
keys of its own, and its admin key registered reporters into the shared ledger.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from bureau import keyfiles
from bureau.http.keys import PUBLISHER, SEALER
from bureau.intake.genesis import StartRefused
from bureau.verify import BadTree, verify_database
from bureau.views.rebuild import rebuild
from reporters import Admin, wire
from reporters.models import MAX_ADMINS
from tests.processes import bureau_env, run_cli
from tests.support import BureauUnderTest, issued, kid, registration, start_bureau
from tests.views.support import World


def keys_payload(bureau_key: str, admins: list[str], issued_at: str | None = None,
                 ) -> dict[str, Any]:
    return {"bureau": bureau_key, "admins": admins, "issued_at": issued_at or issued()}


async def _info(bureau: BureauUnderTest) -> dict[str, Any]:
    async with bureau.session.get(bureau.url + "/v1/bureau") as resp:
        assert resp.status == 200
        doc: dict[str, Any] = await resp.json()
    return doc


async def _ready(bureau: BureauUnderTest) -> int:
    async with bureau.session.get(bureau.ops_url + "/readyz") as resp:
        return resp.status


async def _verify(database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        return await verify_database(conn)
    finally:
        await conn.close()


async def test_genesis_key_is_served_as_the_history(bureau: BureauUnderTest) -> None:
    info = await _info(bureau)
    assert info["key"] == kid(bureau.signing_key)
    assert info["keys"] == [{"key": kid(bureau.signing_key), "vkey": info["vkey"],
                             "from_seq": 1}]
    assert info["admins"] == [kid(bureau.admin)]


@pytest.mark.parametrize("admins", [
    pytest.param([], id="empty"),
    pytest.param(["dup", "dup"], id="repeated"),
    pytest.param([f"n{i}" for i in range(MAX_ADMINS + 1)], id="65"),
    pytest.param(["ed25519:not-a-key"], id="not-a-key"),
])
async def test_a_bad_admin_set_is_schema_at_admins(bureau: BureauUnderTest,
                                                   admins: list[str]) -> None:
    named = {name: kid(wire.generate_key()) for name in set(admins)}
    listed = [named.get(a, a) if a != "ed25519:not-a-key" else a for a in admins]
    status, body = await bureau.submit(bureau.admin, "keys",
                                       keys_payload(kid(wire.generate_key()), listed))
    assert (status, body["code"], body["path"]) == (422, "SCHEMA", "/admins"), body


async def test_keys_are_ordered_by_issued_at(bureau: BureauUnderTest) -> None:
    later = issued()
    await bureau.accepted(bureau.admin, "keys",
                          keys_payload(kid(bureau.signing_key), [kid(bureau.admin)], later))
    status, body = await bureau.submit(bureau.admin, "keys", keys_payload(
        kid(bureau.signing_key), [kid(bureau.admin)], "2026-01-01T00:00:00Z"))
    assert (status, body["code"], body["path"]) == (422, "STALE_UPDATE", "/issued_at")


async def test_only_the_admin_set_in_force_signs_admin_payloads(
        bureau: BureauUnderTest) -> None:
    new_admin = wire.generate_key()
    await bureau.accepted(bureau.admin, "keys",
                          keys_payload(kid(bureau.signing_key), [kid(new_admin)]))
    reporter = registration(wire.generate_key(), operator="Op")
    status, body = await bureau.submit(bureau.admin, "reporter", reporter)
    assert (status, body["code"]) == (422, "NOT_ADMIN")  # BUREAU_ADMIN_KEYS no longer rules
    await bureau.accepted(new_admin, "reporter", reporter)
    assert (await _info(bureau))["admins"] == [kid(new_admin)]
    assert await _verify(bureau.database_url) > 0


async def test_a_rotation_retires_the_old_key_and_the_new_one_takes_over(
        database_url: str, tmp_path: Path) -> None:
    old_key, new_key, admin = wire.generate_key(), wire.generate_key(), wire.generate_key()
    async with start_bureau(database_url, tmp_path / "a", signing_key=old_key,
                            admin_key=admin) as bureau:
        world = await World.make(bureau)
        await world.fact(await world.agent("a"))
        await bureau.app[SEALER].seal_now()  # nothing elapsed: no seal yet
        bureau.clock.advance(bureau.config.epoch_seconds)
        assert await bureau.app[SEALER].seal_once()  # an epoch sealed, signed by old
        async with Admin(admin, bureau.url) as client:
            receipt = await client.set_keys(kid(new_key), [kid(admin)])
        assert await _ready(bureau) == 503  # this process's key is no longer in force
        info = await _info(bureau)
        assert info["key"] == kid(new_key)
        assert [(k["key"], k["from_seq"]) for k in info["keys"]] == [
            (kid(old_key), 1), (kid(new_key), receipt.seq + 1)]
        await world.fact(await world.agent("b"))
        heads_before = await _sizes(database_url)
        assert await bureau.app[PUBLISHER].tick() is None  # signs nothing...
        bureau.clock.advance(bureau.config.epoch_seconds)
        assert await bureau.app[SEALER].seal_once() == []  # ...seals nothing
        assert await _sizes(database_url) == heads_before
    with pytest.raises(StartRefused, match=kid(new_key)):  # the old key may not start
        async with start_bureau(database_url, tmp_path / "b", signing_key=old_key,
                                admin_key=admin):
            pass
    async with start_bureau(database_url, tmp_path / "c", signing_key=new_key,
                            admin_key=admin) as bureau:
        assert await _ready(bureau) == 200
        bureau.clock.advance(2 * bureau.config.epoch_seconds)
        assert await bureau.app[SEALER].seal_once()  # sealed and signed by the new key
        await bureau.app[PUBLISHER].tick()
        log_key = bureau.log_key
    # every note, checkpoint and report checked against the key in force where it stands
    assert await _verify(database_url) > 0
    # rebuild holds the new key: it re-signs the new key's epochs, keeps the old one's
    conn = await asyncpg.connect(database_url)
    try:
        result = await rebuild(conn, new_key, log_key)
    finally:
        await conn.close()
    assert result.identical, result.differences
    assert len(result.kept) == 1 and result.epochs >= 1, result
    assert await _verify(database_url) > 0


async def _sizes(database_url: str) -> list[int]:
    conn = await asyncpg.connect(database_url)
    try:
        return [r["size"] for r in await conn.fetch("SELECT size FROM tree_heads ORDER BY size")]
    finally:
        await conn.close()


async def test_verify_finds_a_checkpoint_signed_by_a_key_never_in_force(
        bureau: BureauUnderTest) -> None:
    world = await World.make(bureau)
    await world.fact(await world.agent("a"))
    bureau.clock.advance(bureau.config.epoch_seconds)
    assert await bureau.app[SEALER].seal_once()
    conn = await asyncpg.connect(bureau.database_url)
    try:
        epoch, raw = await conn.fetchrow("SELECT epoch, envelope FROM checkpoints LIMIT 1")
        env = json.loads(raw)
        forged = wire.sign_envelope_bytes(wire.generate_key(), env["payloadType"],
                                          wire.b64decode_canonical(env["payload"]))
        await conn.execute("UPDATE checkpoints SET envelope = $1 WHERE epoch = $2",
                           forged, epoch)
        with pytest.raises(BadTree, match="not signed by"):
            await verify_database(conn)
    finally:
        await conn.close()


async def test_another_signing_key_or_admin_set_is_refused_naming_the_ledgers(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    with pytest.raises(StartRefused, match=f"key in force on this ledger is "
                       f"{kid(bureau.signing_key)}"):
        async with start_bureau(bureau.database_url, tmp_path / "a",
                                signing_key=wire.generate_key(), admin_key=bureau.admin):
            pass
    other = kid(wire.generate_key())
    with pytest.raises(StartRefused, match=f"admin set in force on this ledger is "
                       f"{kid(bureau.admin)}"):
        async with start_bureau(bureau.database_url, tmp_path / "b",
                                signing_key=bureau.signing_key, admin_keys=frozenset({other})):
            pass


@pytest.mark.slow
async def test_a_node_joining_a_ledger_creates_no_keys(bureau: BureauUnderTest,
                                                       tmp_path: Path) -> None:
    """An empty BUREAU_HOME on an existing ledger: refused in one line, nothing made."""
    home = tmp_path / "new-node"
    env = bureau_env(bureau.database_url, home, "")
    env.pop("BUREAU_ADMIN_KEYS")
    done = run_cli(env, "serve", "--port", "0", "--ops-port", "0")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refusing to start" in done.stderr and kid(bureau.signing_key) in done.stderr
    assert "Traceback" not in done.stderr
    assert not (home / "signing.key").exists() and not (home / "admin.key").exists()
    # Given the ledger's key file, with BUREAU_ADMIN_KEYS unset, it takes the ledger's set.
    keyfiles.write_key(home / "signing.key", bureau.signing_key)
    other = bureau_env(bureau.database_url, home, kid(wire.generate_key()))
    done = run_cli(other, "serve", "--port", "0", "--ops-port", "0")
    assert done.returncode == 2 and kid(bureau.admin) in done.stderr, done.stderr
    assert not (home / "admin.key").exists()


async def test_a_second_node_serves_the_ledgers_key(bureau: BureauUnderTest,
                                                    tmp_path: Path) -> None:
    """Given the key file, a second node serves the one key history, no key of its own."""
    async with start_bureau(bureau.database_url, tmp_path / "second",
                            signing_key=bureau.signing_key, admin_keys=frozenset()) as second:
        assert (await _info(second))["keys"] == (await _info(bureau))["keys"]
        assert second.app[SEALER].config.admin_keys == frozenset({kid(bureau.admin)})
    async with aiohttp.ClientSession() as session, \
            session.get(bureau.url + "/v1/bureau") as resp:
        assert (await resp.json())["admins"] == [kid(bureau.admin)]


async def test_a_keys_entry_rules_from_the_next_entry_of_its_own_batch(
        bureau: BureauUnderTest) -> None:
    new_admin = wire.generate_key()

    def reporter() -> dict[str, Any]:
        return registration(wire.generate_key(), operator="Op")

    results = await bureau.batch([
        wire.sign_payload(bureau.admin, "keys",
                          keys_payload(kid(bureau.signing_key), [kid(new_admin)])),
        wire.sign_payload(new_admin, "reporter", reporter()),
        wire.sign_payload(bureau.admin, "reporter", reporter()),
    ])
    assert [r["status"] for r in results] == ["accepted", "accepted", "rejected"], results
    assert results[2]["code"] == "NOT_ADMIN"
    assert await _verify(bureau.database_url) > 0
