"""The public list of agents (the home page): the latest sealed epoch's reports, ranked
by ``score.low`` (SPEC §8: an agent known from little evidence never outranks a long
good record), searchable by name or key, a page at a time.

It reads the signed reports themselves, decoding their payloads in PostgreSQL, so the
list can never say anything the reports do not. That decode costs about 30 ms per
thousand reports, so each process does it once per sealed epoch (:class:`Ranking`)
and answers page views and searches from memory (docs/operations.md#public-pages).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bureau.storage import db, reports

#: agents on one page of the list
PAGE_SIZE = 50
#: the longest search text taken
MAX_QUERY = 200


@dataclass(frozen=True, slots=True)
class Ranked:
    """One row of the list: what the agent's signed report says."""

    agent: str
    name: str | None
    value: float | None
    low: float | None
    high: float | None
    interactions: int | None  # scored interactions
    observed: int | None = None  # interactions observed, judged or not (reliability)


@dataclass(frozen=True, slots=True)
class RankedPage:
    epoch: int | None  # None: no epoch sealed yet
    rows: list[Ranked]
    more: bool  # a next page exists


class Ranking:
    """The latest sealed epoch's list, read once per epoch by this process.

    A sealed epoch's reports never change, so the list is read again only when a later
    epoch has its checkpoint; until then every view and search is a scan in memory. It
    reads from whichever database ``conn`` is (a read replica, bureau.replica), and
    never goes back to an older epoch.
    """

    def __init__(self) -> None:
        self._epoch: int | None = None
        self._rows: list[tuple[str, Ranked]] = []  # (lowercased name, row), ranked
        self._lock = asyncio.Lock()

    async def page(self, conn: db.Connection, query: str | None,
                   page: int) -> RankedPage:
        """Page ``page`` (from 1) of the agents whose name contains ``query`` (case
        aside) or whose key id contains it; of every agent when it is None."""
        epoch = await reports.latest_epoch(conn)
        if epoch is None and self._epoch is None:
            return RankedPage(None, [], False)
        # Only forward: a replica a little behind (bureau.replica) shows the list kept.
        if epoch is not None and (self._epoch is None or epoch > self._epoch):
            async with self._lock:  # one read per epoch however many views arrive
                if self._epoch is None or epoch > self._epoch:
                    rows = await reports.ranked(conn, epoch)
                    self._rows = [((r["name"] or "").lower(), Ranked(
                        r["agent"], r["name"], r["value"], r["low"], r["high"],
                        r["interactions"], r["observed"])) for r in rows]
                    self._epoch = epoch
        if query is None:
            matched = [row for _, row in self._rows]
        else:
            folded = query.lower()
            matched = [row for name, row in self._rows
                       if folded in name or query in row.agent]
        first = (page - 1) * PAGE_SIZE
        return RankedPage(self._epoch, matched[first:first + PAGE_SIZE],
                          len(matched) > first + PAGE_SIZE)
