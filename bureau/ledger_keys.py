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

import logging
from typing import Any

from bureau.errors import InternalError
from bureau.storage import db, keys
from bureau.storage.keys import KeyPeriod as KeyPeriod
from reporters import wire
from reporters.tlog.note import ED25519, Verifier

log = logging.getLogger(__name__)


class NotInForce(InternalError):
    """This process's signing key is not the key in force where it was about to sign."""


async def history(conn: db.Connection) -> list[KeyPeriod]:
    """Every period, oldest first (empty before the genesis entry)."""
    return await keys.history(conn)


def note_vkey(origin: str, key_id: str) -> str:
    """The C2SP note verifier key of the bureau key ``key_id`` under the log's origin."""
    return Verifier(origin, ED25519, wire.public_key_from_key_id(key_id)).vkey


def history_json(periods: list[KeyPeriod], origin: str) -> list[dict[str, Any]]:
    """The key history as ``/v1/bureau`` lists it (``keys``): each period's key, its
    note vkey and the seq it is in force from, oldest first."""
    return [{"key": p.bureau, "vkey": note_vkey(origin, p.bureau), "from_seq": p.from_seq}
            for p in periods]


async def key_at(conn: db.Connection, seq: int) -> str | None:
    """The bureau key in force at entry ``seq``; None before the genesis entry."""
    return await keys.key_at(conn, seq)


async def latest_key(conn: db.Connection) -> str | None:
    """The key the next entries are signed for (the latest period's)."""
    return await keys.latest_key(conn)


async def require_in_force(conn: db.Connection, key_id: str, seq: int) -> None:
    """:class:`NotInForce` unless ``key_id`` is the key in force at entry ``seq``."""
    in_force = await key_at(conn, seq)
    if in_force is not None and in_force != key_id:
        raise NotInForce(f"this process signs with {key_id}, but the key in force at "
                         f"entry {seq} is {in_force} (a keys entry rotated it): it signs "
                         "nothing until restarted with that key's file")


async def admins_in_force(conn: db.Connection) -> frozenset[str]:
    """The admin set in force now (the latest period's)."""
    return frozenset(await keys.latest_admins(conn))


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
