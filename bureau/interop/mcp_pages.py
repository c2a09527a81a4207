"""Pages of the MCP subregistry view read from the epoch's public rows (issue 35): each
page is a few index ranges with a ``LIMIT`` (bureau.storage.public_rows), so its cost
is the page's whatever the epoch holds — 10,000 linked agents or 4,000 claims of one
name. The shapes are :mod:`bureau.interop.mcp_view`'s."""

from __future__ import annotations

from dataclasses import dataclass

from bureau.interop import mcp_view
from bureau.interop.mcp_view import Claim, Entry
from bureau.storage import db, public_rows, reports


@dataclass(frozen=True, slots=True)
class Page:
    epoch: int
    entries: list[Entry]
    next_cursor: str | None


async def _entries(conn: db.Connection, epoch: int, rows: list[public_rows.ServerRow],
                   after: str | None, per_name: int) -> list[Entry]:
    """Each name's first ``per_name`` claims after agent ``after`` (one more is read, to
    know whether more follow)."""
    claims = await public_rows.claims(conn, epoch, [r.name for r in rows], after,
                                      per_name + 1)
    by_name: dict[str, list[Claim]] = {}
    for c in claims:
        by_name.setdefault(c.server, []).append(Claim(c.agent, c.summary))
    return [Entry(r.name, r.claims, by_name.get(r.name, [])[:per_name],
                  len(by_name.get(r.name, [])) > per_name) for r in rows]


async def servers_page(conn: db.Connection, cursor: str | None, limit: int,
                       search: str | None) -> Page | None:
    """One page of ``GET /v0/servers``; None when no epoch is sealed."""
    epoch = await reports.latest_epoch(conn)
    if epoch is None:
        return None
    if search is None:
        rows = await public_rows.servers(conn, epoch, cursor, limit + 1)
        more = rows[limit - 1].name if len(rows) > limit else None
        rows = rows[:limit]
    else:
        rows, more = await public_rows.search_servers(conn, epoch, public_rows.Search(
            search, cursor, limit + 1, mcp_view.SEARCH_WINDOW))
        if len(rows) > limit:
            rows, more = rows[:limit], rows[limit - 1].name
    entries = await _entries(conn, epoch, rows, None, mcp_view.CLAIMS_IN_LIST)
    return Page(epoch, entries, more)


async def server_entry(conn: db.Connection, name: str,
                       cursor: str | None) -> tuple[int, Entry | None] | None:
    """One name with a page of its claims after agent ``cursor``; None when no epoch is
    sealed, ``(epoch, None)`` when no agent claims the name."""
    epoch = await reports.latest_epoch(conn)
    if epoch is None:
        return None
    row = await public_rows.server(conn, epoch, name)
    if row is None:
        return epoch, None
    [entry] = await _entries(conn, epoch, [row], cursor, mcp_view.CLAIMS_PAGE)
    return epoch, entry
