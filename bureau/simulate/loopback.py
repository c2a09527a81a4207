"""An aiohttp application served on a free loopback port: the simulation's bureau,
agents and proxy, and the tests' small servers, all start this way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serving(app: web.Application, *, access_log: bool = True) -> AsyncIterator[str]:
    """``app`` on 127.0.0.1 at a port the OS chooses, for as long as the block runs;
    yields its base URL (``http://127.0.0.1:PORT``)."""
    runner = web.AppRunner(app) if access_log else web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
