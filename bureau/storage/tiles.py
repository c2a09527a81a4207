"""The tree as C2SP tlog-tiles, read from the stores that hold it (SPEC §9.1): a hash
tile is a run of ``tree_nodes`` at one level, an entry bundle a run of entry ids. Each
read is one statement that also gives the latest published size, so the caller can
refuse a tile the published tree does not have without a second round trip. Reads
only: no lock of the ledger is taken or waited for."""

from __future__ import annotations

from typing import NamedTuple

from bureau.storage import db


class TileRows(NamedTuple):
    """The latest published tree size (None before the first head) and the bytes read:
    the hashes of the run, concatenated, or the run's entries as a tlog-tiles bundle
    (each id's 32 bytes after its length, 0x0020)."""

    published: int | None
    data: bytes


# One primary-key range scan; string_agg concatenates the 32-byte hashes in PostgreSQL,
# so no row reaches Python (a full tile is 256 rows).
_HASHES_SQL = """
SELECT (SELECT max(size) FROM tree_heads) AS published,
       (SELECT string_agg(n.hash, ''::bytea ORDER BY n.idx) FROM tree_nodes n
        WHERE n.level = $1 AND n.idx >= $2 AND n.idx < $3) AS data
"""

_ENTRIES_SQL = """
SELECT (SELECT max(size) FROM tree_heads) AS published,
       (SELECT string_agg('\\x0020'::bytea || decode(e.id, 'hex'), ''::bytea ORDER BY e.seq)
        FROM entries e WHERE e.seq > $1 AND e.seq <= $2) AS data
"""


def _rows(row: db.Row | None) -> TileRows:
    assert row is not None
    data = row["data"]
    return TileRows(row["published"], b"" if data is None else bytes(data))


async def hashes(conn: db.Connection, level: int, first: int, count: int) -> TileRows:
    """The stored hashes of tree level ``level``, indices ``[first, first + count)``."""
    return _rows(await conn.fetchrow(_HASHES_SQL, level, first, first + count))


async def entry_ids(conn: db.Connection, first: int, count: int) -> TileRows:
    """The ids of leaves ``[first, first + count)`` (entries ``first + 1`` onwards) as
    an entry bundle."""
    return _rows(await conn.fetchrow(_ENTRIES_SQL, first, first + count))
