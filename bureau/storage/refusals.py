"""``refusals``: what the bound on kept envelopes reads of them (SPEC §5 r2,
bureau.intake.refusals); the rows themselves are written with the group
(bureau.storage.chain)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from bureau.storage import db

_KEPT_SQL = """
    SELECT signer, count(*) AS kept FROM refusals
    WHERE signer = ANY($1::text[]) AND refused_at >= $2 AND envelope IS NOT NULL
    GROUP BY signer
"""


async def envelopes_kept(conn: db.Connection, signers: Sequence[str],
                         since: dt.datetime) -> dict[str, int]:
    """How many refusals of each of ``signers`` since ``since`` kept their envelope
    (signers with none are absent). One query; the partial index of migration 0009
    makes it read at most the budget's rows per signer."""
    return {r["signer"]: r["kept"] for r in await conn.fetch(_KEPT_SQL, list(signers), since)}
