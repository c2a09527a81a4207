"""Helpers for tests of the bureau as a transparency log, over real HTTP."""

from __future__ import annotations

import asyncpg

from bureau.http.keys import PUBLISHER
from reporters import VerifiedCheckpoint, verify_note
from tests.support import BureauUnderTest


async def bureau_vkey(bureau: BureauUnderTest) -> str:
    async with bureau.session.get(bureau.url + "/v1/bureau") as resp:
        assert resp.status == 200
        vkey: str = (await resp.json())["vkey"]
    return vkey


async def get_text(bureau: BureauUnderTest, path: str) -> tuple[int, str, str]:
    """Status, content type and body of a GET."""
    async with bureau.session.get(bureau.url + path) as resp:
        return resp.status, resp.content_type, await resp.text()




async def checkpoint(bureau: BureauUnderTest) -> VerifiedCheckpoint:
    """GET /checkpoint, verified with the vkey /v1/bureau gives."""
    status, ctype, note = await get_text(bureau, "/checkpoint")
    assert (status, ctype) == (200, "text/plain"), note
    return verify_note(note, await bureau_vkey(bureau))


async def publish(bureau: BureauUnderTest) -> VerifiedCheckpoint:
    """Have the publisher sign the current head now (instead of waiting for its tick),
    and read it back as any client would."""
    await bureau.app[PUBLISHER].tick()
    return await checkpoint(bureau)


async def entry_ids(database_url: str) -> list[str]:
    """Every entry id, in seq order (leaf i is entry seq i + 1)."""
    conn = await asyncpg.connect(database_url)
    try:
        return [r["id"] for r in await conn.fetch("SELECT id FROM entries ORDER BY seq")]
    finally:
        await conn.close()
