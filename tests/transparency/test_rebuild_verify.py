"""The stored tree and the signed heads against the entries: ``bureau verify`` finds a
node or a head that is not the entries', ``bureau rebuild`` recomputes the tree and
names what differed, and a bureau refuses to sign over (or start on) a ledger that no
longer extends a head it published."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from bureau.transparency import heads
from bureau.transparency.heads import InconsistentHead
from bureau.verify import BadTree, verify_database
from bureau.views.rebuild import rebuild
from reporters.tlog.merkle import leaf_hash
from tests.support import BureauUnderTest, registry_sample, start_bureau
from tests.transparency.service import publish
from tests.views.support import World, next_epoch


async def _ledger(bureau: BureauUnderTest) -> None:
    world = await World.make(bureau)
    agents = [await world.agent(f"a{i}") for i in range(3)]
    for i in range(9):
        await world.fact(agents[i % 3], caller=agents[(i + 1) % 3])
    await next_epoch(bureau)
    await publish(bureau)


async def _as_owner(database_url: str, sql: str, *args: object) -> None:
    """What only the schema's owner can do (the service's role cannot): rewrite."""
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("SET session_replication_role = replica")  # no triggers
        await conn.execute(sql, *args)
    finally:
        await conn.close()


async def test_verify_and_rebuild_agree_on_a_sound_ledger(bureau: BureauUnderTest) -> None:
    await _ledger(bureau)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        assert await verify_database(conn) > 10
        result = await rebuild(conn, bureau.signing_key, bureau.log_key)
        assert result.identical, result.differences
        await verify_database(conn)
    finally:
        await conn.close()


async def test_a_wrong_node_is_found_and_rebuilt(bureau: BureauUnderTest) -> None:
    await _ledger(bureau)
    await _as_owner(bureau.database_url,
                    "UPDATE tree_nodes SET hash = $1 WHERE level = 1 AND idx = 2",
                    leaf_hash(b"not this"))
    conn = await asyncpg.connect(bureau.database_url)
    try:
        with pytest.raises(BadTree, match=r"tree node \(1, 2\)"):
            await verify_database(conn)
        result = await rebuild(conn, bureau.signing_key, bureau.log_key)
        assert [d for d in result.differences if d.startswith("tree_nodes: ")], result
        await verify_database(conn)  # the tree is the entries' again
        assert (await rebuild(conn, bureau.signing_key, bureau.log_key)).identical
    finally:
        await conn.close()


async def test_a_missing_or_extra_node_is_found(bureau: BureauUnderTest) -> None:
    await _ledger(bureau)
    await _as_owner(bureau.database_url,
                    "INSERT INTO tree_nodes (level, idx, hash) VALUES (40, 0, $1)",
                    leaf_hash(b"extra"))
    conn = await asyncpg.connect(bureau.database_url)
    try:
        with pytest.raises(BadTree, match="tree nodes stored"):
            await verify_database(conn)
    finally:
        await conn.close()


async def test_a_signed_head_that_is_not_the_entries_is_found(
        bureau: BureauUnderTest) -> None:
    await _ledger(bureau)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        size = await heads.latest_size(conn)
    finally:
        await conn.close()
    assert size is not None
    await _as_owner(bureau.database_url, "UPDATE tree_heads SET root = $1 WHERE size = $2",
                    leaf_hash(b"another root"), size)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        with pytest.raises(BadTree, match=f"tree head of size {size}"):
            await verify_database(conn)
        result = await rebuild(conn, bureau.signing_key, bureau.log_key)
        assert f"tree_heads: size {size} was published with root" in "\n".join(
            result.differences)
        before = registry_sample("bureau_tree_head_refusals_total")
        await World.make(bureau)  # one more entry: the next head would sign over it
        with pytest.raises(InconsistentHead):
            await heads.publish(conn, bureau.log_key)
        assert registry_sample("bureau_tree_head_refusals_total") > before
    finally:
        await conn.close()


async def test_a_bureau_will_not_start_on_a_ledger_shorter_than_its_heads(
        database_url: str, tmp_path: Path) -> None:
    """A restore that lost published entries: the service refuses to sign a smaller
    head (docs/runbook.md, restoring)."""
    async with start_bureau(database_url, tmp_path) as bureau:
        await World.make(bureau)
        await publish(bureau)
        key = bureau.signing_key
    conn = await asyncpg.connect(database_url)
    try:
        size = await heads.latest_size(conn)
        await conn.execute("SET session_replication_role = replica")
        await conn.execute("DELETE FROM entries WHERE seq = $1", size)
        await conn.execute("DELETE FROM tree_nodes WHERE level = 0 AND idx = $1", size - 1)
        await conn.execute("UPDATE ledger_head SET seq = seq - 1, head = (SELECT id FROM"
                           " entries WHERE seq = $1)", size - 1)
    finally:
        await conn.close()
    with pytest.raises(InconsistentHead, match="was published"):
        async with start_bureau(database_url, tmp_path / "again", signing_key=key):
            pass
