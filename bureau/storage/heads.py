"""``tree_heads`` and ``cosignatures``: every signed tree head the bureau published, and
the witnesses' cosignatures of them (bureau.transparency.heads, .witnesses; SPEC §8.1)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import NamedTuple

from bureau import metrics
from bureau.errors import InternalError
from bureau.storage import db
from bureau.storage.tree import FETCH_SQL


class InconsistentHead(InternalError):
    """The tree no longer extends a head the bureau published: nothing is signed."""


class StoredHead(NamedTuple):
    size: int
    root: bytes
    note: str
    #: every witness's cosignature lines for it, in witness order
    cosignatures: str


class LastCosigned(NamedTuple):
    """The largest head one witness cosigned."""

    size: int
    signed_time: int
    received_at: dt.datetime


class Published(NamedTuple):
    """The ledger's head beside the latest head published (None before the first)."""

    seq: int
    size: int | None
    root: bytes | None


_LATEST_SQL = """
SELECT h.size, h.root, h.note,
       coalesce((SELECT string_agg(c.line, '' ORDER BY c.witness) FROM cosignatures c
                 WHERE c.size = h.size), '') AS cosignatures
FROM (SELECT size, root, note FROM tree_heads ORDER BY size DESC LIMIT 1) h
"""

# The tree store's node fetch (one primary-key lookup per node), after the latest
# published size, in one statement.
_PUBLISHED_AND_NODES_SQL = f"""
SELECT (SELECT max(size) FROM tree_heads) AS published, n.level, n.idx, n.hash
FROM (SELECT 1) AS one LEFT JOIN ({FETCH_SQL}) AS n ON true
"""


async def latest(conn: db.Connection) -> StoredHead | None:
    """The latest head published, with its cosignatures."""
    row = await conn.fetchrow(_LATEST_SQL)
    if row is None:
        return None
    return StoredHead(row["size"], bytes(row["root"]), row["note"], row["cosignatures"])


async def latest_size(conn: db.Connection) -> int | None:
    size: int | None = await conn.fetchval("SELECT max(size) FROM tree_heads")
    return size


async def published_and_nodes(conn: db.Connection, levels: Sequence[int],
                              indexes: Sequence[int],
                              ) -> tuple[int | None, dict[tuple[int, int], bytes]]:
    """The latest published size and the stored tree nodes (``levels[i]``,
    ``indexes[i]``) that exist, in ONE query."""
    rows = await conn.fetch(_PUBLISHED_AND_NODES_SQL, list(levels), list(indexes))
    found = {(r["level"], r["idx"]): bytes(r["hash"]) for r in rows if r["hash"] is not None}
    return rows[0]["published"], found


async def published_and_entry(conn: db.Connection, entry_id: str) -> tuple[int | None,
                                                                           int | None]:
    """The latest published size and the seq of entry ``entry_id`` (None: no such
    entry), in one query."""
    row = await conn.fetchrow(
        "SELECT (SELECT max(size) FROM tree_heads) AS published,"
        " (SELECT seq FROM entries WHERE id = $1) AS seq", entry_id)
    assert row is not None
    return row["published"], row["seq"]


async def epoch_note(conn: db.Connection, epoch: int) -> str | None:
    """The note of an epoch's checkpoint (its size is the seal's ``seq``), once the
    epoch's reports are complete."""
    note: str | None = await conn.fetchval(
        "SELECT h.note FROM checkpoints c JOIN seals s USING (epoch)"
        " JOIN tree_heads h ON h.size = s.last_seq WHERE c.epoch = $1", epoch)
    return note


# The head a proof of an entry at ``$1`` (its tree size) is best shown against: among
# the first 256 cosignatures kept at that size or later, the size the most witnesses
# cosigned, the smallest of those; the size itself when none was cosigned. Bounded:
# however old the entry, it reads at most 256 cosignature rows.
_WITNESSED_SQL = """
WITH chosen AS (
    SELECT coalesce((SELECT c.size FROM (SELECT size FROM cosignatures WHERE size >= $1
                                         ORDER BY size LIMIT 256) c
                     GROUP BY c.size ORDER BY count(*) DESC, c.size LIMIT 1), $1) AS size)
SELECT h.size, h.root, h.note,
       coalesce((SELECT string_agg(c.line, '' ORDER BY c.witness) FROM cosignatures c
                 WHERE c.size = h.size), '') AS cosignatures
FROM chosen JOIN tree_heads h USING (size)
"""


async def witnessed(conn: db.Connection, size: int) -> StoredHead | None:
    """The published head of at least ``size`` leaves the most witnesses cosigned (the
    smallest of those; the head of ``size`` itself when no later one was cosigned),
    with its cosignatures; None when no head of ``size`` was kept."""
    row = await conn.fetchrow(_WITNESSED_SQL, size)
    if row is None:
        return None
    return StoredHead(row["size"], bytes(row["root"]), row["note"], row["cosignatures"])


async def keep(conn: db.Connection, size: int, root: bytes, note: str) -> bytes | None:
    """Keep the head (size, root, note) unless one of that size is kept; the root kept
    at ``size`` (this one, or another process's), None if none could be read."""
    stored = await conn.fetchval(
        "WITH new AS (INSERT INTO tree_heads (size, root, note) VALUES ($1, $2, $3)"
        " ON CONFLICT DO NOTHING RETURNING root)"
        " SELECT root FROM new UNION ALL SELECT root FROM tree_heads WHERE size = $1",
        size, root, note)
    if stored is None:  # another transaction inserted it while this statement ran
        stored = await conn.fetchval("SELECT root FROM tree_heads WHERE size = $1", size)
    return None if stored is None else bytes(stored)


async def keep_consistent(conn: db.Connection, size: int, root: bytes, note: str) -> None:
    """:func:`keep`, refusing a head of a size already kept with another root: the tree
    changed under it (:class:`InconsistentHead`, counted in
    ``bureau_tree_head_refusals_total``; the caller's transaction rolls back)."""
    stored = await keep(conn, size, root, note)
    if stored is not None and stored != root:
        metrics.TREE_HEAD_REFUSALS.inc()
        raise InconsistentHead(f"a head of size {size} was published with root "
                               f"{stored.hex()}; the tree now has {root.hex()}")


async def ledger_and_published(conn: db.Connection) -> Published:
    """The ledger head's seq and the latest published head, in one query."""
    row = await conn.fetchrow(
        "SELECT (SELECT seq FROM ledger_head) AS seq, t.size, t.root FROM"
        " (SELECT 1) one LEFT JOIN (SELECT size, root FROM tree_heads"
        " ORDER BY size DESC LIMIT 1) t ON true")
    assert row is not None
    root = row["root"]
    return Published(row["seq"], row["size"], None if root is None else bytes(root))


async def cosigned_size(conn: db.Connection, witness: str) -> int:
    """The largest head the witness of verifier key ``witness`` cosigned, as far as
    this bureau kept (0: none)."""
    size: int | None = await conn.fetchval(
        "SELECT max(size) FROM cosignatures WHERE witness = $1", witness)
    return size or 0


async def keep_cosignature(conn: db.Connection, size: int, witness: str, lines: str,
                           signed_time: int) -> None:
    await conn.execute(
        "INSERT INTO cosignatures (size, witness, line, signed_time) VALUES ($1, $2, $3, $4)"
        " ON CONFLICT DO NOTHING", size, witness, lines, signed_time)


async def latest_cosigned(conn: db.Connection) -> dict[str, LastCosigned]:
    """Each witness's (by verifier key) largest cosigned head."""
    return {r["witness"]: LastCosigned(r["size"], r["signed_time"], r["received_at"])
            for r in await conn.fetch(
                "SELECT DISTINCT ON (witness) witness, size, signed_time, received_at"
                " FROM cosignatures ORDER BY witness, size DESC")}
