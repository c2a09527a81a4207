"""Access (SPEC §3, §9): no party reads another's file, replays do not open one later,
admin payloads need an admin key, and the database role the service runs as cannot
rewrite the ledger — by privilege, not only by trigger.

tests/reads/test_auth.py and tests/reads/test_entries.py cover a signature's own
checks (stale, replayed nonce, wrong components, agent→agent, reporter→agent); this
module adds what they do not.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from reporters import wire
from tests.hardening.support import entry_count
from tests.reads.support import assert_error, enroll, get_raw, get_signed, lib_headers
from tests.support import (
    BureauUnderTest,
    fact_payload,
    kid,
    now_text,
    registration,
    start_bureau,
)

APP_ROLE = "bureau_app"


# ------------------------------------------------------------------ reading files


async def test_a_reporter_cannot_read_another_reporters_file(bureau: BureauUnderTest) -> None:
    r1, r2 = await bureau.reporter(), await bureau.reporter()
    await bureau.accepted(r2, "fact", fact_payload("r2-only", kid(await enroll(bureau))))
    path = f"/v1/reporters/{kid(r2)}/entries"
    assert_error(*await get_signed(bureau, r1, path), 403, "FORBIDDEN")
    status, own = await get_signed(bureau, r2, path)
    assert status == 200 and [e["kind"] for e in own["entries"]] == ["fact"]


async def test_an_agent_cannot_read_a_reporter_file_about_it(bureau: BureauUnderTest) -> None:
    """Being the subject of a reporter's facts does not open the reporter's file."""
    rep, agent = await bureau.reporter(), await enroll(bureau)
    await bureau.accepted(rep, "fact", fact_payload("about-agent", kid(agent)))
    assert_error(*await get_signed(bureau, agent, f"/v1/reporters/{kid(rep)}/entries"),
                 403, "FORBIDDEN")


async def test_the_bureaus_own_signing_key_reads_no_file(bureau: BureauUnderTest) -> None:
    agent = await enroll(bureau)
    assert_error(*await get_signed(bureau, bureau.signing_key,
                                   f"/v1/agents/{kid(agent)}/entries"), 403, "FORBIDDEN")


async def test_a_replay_after_the_window_is_refused(bureau: BureauUnderTest) -> None:
    """A captured, once-accepted read replayed after 300 s is refused, even once the
    nonce store has let the nonce go: the ``created`` window closes it."""
    agent = await enroll(bureau)
    path = f"/v1/agents/{kid(agent)}/entries"
    headers = lib_headers(agent, bureau.url + path, created=int(time.time()))
    status, _ = await get_raw(bureau, path, headers)
    assert status == 200
    bureau.clock.advance(301)
    try:
        assert_error(*await get_raw(bureau, path, headers), 401, "UNAUTHENTICATED")
    finally:
        bureau.clock.advance(-301)


async def test_a_captured_admin_read_cannot_be_replayed(bureau: BureauUnderTest) -> None:
    agent = await enroll(bureau)
    path = f"/v1/agents/{kid(agent)}/entries"
    headers = lib_headers(bureau.admin, bureau.url + path)
    assert (await get_raw(bureau, path, headers))[0] == 200
    assert_error(*await get_raw(bureau, path, headers), 401, "UNAUTHENTICATED")
    other = await enroll(bureau)
    assert_error(*await get_raw(bureau, f"/v1/agents/{kid(other)}/entries", headers),
                 401, "UNAUTHENTICATED")


# ------------------------------------------------------------------ admin payloads


def _admin_payloads() -> dict[str, dict[str, Any]]:
    return {
        "reporter": registration(wire.generate_key(), ["facts", "probes"]),
        "resolution": {"dispute": "d" * 64, "decision": "EXCLUDED", "reason": "because"},
        "seal": {"requested_at": now_text()},
    }


@pytest.mark.parametrize("kind", ["reporter", "resolution", "seal"])
async def test_admin_payloads_from_any_other_key_are_not_admin(bureau: BureauUnderTest,
                                                               kind: str) -> None:
    signers = {"stranger": wire.generate_key(), "agent": await enroll(bureau),
               "reporter": await bureau.reporter(), "bureau-signing-key": bureau.signing_key}
    before = await entry_count(bureau.database_url)
    for who, key in signers.items():
        status, body = await bureau.submit(key, kind, _admin_payloads()[kind])
        assert (status, body["code"], body["path"]) == (422, "NOT_ADMIN", ""), (who, body)
    assert await entry_count(bureau.database_url) == before


# ------------------------------------------------------------------ the database role


async def _superuser(url: str) -> asyncpg.Connection:
    conn: asyncpg.Connection = await asyncpg.connect(url)
    return conn


async def test_the_app_role_cannot_rewrite_the_ledger(bureau: BureauUnderTest) -> None:
    """As ``bureau_app``: appending works; UPDATE, DELETE and TRUNCATE of ``entries`` and
    ``refusals`` fail for lack of privilege — also with the append-only triggers
    switched off, so it is the grant that stops them, not only the trigger."""
    await bureau.reporter()
    conn = await _superuser(bureau.database_url)
    try:
        tx = conn.transaction()
        await tx.start()
        # Triggers off (as the table owner could): only privileges are left to refuse.
        await conn.execute("ALTER TABLE entries DISABLE TRIGGER USER")
        await conn.execute("ALTER TABLE refusals DISABLE TRIGGER USER")
        await conn.execute(f"SET LOCAL ROLE {APP_ROLE}")
        assert await conn.fetchval("SELECT current_user") == APP_ROLE
        head = await conn.fetchrow("SELECT seq, head FROM ledger_head")
        await conn.execute(
            "INSERT INTO entries (seq, id, prev, kind, recorded_at, epoch, entry)"
            " VALUES ($1, $2, $3, 'exclusion', now(), 0, '\\x7b7d')",
            head["seq"] + 1, "e" * 64, head["head"])
        await conn.execute(
            "INSERT INTO refusals (content_key, signer, kind, code, path, detail, refused_at,"
            " envelope) VALUES ('k', 's', 'fact', 'SCHEMA', '', 'd', now(), '\\x7b7d')")
        for table in ("entries", "refusals"):
            for statement in (f"UPDATE {table} SET kind = kind",
                              f"DELETE FROM {table}", f"TRUNCATE {table}"):
                await conn.execute("SAVEPOINT attempt")
                with pytest.raises(asyncpg.InsufficientPrivilegeError,
                                   match=f"permission denied for table {table}"):
                    await conn.execute(statement)
                await conn.execute("ROLLBACK TO SAVEPOINT attempt")
        await tx.rollback()
    finally:
        await conn.close()


async def test_the_trigger_still_refuses_the_owner(bureau: BureauUnderTest) -> None:
    """The second line: even the owning role hits the append-only trigger."""
    await bureau.reporter()
    conn = await _superuser(bureau.database_url)
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
            await conn.execute("UPDATE entries SET kind = kind")
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
            await conn.execute("DELETE FROM entries")
    finally:
        await conn.close()


async def test_every_append_only_table_is_closed_to_the_app_role(
        bureau: BureauUnderTest) -> None:
    """Any table guarded by refuse_rewrite() (now or in a later migration) must not be
    updatable, deletable or truncatable by ``bureau_app``; every other table the
    service needs is readable and writable by it."""
    conn = await _superuser(bureau.database_url)
    try:
        guarded = {r["t"] for r in await conn.fetch(
            "SELECT DISTINCT c.relname AS t FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid"
            " JOIN pg_proc p ON p.oid = g.tgfoid WHERE p.proname = 'refuse_rewrite'")}
        tables = {r["t"] for r in await conn.fetch(
            "SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")}
        assert {"entries", "refusals"} <= guarded
        for table in sorted(tables):
            privs = {p: await conn.fetchval("SELECT has_table_privilege($1, $2, $3)",
                                            APP_ROLE, f"public.{table}", p)
                     for p in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")}
            if table in guarded:
                assert privs == {"SELECT": True, "INSERT": True, "UPDATE": False,
                                 "DELETE": False, "TRUNCATE": False}, (table, privs)
            elif table == "schema_migrations":
                assert privs["SELECT"] and not any(
                    privs[p] for p in ("INSERT", "UPDATE", "DELETE", "TRUNCATE")), privs
            else:
                assert all(privs.values()), (table, privs)
    finally:
        await conn.close()


@pytest.fixture
async def service_login(database_url: str) -> AsyncIterator[str]:
    """A login role that is a member of ``bureau_app`` — what an operator creates — and
    the database URL that connects as it (the test server trusts local logins)."""
    conn = await _superuser(database_url)
    login = "bureau_service_" + secrets.token_hex(4)
    try:
        # the migrations (and so the role) must exist first
        from bureau.storage import db

        await db.migrate(conn)
        await conn.execute(f"CREATE ROLE {login} LOGIN IN ROLE {APP_ROLE}")
    finally:
        await conn.close()
    parts = urlsplit(database_url)
    netloc = parts.netloc.split("@", 1)[-1]
    yield urlunsplit(parts._replace(netloc=f"{login}@{netloc}"))
    conn = await _superuser(database_url)
    try:
        await conn.execute(f"DROP ROLE IF EXISTS {login}")
    finally:
        await conn.close()


async def test_the_service_runs_as_the_app_role(database_url: str, service_login: str,
                                                tmp_path: Path) -> None:
    """The whole service — intake, refusals kept as evidence, a seal, reads — works
    connected as a member of ``bureau_app`` once the owner has migrated."""
    async with start_bureau(service_login, tmp_path) as b:
        conn = await asyncpg.connect(service_login)
        try:
            assert await conn.fetchval("SELECT current_user") != "postgres"
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute("DELETE FROM entries")
        finally:
            await conn.close()
        rep = await b.reporter()
        caller, subject = await enroll(b), await enroll(b)
        await b.accepted(rep, "fact", fact_payload("as-role", kid(subject), kid(caller),
                                                   check="PASS"))
        await b.accepted(caller, "attestation", {
            "reporter": kid(rep), "interaction": "as-role", "subject": kid(subject),
            "outcome": "ACCEPTED", "corrections": 0})
        status, body = await b.submit(caller, "attestation", {
            "reporter": kid(rep), "interaction": "as-role", "subject": kid(subject),
            "outcome": "FAILED_DISCOVERED", "corrections": 0})
        assert (status, body["code"]) == (422, "DUPLICATE_VERDICT")  # kept as a refusal
        status, page = await get_signed(b, caller, f"/v1/agents/{kid(caller)}/entries")
        assert status == 200 and len(page["refusals"]) == 1
        b.clock.advance(b.config.epoch_seconds)
        await b.accepted(b.admin, "seal", {"requested_at": now_text(b.config.epoch_seconds)})
        conn = await asyncpg.connect(service_login)
        try:
            assert await conn.fetchval("SELECT count(*) FROM entries WHERE kind = 'seal'") >= 1
        finally:
            await conn.close()
        async with b.session.get(b.url + "/readyz") as resp:
            assert resp.status == 200
