"""Is a port free? (SPEC §10 r3) ``bureau serve`` asks before it creates anything.

Its worker processes share their ports with SO_REUSEPORT, and that option lets *any*
other process that sets it bind the same port: a second ``bureau serve`` would listen
beside the first, and the kernel would spread requests over two ledgers. So before it
starts, ``serve`` binds each of its addresses once *without* SO_REUSEPORT: that fails
while anyone listens there. (SO_REUSEADDR is set, as the server's own sockets set it,
so connections of a stopped run still in TIME_WAIT do not count as a holder.)
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterable


def _holder(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on, or None when it can."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot listen on {host}:{port}: {exc.strerror}"
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return (f"port {port} on {host} is already in use by another program "
                            "(another bureau serve?): stop it, or choose another port")
                return f"cannot listen on {host}:{port}: {exc.strerror}"
    return None


def taken(addresses: Iterable[tuple[str, int]]) -> str | None:
    """The first of ``addresses`` (host, port) that another program holds, said in one
    line; None when every one is free. Port 0 (any free port) is always free."""
    for host, port in addresses:
        if port != 0:
            why = _holder(host, port)
            if why is not None:
                return why
    return None
