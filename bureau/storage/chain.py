"""The rows one group commit writes, and the single statement that writes them.

A group's inserts — entries, their index rows, kept refusals, the Merkle tree nodes
its entries complete — and the move of the
ledger head go to PostgreSQL as ONE statement of data-modifying CTEs over ``unnest``ed
arrays: one round trip whatever the group's size, where a statement (or a COPY, with
its column introspection) per table would cost a round trip each. Past ``COPY_FROM``
entries the per-value cost of array parameters outweighs round trips, and the plain
tables go in by COPY first. Foreign keys from the
index tables to ``entries`` are checked at the end of the statement, when every row is in.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from bureau.storage.tree import insert_packed_sql

# table -> (column, PostgreSQL type) in row order, and the conflict clause if any
_TABLES: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {
    "entries": ((("seq", "bigint"), ("id", "text"), ("prev", "text"), ("kind", "text"),
                 ("recorded_at", "timestamptz"), ("epoch", "bigint"), ("signer", "text"),
                 ("subject", "text"), ("content_key", "text"), ("entry", "bytea")), ""),
    "facts": ((("reporter", "text"), ("interaction", "text"), ("seq", "bigint"),
               ("content_key", "text"), ("subject", "text"), ("caller", "text"),
               ("engagement", "text")), ""),
    "probes": ((("reporter", "text"), ("interaction", "text"), ("seq", "bigint"),
                ("content_key", "text"), ("subject", "text")), ""),
    "agents": ((("key", "text"), ("name", "text"), ("operator", "text"),
                ("anchor_kind", "text"), ("anchor_value", "text"), ("withdrawn", "boolean"),
                ("amended_at", "timestamptz"), ("seq", "bigint")),
               " ON CONFLICT (key) DO UPDATE SET name = EXCLUDED.name,"
               " operator = EXCLUDED.operator, anchor_kind = EXCLUDED.anchor_kind,"
               " anchor_value = EXCLUDED.anchor_value, withdrawn = EXCLUDED.withdrawn,"
               " amended_at = EXCLUDED.amended_at, seq = EXCLUDED.seq"),
    "verdicts": ((("seq", "bigint"), ("entry_id", "text"), ("kind", "text"),
                  ("evaluator", "text"), ("reporter", "text"), ("ref", "text"),
                  ("subject", "text"), ("content_key", "text"), ("favourable", "boolean")),
                 ""),
    "exclusions": ((("target", "text"), ("seq", "bigint"), ("reason", "text")), ""),
    "disputes": ((("entry_id", "text"), ("target", "text"), ("signer", "text"),
                  ("seq", "bigint")), ""),
    "resolutions": ((("dispute", "text"), ("entry_id", "text"), ("decision", "text"),
                     ("seq", "bigint")), ""),
    "policies": ((("seq", "bigint"), ("policy", "text"), ("from_epoch", "bigint"),
                  ("issued_at", "timestamptz")), ""),
    "pools": ((("seq", "bigint"), ("units", "bigint"), ("from_epoch", "bigint"),
               ("issued_at", "timestamptz")), ""),
    "refusals": ((("content_key", "text"), ("signer", "text"), ("kind", "text"),
                  ("code", "text"), ("path", "text"), ("detail", "text"),
                  ("refused_at", "timestamptz"), ("envelope", "bytea")),
                 " ON CONFLICT DO NOTHING"),
}


@dataclass
class Writes:
    """Rows to write when the group's transaction ends, by table (tuples in the column
    order of ``_TABLES``)."""

    entries: list[tuple[Any, ...]] = field(default_factory=list)
    facts: list[tuple[Any, ...]] = field(default_factory=list)
    probes: list[tuple[Any, ...]] = field(default_factory=list)
    reporters: list[tuple[Any, ...]] = field(default_factory=list)
    agents: list[tuple[Any, ...]] = field(default_factory=list)
    verdicts: list[tuple[Any, ...]] = field(default_factory=list)
    exclusions: list[tuple[Any, ...]] = field(default_factory=list)
    disputes: list[tuple[Any, ...]] = field(default_factory=list)
    resolutions: list[tuple[Any, ...]] = field(default_factory=list)
    policies: list[tuple[Any, ...]] = field(default_factory=list)
    pools: list[tuple[Any, ...]] = field(default_factory=list)
    #: (from_seq, seq, bureau, admins, issued_at): the genesis and ``keys`` entries'
    #: periods (written apart: ``admins`` is an array column, which unnest would flatten)
    ledger_keys: list[tuple[Any, ...]] = field(default_factory=list)
    refusals: list[tuple[Any, ...]] = field(default_factory=list)
    #: the Merkle tree nodes the group's entries complete (bureau.transparency.tree)
    tree: bytes = b""


def _statement(tables: list[str], tree: bool) -> str:
    """The one statement for these non-empty tables, and the tree nodes if ``tree``;
    ``$1..$3`` move the head."""
    ctes, n = [], 3
    for table in tables:
        columns, conflict = _TABLES[table]
        params = []
        for _, pgtype in columns:
            n += 1
            params.append(f"${n}::{pgtype}[]")
        names = ", ".join(c for c, _ in columns)
        ctes.append(f"w_{table} AS (INSERT INTO {table} ({names}) "
                    f"SELECT * FROM unnest({', '.join(params)}){conflict})")
    if tree:
        ctes.append(f"w_tree AS ({insert_packed_sql(f'${n + 1}::bytea')})")
    head = "UPDATE ledger_head SET seq = $1, head = $2, recorded_at = $3"
    return (f"WITH {', '.join(ctes)} {head}") if ctes else head


#: From this many entries in a group, its plain-insert tables go in by COPY first. asyncpg
#: checks every element of an array parameter against three ABCs (~1.5 µs of Python a
#: value, ~25 µs a fact); COPY encodes rows without that, at one round trip a table.
COPY_FROM = 200
#: Tables COPY may fill: no conflict clause. Entries go first: the others reference them.
_COPYABLE = ("entries", "facts", "probes", "verdicts", "exclusions", "disputes",
             "resolutions", "policies", "pools")


async def write_group(conn: asyncpg.Connection, w: Writes, seq: int, head: str,
                      recorded_at: dt.datetime) -> None:
    """Write every row of ``w`` and move the head to (seq, head): a big group's plain
    tables by COPY, then everything else in one statement."""
    tables = [t for t in _TABLES if getattr(w, t)]
    if len(w.entries) >= COPY_FROM:
        for table in _COPYABLE:
            rows = getattr(w, table)
            if rows:
                await conn.copy_records_to_table(
                    table, records=rows, columns=[c for c, _ in _TABLES[table][0]])
                tables.remove(table)
    args: list[Any] = [seq, head, recorded_at]
    for table in tables:
        rows = getattr(w, table)
        if table == "agents":
            # each row is the agent's whole new state, so the last one per key wins; one
            # upsert may not touch a row twice
            rows = list({row[0]: row for row in rows}.values())
        args.extend(list(col) for col in zip(*rows, strict=True))
    if w.tree:
        args.append(w.tree)
    await conn.execute(_statement(tables, bool(w.tree)), *args)
    if w.ledger_keys:
        await conn.executemany(
            "INSERT INTO ledger_keys (from_seq, seq, bureau, admins, issued_at)"
            " VALUES ($1, $2, $3, $4, $5)", w.ledger_keys)
    if w.reporters:  # rare, and roles is an array column, which unnest would flatten
        await conn.executemany(
            "INSERT INTO reporters (key, name, operator, roles, issued_at, distrusted_from, seq)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7)"
            " ON CONFLICT (key) DO UPDATE SET name = EXCLUDED.name,"
            " operator = EXCLUDED.operator, roles = EXCLUDED.roles,"
            " issued_at = EXCLUDED.issued_at, distrusted_from = EXCLUDED.distrusted_from,"
            " seq = EXCLUDED.seq",
            w.reporters)


async def begin_locked(conn: asyncpg.Connection) -> None:
    """Open a group's transaction holding the ledger head's row lock, in one round trip
    (the simple protocol takes both statements at once). Statements after it take their
    snapshots once the lock is held, so they see every group committed before, by any
    process of any node: the lock is the one arbiter between writers."""
    await conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED;"
                       " SELECT 1 FROM ledger_head FOR UPDATE")


async def lock_head(conn: asyncpg.Connection) -> asyncpg.Record:
    """In the caller's transaction, the ledger head's row lock (the one lock every writer
    of the chain takes first: genesis, rebuild, a group); its (seq, head, recorded_at)."""
    head = await conn.fetchrow("SELECT seq, head, recorded_at FROM ledger_head FOR UPDATE")
    assert head is not None
    return head


async def commit(conn: asyncpg.Connection) -> None:
    """COMMIT (``synchronous_commit`` on: durable when it returns)."""
    await conn.execute("COMMIT")


async def roll_back(conn: asyncpg.Connection) -> None:
    await conn.execute("ROLLBACK")
