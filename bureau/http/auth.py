"""Who is reading: RFC 9421 signatures on authenticated reads (SPEC §9).

The rules themselves live in :func:`reporters.httpsig.verify_request` (pure, clock passed
in). This module only applies them to an aiohttp request and decides access:

1. no valid signature (missing, malformed, stale, replayed, not verifying) →
   ``401 UNAUTHENTICATED``, with the verifier's reason as ``detail``;
2. a valid signature by the party the URL names, or by an admin key → the reader's key id;
3. a valid signature by any other key → ``403 FORBIDDEN``.

The clock is the bureau's own (the ledger's clock), so the freshness window and the
``recorded_at`` of entries are measured on the same clock. The nonce store is the one
:data:`bureau.http.keys.NONCES` on the application: one per process.
"""

from __future__ import annotations

from aiohttp import web

from bureau.errors import BureauError, Code
from bureau.http.keys import CONFIG, LEDGER, NONCES
from reporters.httpsig import HttpSignatureError, verify_request


def authenticate(request: web.Request) -> str:
    """The key id that signed ``request``; ``401 UNAUTHENTICATED`` when none did."""
    now = request.app[LEDGER].clock().timestamp()
    try:
        # raw_path: the request target exactly as received (see reporters/httpsig.py).
        return verify_request(request.method, request.raw_path, request.headers,
                              now=now, nonces=request.app[NONCES])
    except HttpSignatureError as exc:
        raise BureauError(Code.UNAUTHENTICATED, "", exc.detail) from None


def is_admin(request: web.Request, reader: str) -> bool:
    return reader in request.app[CONFIG].admin_keys


def require_party(request: web.Request, party: str) -> str:
    """Authenticate ``request`` and insist that it was signed by ``party`` or an admin.

    Returns the reader's key id. ``party`` is the key the URL names, compared as text:
    a key id has exactly one spelling (canonical unpadded base64url).
    """
    reader = authenticate(request)
    if reader != party and not is_admin(request, reader):
        raise BureauError(Code.FORBIDDEN, "",
                          "signed by a key that may not read this: only the party the URL "
                          "names, or an admin, may")
    return reader
