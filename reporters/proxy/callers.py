"""Who is calling: the RFC 9421 signer of a call, when there is a valid signature.

The proxy reports, it does not gatekeep: an unsigned or badly signed call is forwarded
like any other, its fact just has ``caller: null`` (docs/proxy.md). Checking a
signature is CPU work (http_message_signatures builds the signature base; ~0.3 ms a
call), so a plain call's is checked while the call is on its way upstream, where the
agent's own time hides it (:meth:`Callers.while_upstream`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web

from reporters.httpsig import HttpSignatureError, NonceStore, verify_request


class Callers:
    """Checks callers' signatures; ``wall`` is Unix seconds (signature freshness)."""

    def __init__(self, wall: Callable[[], float]) -> None:
        self._wall = wall
        self._nonces = NonceStore()

    @staticmethod
    def signed(request: web.Request) -> bool:
        """Whether there is a signature to check at all."""
        return "Signature-Input" in request.headers

    def of(self, request: web.Request) -> str | None:
        """The verified signer's key id, or None."""
        if not self.signed(request):
            return None
        try:
            return verify_request(request.method, request.raw_path, request.headers,
                                  now=self._wall(), nonces=self._nonces)
        except HttpSignatureError:
            return None

    async def while_upstream(self, request: web.Request) -> str | None:
        """:meth:`of`, once the call has been sent upstream. aiohttp writes a request in
        the loop turn after the one that starts it, hence two turns first (were it
        later, the check would come before the sending, as it would anyway)."""
        if not self.signed(request):
            return None
        for _ in range(2):
            await asyncio.sleep(0)
        return self.of(request)
