"""Database reads for a party's own file of entries and refusals (SPEC §9).

Read-only, off the append path: each page is read in one named ``REPEATABLE READ``
transaction so its entries and refusals come from one snapshot. Entries are rebuilt
from the stored canonical bytes (``entries.entry``) plus their id, so whoever holds them
can recompute every id; nothing is re-derived from index columns.

A page holds at most ``limit`` entries, and stops early once :data:`MAX_PAGE_BYTES` of
entries have been collected (it always holds at least one when any follow), so a page
of 1,000 large envelopes cannot take the process's memory. ``next_after`` says where the
next page starts; ``None`` means the reader has everything up to now. Refusals are paged
the same way, on their own cursor (``ref``), because they are not part of the chain.
A refusal kept without its envelope (SPEC §5 r2, :mod:`bureau.intake.refusals`) has
``"envelope": null`` and ``"detail": null``; every refusal carries its ``content_key``,
by which the signer can tell which of its envelopes it was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import asyncpg

from bureau.intake.clock import format_timestamp
from bureau.storage import db
from bureau.views.files import agent_seqs_sql

#: Stop filling a page (entries, and separately refusals) once this many stored bytes
#: have been collected.
MAX_PAGE_BYTES = 4 * 1024 * 1024

JsonObject = dict[str, Any]

# Candidate seqs, in the order of the chain. $1 = party key, $2 = after, $3 = limit + 1.
# An agent's file is defined once, with the evidence roots of its reports
# (bureau.views.files); each branch is limited on its own index before the union, so a
# page costs O(limit).
_AGENT_SEQS = agent_seqs_sql()

_REPORTER_SEQS = """
    SELECT seq FROM entries WHERE signer = $1 AND seq > $2 ORDER BY seq LIMIT $3
"""

# $4 = byte budget. `before` is the size of the page's entries ahead of this one.
_PAGE_SQL = """
    WITH cand AS ({seqs}),
    picked AS (
        SELECT e.seq, e.id, e.entry, octet_length(e.entry) AS size
        FROM entries e JOIN (SELECT seq FROM cand ORDER BY seq LIMIT $3) c USING (seq)),
    sized AS (
        SELECT seq, id, entry, count(*) OVER () AS candidates,
               sum(size) OVER (ORDER BY seq) - size AS before
        FROM picked)
    SELECT seq, id, entry, candidates FROM sized WHERE before < $4 ORDER BY seq
"""

_REFUSALS_SQL = """
    WITH picked AS (
        SELECT ref, content_key, kind, code, path, detail, refused_at, envelope,
               coalesce(octet_length(envelope), 0) AS size
        FROM refusals WHERE signer = $1 AND ref > $2 ORDER BY ref LIMIT $3),
    sized AS (
        SELECT *, count(*) OVER () AS candidates,
               sum(size) OVER (ORDER BY ref) - size AS before
        FROM picked)
    SELECT ref, content_key, kind, code, path, detail, refused_at, envelope, candidates
    FROM sized WHERE before < $4 ORDER BY ref
"""


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a party's file: entries (§9 shape) and refusals, each with its cursor."""

    entries: list[JsonObject]
    next_after: int | None
    refusals: list[JsonObject]
    next_refusals_after: int | None

    def as_body(self) -> JsonObject:
        return {"entries": self.entries, "next_after": self.next_after,
                "refusals": self.refusals, "next_refusals_after": self.next_refusals_after}


def entry_document(entry_id: str, stored: bytes) -> JsonObject:
    """The §9 entry as returned: the stored canonical JSON (the entry without its id),
    with ``"id"`` added."""
    doc: JsonObject = json.loads(stored)
    return {"seq": doc["seq"], "id": entry_id, **doc}


def _cut(rows: list[asyncpg.Record], limit: int) -> tuple[list[asyncpg.Record], bool]:
    """The rows that fit the page, and whether more follow them."""
    if not rows:
        return [], False
    more = len(rows) < rows[0]["candidates"] or len(rows) > limit
    return rows[:limit], more


async def _entries(conn: asyncpg.Connection, seqs_sql: str, party: str, after: int,
                   limit: int) -> tuple[list[JsonObject], int | None]:
    rows = await conn.fetch(_PAGE_SQL.format(seqs=seqs_sql), party, after, limit + 1,
                            MAX_PAGE_BYTES)
    kept, more = _cut(rows, limit)
    entries = [entry_document(r["id"], r["entry"]) for r in kept]
    return entries, (kept[-1]["seq"] if more else None)


async def _refusals(conn: asyncpg.Connection, signer: str, after: int,
                    limit: int) -> tuple[list[JsonObject], int | None]:
    rows = await conn.fetch(_REFUSALS_SQL, signer, after, limit + 1, MAX_PAGE_BYTES)
    kept, more = _cut(rows, limit)
    refusals = [{"ref": r["ref"], "content_key": r["content_key"], "kind": r["kind"],
                 "code": r["code"], "path": r["path"], "detail": r["detail"],
                 "refused_at": format_timestamp(r["refused_at"]),
                 "envelope": None if r["envelope"] is None else json.loads(r["envelope"])}
                for r in kept]
    return refusals, (kept[-1]["ref"] if more else None)


async def _page(conn: asyncpg.Connection, name: str, seqs_sql: str, party: str, after: int,
                limit: int, refusals_after: int) -> Page:
    async with db.transaction(conn, name, isolation="repeatable_read", readonly=True):
        entries, next_after = await _entries(conn, seqs_sql, party, after, limit)
        refusals, next_ref = await _refusals(conn, party, refusals_after, limit)
    return Page(entries, next_after, refusals, next_ref)


async def agent_page(conn: asyncpg.Connection, agent: str, *, after: int, limit: int,
                     refusals_after: int) -> Page:
    """Every entry about ``agent`` after seq ``after``: as subject, as signer, as the
    caller of a fact, an exclusion of an entry in its file, and the resolution of a
    dispute it raised; plus refusals of envelopes it signed."""
    return await _page(conn, "read_agent_entries", _AGENT_SEQS, agent, after, limit,
                       refusals_after)


async def reporter_page(conn: asyncpg.Connection, reporter: str, *, after: int, limit: int,
                        refusals_after: int) -> Page:
    """Every entry ``reporter`` signed after seq ``after``, plus its refusals."""
    return await _page(conn, "read_reporter_entries", _REPORTER_SEQS, reporter, after,
                       limit, refusals_after)
