"""Header and body deadlines for an aiohttp listener: the proxy's and the OTLP receiver's
(issue 35), and the head deadline of ``bureau serve``'s port (bureau.http.listener).

aiohttp has no deadline for a request's head, nor for its body: a client trickling a
10-byte body over 77 s was answered 200 by both. Two bounds, each configurable:

* ``header_seconds`` (default 10): a request's head (request line and header fields)
  must be in within this many seconds of its first byte — or of the connection's
  opening, for the first request. Past it the connection is closed without an answer
  (there is no request yet to answer) and ``on_late("header_seconds")`` counts it.
  A connection waits for its next request no longer than that either: aiohttp's
  keep-alive (``keepalive_timeout``, 3630 s by default) is set to ``header_seconds``,
  so an idle connection, or one whose next head was begun while the previous request was
  being handled (pipelined) and never finished, is closed that long after its last
  answer. Before, one complete request then silence held a connection for an hour, past
  the head deadline (those closes are aiohttp's and not counted).
* ``body_seconds`` (default 60, as the bureau's intake): the whole body must be in within
  this many seconds of the head. Past it the request is answered ``408`` by its caller
  (:func:`read_body` raises :class:`BodyLate`) and counted as ``body_seconds``.

The head deadline is a small subclass of aiohttp's connection handler: it watches the
requests the parser completes (``_request_count``) and whether a request is being
handled (``_current_request``), two fields aiohttp's handler has kept through the 3.x
series; tests/proxy/test_deadlines.py holds the behaviour on the aiohttp installed (and
tests/hardening/test_slow_heads.py at ``bureau serve``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

OnLate = Callable[[str], None]


class BodyLate(Exception):
    """The body did not arrive within ``body_seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the body did not arrive within {seconds:g} s")
        self.seconds = seconds


async def read_body(request: web.Request, seconds: float) -> bytes:
    """``request.read()`` (bounded by the app's ``client_max_size``), within ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            return await request.read()
    except TimeoutError:
        raise BodyLate(seconds) from None


class _HeadDeadline(RequestHandler):
    """A connection handler that closes a connection whose next request head is late."""

    header_seconds: float = 10.0
    on_late: OnLate = staticmethod(lambda limit: None)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # armed before aiohttp arms its keep-alive for the same moment, so that a
        # connection that sends nothing is closed (and counted) here
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm()
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        heads = self._request_count
        super().data_received(data)
        if self._request_count > heads:
            self._disarm()  # a head is complete: its body has a deadline of its own
        elif self._head_timer is None and self._current_request is None:
            self._arm()  # the first bytes of the next request's head

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._head_timer = asyncio.get_running_loop().call_later(self.header_seconds,
                                                                 self._late)

    def _disarm(self) -> None:
        timer, self._head_timer = getattr(self, "_head_timer", None), None
        if timer is not None:
            timer.cancel()

    def _late(self) -> None:
        self._head_timer = None
        if self._current_request is None and self.transport is not None:
            self.on_late("header_seconds")
            self.transport.close()


class _DeadlineServer(web.Server):
    handler_class: type[RequestHandler] = RequestHandler

    def __call__(self) -> RequestHandler:
        return self.handler_class(self, loop=self._loop, **self._kwargs)


class DeadlineRunner(web.AppRunner):
    """An :class:`aiohttp.web.AppRunner` whose connections have a head deadline."""

    def __init__(self, app: web.Application, header_seconds: float, on_late: OnLate,
                 **kwargs: Any) -> None:
        kwargs.setdefault("keepalive_timeout", header_seconds)  # see the module's doc
        super().__init__(app, **kwargs)
        self._handler_class = type("HeadDeadline", (_HeadDeadline,), {
            "header_seconds": header_seconds, "on_late": staticmethod(on_late)})

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _DeadlineServer  # the same object, making our handlers
        server.handler_class = self._handler_class  # type: ignore[attr-defined]
        return server


__all__ = ["BodyLate", "DeadlineRunner", "OnLate", "read_body"]
