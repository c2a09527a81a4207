"""migrations/0008_favourable_verdicts.sql fills ``verdicts.favourable`` in for the rows
already there, from their entries' payloads: applied again to a ledger holding every
kind of verdict, it gives back exactly what intake wrote."""

from __future__ import annotations

import asyncpg

from bureau.storage import db
from tests.agents.support import (
    attestation,
    engagement,
    enroll,
    interaction_id,
    value_judgment,
    witness,
)
from tests.support import BureauUnderTest, fact_payload, kid

MIGRATION = "0008_favourable_verdicts.sql"


async def test_the_migration_fills_in_favourable_from_the_entries(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    expected: dict[str, bool] = {}
    for outcome, corrections, favourable in [
            ("ACCEPTED", 0, True), ("ACCEPTED_AFTER_CORRECTIONS", 2, True),
            ("DECLINED", 0, True), ("FAILED_ADMITTED", 0, False),
            ("FAILED_DISCOVERED", 0, False)]:
        ia = await witness(bureau, rep, seller, buyer)
        body = await bureau.accepted(buyer, "attestation",
                                     attestation(rep, ia, seller, outcome, corrections))
        expected[body["id"]] = favourable
    for judgment in ("VALUE_OK", "VALUE_POOR"):
        eng = "eng-" + interaction_id()
        await bureau.accepted(rep, "fact", fact_payload(
            interaction_id(), kid(seller), kid(buyer), engagement=engagement(eng)))
        body = await bureau.accepted(buyer, "value-judgment",
                                     value_judgment(rep, eng, seller, judgment=judgment))
        expected[body["id"]] = judgment == "VALUE_OK"

    conn = await asyncpg.connect(bureau.database_url)
    try:
        query = "SELECT entry_id, favourable FROM verdicts WHERE entry_id = ANY($1::text[])"
        written = dict(await conn.fetch(query, list(expected)))
        assert written == expected  # as intake wrote them
        # As if the ledger had been written before the migration: no column, not applied.
        await conn.execute("ALTER TABLE verdicts DROP COLUMN favourable")
        await conn.execute("DELETE FROM schema_migrations WHERE name = $1", MIGRATION)
        assert await db.migrate(conn) == [MIGRATION]
        assert dict(await conn.fetch(query, list(expected))) == expected
    finally:
        await conn.close()
