"""Who is reading: RFC 9421 signatures on authenticated reads (SPEC §9).

The rules themselves live in :func:`reporters.httpsig.verify_request` (pure, clock passed
in). This module only applies them to an aiohttp request and decides access:

1. no valid signature (missing, malformed, stale, replayed, not verifying) →
   ``401 UNAUTHENTICATED``, with the verifier's reason as ``detail``;
2. a valid signature by any key other than the party the URL names or an admin →
   ``403 FORBIDDEN``;
3. otherwise the reader's key id — and only now is its nonce spent.

A nonce is a scarce resource, so it is spent only after the signature verifies *and* the
reader may read (PITFALLS: a nonce store filled before the party check can be filled by
strangers). Spending it: refused at once if this process remembers it (no round trip for
a replay), then claimed in the ``read_nonces`` table, which is the one record every
process shares; then remembered here if there is room. The process store holds at most
:data:`NONCE_CAPACITY` nonces, at most :data:`NONCES_PER_KEY` of one key; it is only a
cache in front of the table, so a full store (or a key over its share) refuses nobody —
the claim in the database still refuses every replay.

The clock is the bureau's own (the ledger's clock), so the freshness window and the
``recorded_at`` of entries are measured on the same clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from bureau import ledger_keys
from bureau.errors import BureauError, Code, Pushback
from bureau.http.keys import COMMITTER, DB_POOL, NONCES
from bureau.storage import db, nonces
from reporters.httpsig import HttpSignatureError, NonceStore, verify_request

#: nonces this process remembers at most (see the module docstring)
NONCE_CAPACITY = 100_000
#: of which at most this many of one key: a reader sending more than one signed read
#: every 0.3 s for 300 s still reads; its nonces are then checked in the database only
NONCES_PER_KEY = 1_000


def nonce_store(capacity: int = NONCE_CAPACITY, per_key: int = NONCES_PER_KEY) -> NonceStore:
    """The process's store of recently spent nonces."""
    return NonceStore(max_entries=capacity, max_per_key=per_key)


@dataclass(frozen=True, slots=True)
class _Nonce:
    keyid: str
    nonce: str
    expires_at: float


class _Deferred:
    """The verifier's nonce check, deferred: it only notes the nonce of a signature
    that verified, to be spent once the reader is known to be allowed."""

    def __init__(self) -> None:
        self.nonce: _Nonce | None = None

    def use(self, keyid: str, nonce: str, *, expires_at: float, now: float) -> None:
        self.nonce = _Nonce(keyid, nonce, expires_at)


async def _claim_in_database(request: web.Request, n: _Nonce, now: float) -> None:
    """Record the nonce in ``read_nonces``; refuse it if any process has seen it."""
    try:
        claimed = await nonces.claim(request.app[DB_POOL], n.keyid, n.nonce, n.expires_at, now)
    except Exception as exc:
        if db.is_connection_error(exc):
            raise BureauError(Code.UNAVAILABLE, "", "database unreachable",
                              pushback=Pushback.DATABASE_UNREACHABLE) from None
        raise
    if not claimed:
        raise BureauError(Code.UNAUTHENTICATED, "", "nonce has already been used")


async def _spend(request: web.Request, n: _Nonce, now: float) -> None:
    local = request.app[NONCES]
    if local.seen(n.keyid, n.nonce, now=now):
        raise BureauError(Code.UNAUTHENTICATED, "", "nonce has already been used")
    await _claim_in_database(request, n, now)
    local.remember(n.keyid, n.nonce, expires_at=n.expires_at, now=now)


async def is_admin(request: web.Request, reader: str) -> bool:
    """Is ``reader`` in the admin set in force now (the ledger's, SPEC §3 r3)?"""
    async with request.app[DB_POOL].acquire() as conn:
        return reader in await ledger_keys.admins_in_force(conn)


async def require_party(request: web.Request, party: str) -> str:
    """Authenticate ``request`` and insist that it was signed by ``party`` or an admin;
    spend its nonce only then.

    Returns the reader's key id. ``party`` is the key the URL names, compared as text:
    a key id has exactly one spelling (canonical unpadded base64url).
    """
    now = request.app[COMMITTER].clock().timestamp()
    deferred = _Deferred()
    try:
        # raw_path: the request target exactly as received (see reporters/httpsig.py).
        reader = verify_request(request.method, request.raw_path, request.headers,
                                now=now, nonces=deferred)
    except HttpSignatureError as exc:
        raise BureauError(Code.UNAUTHENTICATED, "", exc.detail) from None
    if reader != party and not await is_admin(request, reader):
        raise BureauError(Code.FORBIDDEN, "",
                          "signed by a key that may not read this: only the party the URL "
                          "names, or an admin, may")
    if deferred.nonce is not None:
        await _spend(request, deferred.nonce, now)
    return reader
