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

from bureau.intake.clock import format_timestamp
from bureau.reads.files import QUERIES
from bureau.storage import db
from bureau.storage import files as stored_files

#: Stop filling a page (entries, and separately refusals) once this many stored bytes
#: have been collected.
MAX_PAGE_BYTES = 4 * 1024 * 1024

JsonObject = dict[str, Any]

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


def _cut(rows: list[db.Row], limit: int) -> tuple[list[db.Row], bool]:
    """The rows that fit the page, and whether more follow them."""
    if not rows:
        return [], False
    more = len(rows) < rows[0]["candidates"] or len(rows) > limit
    return rows[:limit], more


def _entries(rows: list[db.Row], limit: int) -> tuple[list[JsonObject], int | None]:
    kept, more = _cut(rows, limit)
    entries = [entry_document(r["id"], r["entry"]) for r in kept]
    return entries, (kept[-1]["seq"] if more else None)


async def _refusals(conn: db.Connection, signer: str, after: int,
                    limit: int) -> tuple[list[JsonObject], int | None]:
    rows = await stored_files.refusals_page(conn, signer, after, limit + 1, MAX_PAGE_BYTES)
    kept, more = _cut(rows, limit)
    refusals = [{"ref": r["ref"], "content_key": r["content_key"], "kind": r["kind"],
                 "code": r["code"], "path": r["path"], "detail": r["detail"],
                 "refused_at": format_timestamp(r["refused_at"]),
                 "envelope": None if r["envelope"] is None else json.loads(r["envelope"])}
                for r in kept]
    return refusals, (kept[-1]["ref"] if more else None)


async def agent_page(conn: db.Connection, agent: str, *, after: int, limit: int,
                     refusals_after: int) -> Page:
    """Every entry about ``agent`` after seq ``after``: as subject, as signer, as the
    caller of a fact, an exclusion of an entry in its file, and the resolution of a
    dispute it raised; plus refusals of envelopes it signed."""
    async with db.transaction(conn, "read_agent_entries", isolation="repeatable_read",
                              readonly=True):
        rows = await QUERIES.agent_entries(conn, agent, after, limit + 1, MAX_PAGE_BYTES)
        return await _page(conn, rows, agent, limit, refusals_after)


async def reporter_page(conn: db.Connection, reporter: str, *, after: int, limit: int,
                        refusals_after: int) -> Page:
    """Every entry ``reporter`` signed after seq ``after``, plus its refusals."""
    async with db.transaction(conn, "read_reporter_entries", isolation="repeatable_read",
                              readonly=True):
        rows = await QUERIES.reporter_entries(conn, reporter, after, limit + 1,
                                              MAX_PAGE_BYTES)
        return await _page(conn, rows, reporter, limit, refusals_after)


async def _page(conn: db.Connection, rows: list[db.Row], party: str, limit: int,
                refusals_after: int) -> Page:
    """Within the page's transaction: its entries (read) and its refusals."""
    entries, next_after = _entries(rows, limit)
    refusals, next_ref = await _refusals(conn, party, refusals_after, limit)
    return Page(entries, next_after, refusals, next_ref)
