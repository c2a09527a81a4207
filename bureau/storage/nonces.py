"""``read_nonces``: the nonces of signed reads every process has spent (SPEC §9), the
record behind each process's cache of them (bureau.http.auth)."""

from __future__ import annotations

from bureau.storage import db

_CLAIM_SQL = (
    "WITH expired AS (DELETE FROM read_nonces WHERE expires_at < to_timestamp($4))"
    " INSERT INTO read_nonces (keyid, nonce, expires_at)"
    " VALUES ($1, $2, to_timestamp($3)) ON CONFLICT DO NOTHING RETURNING true")


async def claim(pool: db.Pool, keyid: str, nonce: str, expires_at: float,
                now: float) -> bool:
    """Record ``nonce`` of ``keyid`` until ``expires_at``, dropping the nonces expired
    at ``now``: False when any process spent it before. One statement, its own
    transaction (no BEGIN/COMMIT round trips), timed as ``claim_read_nonce``."""
    with db.TxTimer("claim_read_nonce") as timer:
        claimed = await pool.fetchval(_CLAIM_SQL, keyid, nonce, expires_at, now)
        timer.outcome = "commit"
    return bool(claimed)
