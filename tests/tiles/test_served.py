"""The tree served as C2SP tlog-tiles (SPEC §9.1) over real HTTP on a real PostgreSQL:
every tile of the published tree is the tree recomputed from the entry ids, the cache
headers are tlog-tiles' recommendation, anything else is 404, a proof computed from the
served tiles holds against the served checkpoint, and no read waits for the ledger's
write lock."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from bureau.http.keys import FULL_TILES
from bureau.storage import chain
from bureau.transparency.tiles import FullTiles
from reporters.tlog import proofs
from reporters.tlog.tilereader import TileNodes, tiles_needed, verify_tiles
from reporters.tlog.tiles import ENTRIES, Tile, parse_path, tiles_of
from tests.support import BureauUnderTest
from tests.tiles.support import Oracle, fetch, grown
from tests.transparency.service import checkpoint, publish


async def test_every_tile_of_the_published_tree_is_the_tree_of_the_ids(
        bureau: BureauUnderTest) -> None:
    size = await grown(bureau, 600)
    oracle = await Oracle.of(bureau)
    assert len(oracle.ids) == size
    tiles = list(tiles_of(size))
    assert {t.level for t in tiles} == {ENTRIES, 0, 1}
    for tile in tiles:
        status, body, headers = await fetch(bureau.session, f"{bureau.url}/{tile.path}")
        assert status == 200, (tile.path, body[:200])
        assert body == oracle.tile(tile), tile.path
        assert headers["Content-Type"] == "application/octet-stream"
        cache = headers["Cache-Control"]
        assert ("immutable" in cache) == tile.full, (tile.path, cache)
    # a partial tile of an earlier width is still served (a reader of an older head)
    status, body, _ = await fetch(bureau.session, f"{bureau.url}/tile/0/002.p/3")
    assert status == 200 and body == oracle.tile(Tile(0, 2, 3))


async def test_what_the_published_tree_does_not_have_is_404(bureau: BureauUnderTest) -> None:
    size = await grown(bureau, 300)
    assert 256 < size < 512
    width = size - 256
    for path in (f"tile/0/001.p/{width + 1}", "tile/0/001", "tile/0/002.p/1",
                 "tile/1/000", "tile/1/000.p/2", "tile/2/000.p/1",
                 f"tile/entries/001.p/{width + 1}", "tile/0/x000/001", "tile/0/1",
                 "tile/0/001.p/256", "tile/00/000", "tile/64/000", "tile/0/000.p/0",
                 "tile/0/x036/x028/x797/x018/x963/967", "tile/entries/x999/x999/x999/999",
                 "tile/63/000.p/1"):
        status, body, _ = await fetch(bureau.session, f"{bureau.url}/{path}")
        assert status == 404, (path, status, body[:200])
        assert b'"NOT_FOUND"' in body
    status, body, _ = await fetch(bureau.session, f"{bureau.url}/tile/0/000?x=1")
    assert status == 422 and b'"SCHEMA"' in body


async def test_entries_not_yet_in_a_published_head_have_no_tile(
        bureau: BureauUnderTest) -> None:
    size = await grown(bureau, 10)
    status, _, _ = await fetch(bureau.session, f"{bureau.url}/tile/0/000.p/{size}")
    assert status == 200
    from tests.tiles.support import grow

    await grow(bureau, 5)  # appended, not yet published
    status, _, _ = await fetch(bureau.session, f"{bureau.url}/tile/0/000.p/{size + 5}")
    assert status == 404
    await publish(bureau)
    status, _, _ = await fetch(bureau.session, f"{bureau.url}/tile/0/000.p/{size + 5}")
    assert status == 200


async def test_a_proof_from_served_tiles_holds_against_the_served_checkpoint(
        bureau: BureauUnderTest) -> None:
    await grown(bureau, 700)
    head = await checkpoint(bureau)
    for old in (1, 255, 256, 300, head.size - 1):
        plan = proofs.consistency_plan(old, head.size)
        fetched = {}
        for tile in tiles_needed(plan.nodes, head.size):
            status, body, _ = await fetch(bureau.session, f"{bureau.url}/{tile.path}")
            assert status == 200, tile.path
            fetched[tile] = body
        verify_tiles(head.size, head.root, fetched)
        assert plan.hashes(TileNodes(head.size, fetched)) == plan.hashes(
            (await Oracle.of(bureau)).nodes)


async def test_tile_reads_never_wait_for_the_ledger_lock(bureau: BureauUnderTest) -> None:
    """A writer holding the ledger head's row lock does not hold up a tile read."""
    await grown(bureau, 300)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        async with conn.transaction():
            await chain.lock_head(conn)
            for path in ("tile/0/000", "tile/entries/000", "tile/0/001.p/10", "checkpoint"):
                status, _, _ = await asyncio.wait_for(
                    fetch(bureau.session, f"{bureau.url}/{path}"), 10)
                assert status == 200, path
    finally:
        await conn.close()


@pytest.mark.parametrize("path", ["tile/0/000", "tile/entries/000"])
async def test_a_full_tile_is_served_from_memory_the_second_time(
        bureau: BureauUnderTest, path: str) -> None:
    await grown(bureau, 300)
    tile = parse_path(path)
    assert tile is not None
    cache = bureau.app[FULL_TILES]
    assert cache.get(tile) is None
    status, first, _ = await fetch(bureau.session, f"{bureau.url}/{path}")
    assert status == 200 and cache.get(tile) == first
    cache.put(tile, b"kept in memory")  # what the route answers now comes from there
    assert (await fetch(bureau.session, f"{bureau.url}/{path}"))[1] == b"kept in memory"
    partial = parse_path("tile/0/001.p/3")
    assert partial is not None
    cache.put(partial, b"never kept")
    assert cache.get(partial) is None


def test_the_cache_keeps_the_most_recently_read() -> None:
    cache = FullTiles(capacity=2)
    a, b, c = (Tile(0, i, 256) for i in range(3))
    cache.put(a, b"a")
    cache.put(b, b"b")
    assert cache.get(a) == b"a"  # a is now the most recent
    cache.put(c, b"c")
    assert cache.get(b) is None and cache.get(a) == b"a" and cache.get(c) == b"c"
