"""One bad submission never fails another (SPEC §5 r2; issue 12, the poison envelope).

Each test puts a poison envelope in the same group commit *and* the same batch as 50
honest submissions: the ledger's head row is held locked from outside while a first
request waits on it, then the batch (poison and honest lines) and honest single POSTs
are sent at once and queue up behind it, and only once all of them are pending is the
lock let go — so the committer takes them all as one group.

* the issue's poison (U+0000 in an anchor, an unknown key ``"\\u0000"``) is now refused at
  decode and never reaches the database;
* a submission the database itself refuses (a trigger installed by the test refuses one
  agent name) is isolated: refused alone with ``500 UNAVAILABLE``, logged, and every
  other submission is judged and stored as if it had not been sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import pytest

from bureau import metrics
from bureau.http.keys import COMMITTER
from bureau.verify import verify_database
from reporters import wire
from tests.agents.support import enroll, enrollment, interaction_id
from tests.support import BureauUnderTest, fact_payload, issued, kid, until

HONEST = 50
POISON_NAME = "the database refuses this name"


@asynccontextmanager
async def one_group(bureau: BureauUnderTest, primer: dict[str, Any],
                    expected: int) -> AsyncIterator[None]:
    """Within the block, requests queue behind a held ledger lock, on which the
    committer already waits with ``primer``; leaving the block waits until ``expected``
    more envelopes are pending, then lets go: they make the next group, all together."""
    ledger = bureau.app[COMMITTER]
    conn = await asyncpg.connect(bureau.database_url)
    tx = conn.transaction()
    await tx.start()
    await conn.execute("SELECT 1 FROM ledger_head FOR UPDATE")
    first = asyncio.create_task(bureau.post(primer))

    async def committer_waits() -> bool:
        return bool(await conn.fetchval(
            "SELECT count(*) FROM pg_locks WHERE NOT granted"
            " AND (locktype = 'transactionid' OR relation = 'ledger_head'::regclass)"))

    try:
        await until("the committer to wait on the lock", committer_waits)
        yield

        async def all_pending() -> bool:
            return ledger.pending >= expected + 1

        await until(f"{expected} envelopes to queue up", all_pending)
    finally:
        await tx.rollback()
        await conn.close()
    status, _ = await first
    assert status == 201


def _honest_facts(rep: Any, n: int) -> list[dict[str, Any]]:
    return [wire.sign_payload(rep, "fact", fact_payload(interaction_id(),
                                                        kid(wire.generate_key())))
            for _ in range(n)]


async def _post(bureau: BureauUnderTest, env: dict[str, Any]
                ) -> tuple[int, dict[str, str], dict[str, Any]]:
    async with bureau.session.post(bureau.url + "/v1/evidence", data=json.dumps(env),
                                   headers={"Content-Type": "application/json"}) as resp:
        return resp.status, dict(resp.headers), await resp.json()


async def _send_together(bureau: BureauUnderTest, primer: dict[str, Any],
                         batch: list[dict[str, Any]], singles: list[dict[str, Any]]
                         ) -> tuple[list[dict[str, Any]],
                                    list[tuple[int, dict[str, str], dict[str, Any]]]]:
    """The batch and the single POSTs, all in one group commit (after ``primer``'s)."""
    async with one_group(bureau, primer, len(batch) + len(singles)):
        batch_task = asyncio.create_task(bureau.batch(batch))
        single_tasks = [asyncio.create_task(_post(bureau, env)) for env in singles]
    return await batch_task, await asyncio.gather(*single_tasks)


async def _entries_ok(bureau: BureauUnderTest) -> int:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        return await verify_database(conn)
    finally:
        await conn.close()


async def test_the_issues_poison_envelopes_fail_nothing_else(bureau: BureauUnderTest) -> None:
    """The two envelopes of the issue, among 50 honest submissions in their group and
    batch: U+0000 in an unregistered key's anchor, and an enrolled agent's amendment with
    the unknown key ``"\\u0000"`` (whose refusal path held the NUL). All 50 accepted."""
    rep = await bureau.reporter()
    agent = await enroll(bureau)
    anchor = wire.sign_payload(wire.generate_key(), "enrollment", {
        **enrollment(), "anchor": {"kind": "email", "value": "a\x00@b.example"}})
    amendment = wire.sign_payload(agent, "amendment", {"issued_at": issued(),
                                                       "name": "new name", "\x00": "x"})
    primer, *honest = _honest_facts(rep, HONEST + 1)
    half = HONEST // 2
    lines, singles = await _send_together(
        bureau, primer, [*honest[:half // 2], anchor, *honest[half // 2:half], amendment],
        honest[half:])
    poisoned = [line for line in lines if line["status"] == "rejected"]
    assert [(p["code"], p["path"]) for p in poisoned] == [
        ("SCHEMA", "/anchor/value"), ("SCHEMA", "/\\u0000")]
    assert sum(line["status"] == "accepted" for line in lines) == half
    assert [status for status, _, _ in singles] == [201] * (HONEST - half)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        kept = await conn.fetch("SELECT path, detail, envelope FROM refusals WHERE signer = $1",
                                kid(agent))
    finally:
        await conn.close()
    assert [(r["path"], r["detail"], r["envelope"]) for r in kept] == [
        ("/\\u0000", None, None)]
    assert await _entries_ok(bureau) > HONEST


async def test_a_submission_the_database_refuses_is_refused_alone(
        bureau: BureauUnderTest, caplog: pytest.LogCaptureFixture) -> None:
    """A valid enrollment the database cannot store (a trigger refuses its name), once in
    the batch and once as a single POST, among 50 honest submissions of the same group:
    each poison is answered 500 UNAVAILABLE on its own, with Retry-After, and logged;
    all 50 honest ones are accepted, and the ledger verifies."""
    rep = await bureau.reporter()
    conn = await asyncpg.connect(bureau.database_url)
    try:
        await conn.execute("""
            CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.name = 'the database refuses this name' THEN
                    RAISE EXCEPTION 'this test refuses the row';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER agents_poison BEFORE INSERT OR UPDATE ON agents
                FOR EACH ROW EXECUTE FUNCTION refuse_poison();""")
    finally:
        await conn.close()
    poison_keys = [wire.generate_key(), wire.generate_key()]
    poison = [wire.sign_payload(k, "enrollment", enrollment(name=POISON_NAME))
              for k in poison_keys]
    primer, *honest = _honest_facts(rep, HONEST + 1)
    half = HONEST // 2
    isolated = metrics.ISOLATED_TOTAL._value.get()
    with caplog.at_level(logging.ERROR, logger="bureau.intake.committer"):
        lines, singles = await _send_together(
            bureau, primer, [*honest[:10], poison[0], *honest[10:half]],
            [*honest[half:], poison[1]])
    assert lines[10] == {"status": "rejected", "code": "UNAVAILABLE", "path": "",
                         "detail": lines[10]["detail"], "index": 10}
    assert all(line["status"] == "accepted" for i, line in enumerate(lines) if i != 10)
    *honest_singles, (status, headers, body) = singles
    assert (status, body["code"], body["path"]) == (500, "UNAVAILABLE", "")
    assert headers["Retry-After"]
    assert [s for s, _, _ in honest_singles] == [201] * (HONEST - half)
    assert metrics.ISOLATED_TOTAL._value.get() == isolated + 2
    refused_alone = [r for r in caplog.records if "refused alone" in r.getMessage()]
    assert {kid(k) for k in poison_keys} <= {r.args[1] for r in refused_alone
                                              if isinstance(r.args, tuple)}
    conn = await asyncpg.connect(bureau.database_url)
    try:
        stored = await conn.fetchval("SELECT count(*) FROM agents WHERE key = ANY($1)",
                                     [kid(k) for k in poison_keys])
        facts = await conn.fetchval("SELECT count(*) FROM facts WHERE reporter = $1",
                                    kid(rep))
    finally:
        await conn.close()
    assert stored == 0
    assert facts == HONEST + 1  # and the primer's
    await _entries_ok(bureau)
