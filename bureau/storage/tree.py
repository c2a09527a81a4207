"""The ``tree_nodes`` rows a group commit writes: the nodes its entries complete, packed
into one ``bytea`` parameter of the group's one statement (bureau.storage.chain) and
unpacked by PostgreSQL; the frontier's nodes read with the head; and the node reads of
roots, proofs and checks (bureau.transparency.tree)."""

from __future__ import annotations

import struct
from collections.abc import Collection, Iterable

import asyncpg

from reporters.tlog.merkle import Node

#: One packed node: level (1 byte), index (8 bytes, big-endian), hash (32 bytes).
_PACKED = struct.Struct(">BQ32s")
PACKED_SIZE = _PACKED.size


def pack_nodes(nodes: Iterable[tuple[int, int, bytes]]) -> bytes:
    """The nodes an append completed, as one ``bytea`` parameter. Passing three arrays
    instead costs asyncpg ~1.5 µs of Python per element (it checks each against three
    ABCs): ~9 µs an entry, against ~0.3 µs packed here and unpacked by PostgreSQL."""
    return b"".join(_PACKED.pack(level, idx, h) for level, idx, h in nodes)


def insert_packed_sql(param: str) -> str:
    """``INSERT`` of the nodes :func:`pack_nodes` put in the ``bytea`` parameter ``param``."""
    return (
        "INSERT INTO tree_nodes (level, idx, hash)"
        f" SELECT get_byte({param}, o),"
        f" ('x' || encode(substring({param} FROM o + 2 FOR 8), 'hex'))::bit(64)::bigint,"
        f" substring({param} FROM o + 10 FOR 32)"
        f" FROM generate_series(0, length({param}) - {PACKED_SIZE}, {PACKED_SIZE}) AS o")


def frontier_rows_sql(size: str, known_size: str, known_head: str) -> str:
    """``FROM … WHERE`` of the nodes of the frontier at the ledger head ``size`` (a
    column of ``ledger_head h``), unless the head is still (``known_size``,
    ``known_head``), the frontier the caller holds: then no row at all. Node
    ``(level, (size >> level) - 1)`` for every bit ``level`` set in ``size``
    (:meth:`~reporters.tlog.merkle.Frontier.nodes_at`), each by primary key.

    A LATERAL subquery with ``LIMIT 1`` (which PostgreSQL does not flatten into a
    join), so that the nodes can only be looked up one by one: planned as a plain join,
    the statement's generic plan (asyncpg prepares it; PostgreSQL keeps a generic plan
    made while ``tree_nodes`` was small) hashed the whole table on every group — single
    envelopes at a third of their speed after 60,000 entries."""
    return (
        "FROM ledger_head h"
        " CROSS JOIN LATERAL (SELECT g.level FROM generate_series(0, 62) AS g(level)"
        f" WHERE ({size} >> g.level) & 1 = 1"
        f" AND ({size}, h.head) IS DISTINCT FROM ({known_size}::bigint, {known_head}::text)) l"
        " CROSS JOIN LATERAL (SELECT n.level, n.idx, n.hash FROM tree_nodes n"
        f" WHERE n.level = l.level AND n.idx = ({size} >> l.level) - 1 LIMIT 1) t")


# One primary-key lookup per node, whatever the planner guesses of the arrays' length or
# of the table: a plain join of the unnested arrays with tree_nodes may be planned as a
# hash join over the whole table (measured: 1.1 ms p50 and 24 ms p99 a proof at 20,000
# entries). LIMIT 1 keeps PostgreSQL from flattening the LATERAL subquery into that join.
FETCH_SQL = """
SELECT k.level, k.idx, t.hash FROM unnest($1::smallint[], $2::bigint[]) AS k(level, idx)
CROSS JOIN LATERAL (SELECT hash FROM tree_nodes n WHERE n.level = k.level AND n.idx = k.idx
                    LIMIT 1) t
"""


def node_arrays(nodes: Collection[Node]) -> tuple[list[int], list[int]]:
    """The two array parameters of :data:`FETCH_SQL`."""
    ordered = sorted(nodes)
    return [lv for lv, _ in ordered], [i for _, i in ordered]


async def node_rows(conn: asyncpg.Connection, nodes: Collection[Node]) -> list[asyncpg.Record]:
    """(level, idx, hash) of those of ``nodes`` that are stored, in one query."""
    rows: list[asyncpg.Record] = await conn.fetch(FETCH_SQL, *node_arrays(nodes))
    return rows


async def head_position(conn: asyncpg.Connection) -> tuple[int, str]:
    """(seq, head) of the ledger head row: the tree's size and its last entry."""
    head = await conn.fetchrow("SELECT seq, head FROM ledger_head")
    assert head is not None
    return int(head["seq"]), str(head["head"])


# The stored nodes of a run of leaves: one primary-key range scan a level.
_SPANS_SQL = """
SELECT t.level, t.idx, t.hash FROM unnest($1::smallint[], $2::bigint[], $3::bigint[])
  AS k(level, low, high)
CROSS JOIN LATERAL (SELECT level, idx, hash FROM tree_nodes n
                    WHERE n.level = k.level AND n.idx BETWEEN k.low AND k.high OFFSET 0) t
"""


async def span_rows(conn: asyncpg.Connection, levels: list[int], lows: list[int],
                    highs: list[int]) -> list[asyncpg.Record]:
    """(level, idx, hash) of the stored nodes from ``lows`` to ``highs`` a level."""
    rows: list[asyncpg.Record] = await conn.fetch(_SPANS_SQL, levels, lows, highs)
    return rows


async def node_count(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM tree_nodes"))
