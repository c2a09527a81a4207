"""Where a signed agent card's ``jku`` may send the proxy (issue 35).

A ``jku`` is a URL inside a document the proxy fetched: the card's author chose it, and
it named an arbitrary host and port (a TLS ClientHello arrived on a loopback port the
card picked). So a ``jku`` is followed only

1. to a host the operator configured for the route — the route's ``upstream`` (the card
   came from there anyway; same host and port) or a host of its ``card_jku_hosts``
   (``"keys.example.com"``, or ``"keys.example.com:8443"`` for one port) — and
2. to public addresses only, unless the host is the route's upstream or is listed in
   ``card_jku_hosts`` as an address literal (``"10.0.0.7"``): a listed *name* that
   resolves to a loopback, private, link-local, multicast or reserved address is refused
   by :class:`GuardedResolver`, at the moment the connection is opened.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from reporters.proxy.config import Route


def _host_port(url: str) -> tuple[str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)


def jku_allowed(jku: str, route: Route) -> str | None:
    """None when ``jku`` may be fetched for ``route``, else why not."""
    where = _host_port(jku)
    if where is None:
        return "not a URL with a host"
    if where == _host_port(route.upstream) or host_listed(jku, route.card_jku_hosts):
        return None
    host, port = where
    return f"{host}:{port} is neither the route's upstream nor in card_jku_hosts"


def _has_port(entry: str) -> bool:
    """``host:port`` (an IPv6 literal is written ``[::1]:443``)."""
    head, sep, tail = entry.rpartition(":")
    return bool(sep) and tail.isdigit() and (not head.startswith("[") or head.endswith("]"))


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


#: how a refused address reads in the error (the caller tells it from a host that is down)
NOT_PUBLIC = "is not a public address"


def trusted_hosts(routes: Iterable[Route]) -> frozenset[str]:
    """The hosts that may resolve to any address: the routes' upstream hosts (the
    operator's own), and the address literals of their ``card_jku_hosts``."""
    trusted: set[str] = set()
    for route in routes:
        upstream = _host_port(route.upstream)
        if upstream is not None:
            trusted.add(upstream[0])
        trusted.update(literal_hosts(route.card_jku_hosts))
    return frozenset(trusted)


def literal_hosts(entries: Iterable[str]) -> frozenset[str]:
    """The address literals among ``host`` / ``host:port`` entries (an operator who lists
    an address means that address, private or not)."""
    hosts = (e.rpartition(":")[0] if _has_port(e) else e for e in entries)
    return frozenset(h.lower().strip("[]") for h in hosts if _literal(h))


def host_listed(url: str, entries: Iterable[str]) -> bool:
    """Is ``url``'s host (and port) one of ``entries`` (``host``: any port)?"""
    where = _host_port(url)
    if where is None:
        return False
    host, port = where
    for entry in entries:
        name, _, only = entry.lower().rpartition(":") if _has_port(entry) else (
            entry.lower(), "", "")
        if name.strip("[]") == host.strip("[]") and (not only or int(only) == port):
            return True
    return False


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, with every non-public address taken out for hosts the operator
    did not configure as such (``trusted``: :func:`trusted_hosts`); nothing left is an
    error, and no connection is opened."""

    def __init__(self, trusted: Iterable[str]) -> None:
        self._inner = DefaultResolver()
        self._trusted = frozenset(trusted)
        #: hosts refused for resolving only to non-public addresses, with what they
        #: resolved to (aiohttp reports a resolver's error without its message)
        self.refused: dict[str, str] = {}

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        if host.lower().strip("[]") in self._trusted:
            return found
        public = [r for r in found if ipaddress.ip_address(r["host"]).is_global]
        if not public:
            why = (f"{host} {NOT_PUBLIC} (it resolves to "
                   f"{', '.join(sorted({r['host'] for r in found}))})")
            self.refused[host.lower()] = why
            raise OSError(why)
        return public

    async def close(self) -> None:
        await self._inner.close()

    def __repr__(self) -> str:  # pragma: no cover - for logs
        return f"GuardedResolver(trusted={sorted(self._trusted)})"


__all__ = ["NOT_PUBLIC", "GuardedResolver", "host_listed", "jku_allowed", "literal_hosts",
           "trusted_hosts"]
