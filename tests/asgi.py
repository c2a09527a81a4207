"""An ASGI application (a2a-sdk's and mcp's servers are Starlette apps) served by uvicorn
on a loopback socket the caller has bound, for as long as a block runs."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import uvicorn


def loopback_socket() -> tuple[socket.socket, str]:
    """A socket bound to 127.0.0.1, port 0, and its base URL (the app may need the URL
    before it is served: an agent card names it)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


@asynccontextmanager
async def served(app: Any, sock: socket.socket, *,
                 lifespan: Literal["auto", "on", "off"] = "off"
                 ) -> AsyncIterator[None]:
    """Serve ``app`` on ``sock`` until the block ends (started when it begins)."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if serving.done():
                serving.result()
            await asyncio.sleep(0.01)
        yield
    finally:
        server.should_exit = True
        await serving
        sock.close()
