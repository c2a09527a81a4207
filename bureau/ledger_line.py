"""The first line of every command that reads a ledger directly: which ledger it is
(issue 24: "bureau verify" said "ok, 1 entries" for a ledger nobody meant, and
"bureau report" waited on a stopped bureau's home in a new shell).

    ledger at ./.bureau-demo, 30 s epochs, 75 entries, latest sealed epoch 59869649
    (from 2026-12-01 01:44:30 UTC)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bureau.config import Config
from bureau.report_text import epoch_text
from bureau.storage import db, overview
from reporters._internal.wording import count


def where(config: Config) -> str:
    """The ledger's place as a person typed it: the home directory (relative to here
    when it is below here), or the database URL without its password."""
    if config.database_url:
        parts = urlsplit(config.database_url)
        netloc = parts.netloc.rpartition("@")
        user = netloc[0].partition(":")[0]
        host = f"{user}@{netloc[2]}" if netloc[1] else netloc[2]
        query = "&".join(p for p in parts.query.split("&") if not p.startswith("password="))
        return urlunsplit(parts._replace(netloc=host, query=query))
    home = config.home.resolve()
    try:
        return "./" + str(home.relative_to(Path(os.getcwd()).resolve()))
    except ValueError:
        return str(home)


@dataclass(frozen=True, slots=True)
class LedgerSummary:
    place: str
    epoch_seconds: int | None  # None before the genesis entry
    entries: int
    sealed: int | None  # the latest epoch with published reports

    def line(self) -> str:
        parts = [f"ledger at {self.place}"]
        if self.epoch_seconds is not None:
            parts.append(f"{self.epoch_seconds} s epochs")
        parts.append(count(self.entries, "entry"))
        if self.sealed is None:
            parts.append("no epoch sealed yet")
        elif self.epoch_seconds is not None:
            parts.append("latest sealed " + epoch_text(self.sealed, self.epoch_seconds))
        return ", ".join(parts)


async def summary(conn: db.Connection, place: str) -> LedgerSummary:
    """The ledger on ``conn`` in three numbers (reads a fresh database as empty)."""
    if not await overview.has_ledger(conn):
        return LedgerSummary(place, None, 0, None)
    from bureau.intake import genesis

    settings = await genesis.read(conn)
    counts = await overview.counts(conn)
    return LedgerSummary(place, settings.epoch_seconds if settings else None,
                         counts.entries, counts.sealed)
