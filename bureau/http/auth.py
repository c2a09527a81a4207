"""Who is reading: RFC 9421 signatures on authenticated reads (SPEC §9).

The rules themselves live in :func:`reporters.httpsig.verify_request` (pure, clock passed
in). This module only applies them to an aiohttp request and decides access:

1. no valid signature (missing, malformed, stale, replayed, not verifying) →
   ``401 UNAUTHENTICATED``, with the verifier's reason as ``detail``;
2. a valid signature by the party the URL names, or by an admin key → the reader's key id;
3. a valid signature by any other key → ``403 FORBIDDEN``.

The clock is the bureau's own (the ledger's clock), so the freshness window and the
``recorded_at`` of entries are measured on the same clock. A nonce is checked first
against this process's store (:data:`bureau.http.keys.NONCES`), then claimed in the
``read_nonces`` table, so no process accepts a nonce that any process has accepted.
"""

from __future__ import annotations

from aiohttp import web

from bureau import db
from bureau.errors import BureauError, Code, Pushback
from bureau.http.keys import CONFIG, LEDGER, NONCES, POOL
from reporters.httpsig import HttpSignatureError, NonceStore, verify_request


class _NonceClaim:
    """Checks a nonce against this process's store (fast, refuses most replays at once)
    and remembers it, so that it can then be claimed in the database for every process."""

    def __init__(self, local: NonceStore) -> None:
        self.local = local
        self.used: tuple[str, str, float] | None = None

    def use(self, keyid: str, nonce: str, *, expires_at: float, now: float) -> None:
        self.local.use(keyid, nonce, expires_at=expires_at, now=now)
        self.used = (keyid, nonce, expires_at)


async def _claim_in_database(request: web.Request, keyid: str, nonce: str,
                             expires_at: float, now: float) -> None:
    """Record the nonce in ``read_nonces``; refuse it if any process has seen it."""
    try:
        # One statement, its own transaction (no BEGIN/COMMIT round trips), timed by name.
        with db.TxTimer("claim_read_nonce") as timer:
            claimed = await request.app[POOL].fetchval(
                "WITH expired AS (DELETE FROM read_nonces WHERE expires_at < to_timestamp($4))"
                " INSERT INTO read_nonces (keyid, nonce, expires_at)"
                " VALUES ($1, $2, to_timestamp($3)) ON CONFLICT DO NOTHING RETURNING true",
                keyid, nonce, expires_at, now)
            timer.outcome = "commit"
    except Exception as exc:
        if db.is_connection_error(exc):
            raise BureauError(Code.UNAVAILABLE, "", "database unreachable",
                              pushback=Pushback.DATABASE_UNREACHABLE) from None
        raise
    if not claimed:
        raise BureauError(Code.UNAUTHENTICATED, "", "nonce has already been used")


async def authenticate(request: web.Request) -> str:
    """The key id that signed ``request``; ``401 UNAUTHENTICATED`` when none did."""
    now = request.app[LEDGER].clock().timestamp()
    claim = _NonceClaim(request.app[NONCES])
    try:
        # raw_path: the request target exactly as received (see reporters/httpsig.py).
        reader = verify_request(request.method, request.raw_path, request.headers,
                                now=now, nonces=claim)
    except HttpSignatureError as exc:
        raise BureauError(Code.UNAUTHENTICATED, "", exc.detail) from None
    if claim.used is not None:
        await _claim_in_database(request, *claim.used, now)
    return reader


def is_admin(request: web.Request, reader: str) -> bool:
    return reader in request.app[CONFIG].admin_keys


async def require_party(request: web.Request, party: str) -> str:
    """Authenticate ``request`` and insist that it was signed by ``party`` or an admin.

    Returns the reader's key id. ``party`` is the key the URL names, compared as text:
    a key id has exactly one spelling (canonical unpadded base64url).
    """
    reader = await authenticate(request)
    if reader != party and not is_admin(request, reader):
        raise BureauError(Code.FORBIDDEN, "",
                          "signed by a key that may not read this: only the party the URL "
                          "names, or an admin, may")
    return reader
