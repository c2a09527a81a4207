"""Who signs for the ledger (SPEC §3 r3): the bureau key and the admin set in force at
each entry, as the genesis entry and the ``keys`` entries set them (``ledger_keys``,
one row per period: migrations/0011_ledger_keys.sql).

The key in force at entry ``n`` is the genesis entry's, or that of the latest ``keys``
entry before ``n``. Every report, checkpoint and note is signed by the key in force at
the position it covers (a report's and a checkpoint's ``seq``, a note's tree size):
:func:`require_in_force` is the check every signing path makes first, so a process
whose key was rotated away signs nothing (:class:`NotInForce`).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

import asyncpg

from bureau.errors import InternalError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KeyPeriod:
    """From entry ``from_seq`` on (until the next period), the bureau signs with
    ``bureau`` and the admins are ``admins`` (sorted); set by entry ``seq``."""

    from_seq: int
    seq: int
    bureau: str
    admins: tuple[str, ...]
    issued_at: dt.datetime | None  # None: the genesis entry's


class NotInForce(InternalError):
    """This process's signing key is not the key in force where it was about to sign."""


async def history(conn: asyncpg.Connection) -> list[KeyPeriod]:
    """Every period, oldest first (empty before the genesis entry)."""
    return [KeyPeriod(r["from_seq"], r["seq"], r["bureau"], tuple(r["admins"]),
                      r["issued_at"])
            for r in await conn.fetch("SELECT from_seq, seq, bureau, admins, issued_at"
                                      " FROM ledger_keys ORDER BY from_seq")]


def period_at(periods: list[KeyPeriod], seq: int) -> KeyPeriod | None:
    """The period in force at entry ``seq`` (a size-0 tree counts as entry 1's)."""
    found = None
    for period in periods:
        if period.from_seq > max(seq, 1):
            break
        found = period
    return found


_AT_SQL = ("SELECT bureau FROM ledger_keys WHERE from_seq <= greatest($1::bigint, 1)"
           " ORDER BY from_seq DESC LIMIT 1")
_LATEST_SQL = "SELECT bureau FROM ledger_keys ORDER BY from_seq DESC LIMIT 1"


async def key_at(conn: asyncpg.Connection, seq: int) -> str | None:
    """The bureau key in force at entry ``seq``; None before the genesis entry."""
    key: str | None = await conn.fetchval(_AT_SQL, seq)
    return key


async def latest_key(conn: asyncpg.Connection) -> str | None:
    """The key the next entries are signed for (the latest period's)."""
    key: str | None = await conn.fetchval(_LATEST_SQL)
    return key


async def require_in_force(conn: asyncpg.Connection, key_id: str, seq: int) -> None:
    """:class:`NotInForce` unless ``key_id`` is the key in force at entry ``seq``."""
    in_force = await key_at(conn, seq)
    if in_force is not None and in_force != key_id:
        raise NotInForce(f"this process signs with {key_id}, but the key in force at "
                         f"entry {seq} is {in_force} (a keys entry rotated it): it signs "
                         "nothing until restarted with that key's file")


async def admins_in_force(conn: asyncpg.Connection) -> frozenset[str]:
    """The admin set in force now (the latest period's)."""
    admins = await conn.fetchval(
        "SELECT admins FROM ledger_keys ORDER BY from_seq DESC LIMIT 1")
    return frozenset(admins or ())


class Retired:
    """Says once, per background task, that this process's key is no longer in force
    (each later pass would say it again): the operator restarts the node with the key
    file the ledger names."""

    def __init__(self, task: str) -> None:
        self.task = task
        self.said = False

    def note(self, exc: NotInForce) -> None:
        if not self.said:
            self.said = True
            log.error("%s: NOT SIGNING: %s", self.task, exc.detail)
