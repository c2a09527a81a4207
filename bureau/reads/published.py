"""``GET /v1/bureau``, as a document: what the route serves and the static mirror writes
(SPEC §9 r2–r4): the key in force and its vkey, the key history, the admins in force,
the current epoch's policy hash, the epoch length, the origin and, when configured, the
operator's Ethereum address."""

from __future__ import annotations

import datetime as dt
from typing import Any

from bureau import ledger_keys
from bureau.evidence.policies import current_policy
from bureau.storage import db


async def bureau_document(conn: db.Connection, *, origin: str, epoch_seconds: int,
                          eth_address: str | None, now: dt.datetime) -> dict[str, Any]:
    """The document, read on ``conn`` (the primary: a policy entry changes the current
    epoch's policy at once, and an admin who posted it reads it back)."""
    periods = await ledger_keys.history(conn)
    keys = ledger_keys.history_json(periods, origin)
    return {
        "key": keys[-1]["key"],
        "policy": await current_policy(conn, now, epoch_seconds),
        "epoch_seconds": epoch_seconds,
        "origin": origin,
        "vkey": keys[-1]["vkey"],
        "keys": keys,
        "admins": list(periods[-1].admins),
        "eth_address": eth_address,
    }
