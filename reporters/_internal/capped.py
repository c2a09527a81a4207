"""Reading an HTTP answer no larger than its kind can be.

``resp.read()`` holds whatever the server sends: a hostile or broken server that answers
1.5 GB costs 1.5 GB of memory (and the time to parse it). :func:`read_capped` refuses a
declared ``Content-Length`` above the cap before reading a byte, and otherwise streams
the body and stops at the first byte past the cap, closing the connection: an answer of
any size costs at most the cap.
"""

from __future__ import annotations

import aiohttp


class TooLarge(Exception):
    """The answer is larger than ``cap`` bytes (``declared``: its Content-Length said so)."""

    def __init__(self, cap: int, declared: int | None) -> None:
        super().__init__(f"more than {cap} bytes"
                         + (f" (it declares {declared})" if declared is not None else ""))
        self.cap = cap
        self.declared = declared


async def read_capped(resp: aiohttp.ClientResponse, cap: int) -> bytes:
    """The body of ``resp``, at most ``cap`` bytes; raises :class:`TooLarge` (and
    closes the connection) past it."""
    declared = resp.content_length
    if declared is not None and declared > cap:
        resp.close()
        raise TooLarge(cap, declared)
    body = bytearray()
    async for chunk in resp.content.iter_any():
        body += chunk
        if len(body) > cap:
            resp.close()
            raise TooLarge(cap, None)
    return bytes(body)
