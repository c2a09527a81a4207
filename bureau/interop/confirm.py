"""Confirming an ERC-8004 link from the other side (SPEC §9.1 r4, docs/interop.md).

An ``erc8004`` link is the agent's claim: anyone can link someone else's token. The
bureau calls a link *confirmed* once the token's registration file — the JSON its
``tokenURI`` points to, which the token's owner publishes — names the agent's key id
among its services and names the token among its registrations
(:func:`reporters.interop.registration_confirms`). The bureau talks to no chain: the
operator looks up ``tokenURI`` and runs ``bureau erc8004 confirm`` with the file's URL.

The fetch is bounded like every other outbound read (issue 35): ``https`` only, from a
host of ``BUREAU_ERC8004_HOSTS`` (``host`` or ``host:port``) and never to a loopback,
private or reserved address unless that host is listed as an address literal (checked
on the addresses the connection opens to), at most :data:`MAX_FILE` bytes, within
:data:`TIMEOUT` seconds, no redirects.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ssl
from collections.abc import Iterable
from dataclasses import dataclass

import aiohttp

from bureau.errors import BureauError, Code
from reporters import strictjson
from reporters._internal.capped import TooLarge, read_capped
from reporters.interop import registration_confirms
from reporters.proxy.jku import GuardedResolver, host_listed, literal_hosts

#: the largest registration file read, in bytes
MAX_FILE = 256 * 1024
#: the whole fetch, in seconds
TIMEOUT = 10.0


class NotConfirmed(BureauError):
    """The link could not be confirmed; ``detail`` says why, in a line (``NOT_FOUND``:
    no registration file at that place confirms it)."""

    def __init__(self, detail: str) -> None:
        super().__init__(Code.NOT_FOUND, "", detail)

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True, slots=True)
class Confirmation:
    url: str
    sha256: bytes
    at: dt.datetime


async def fetch(url: str, hosts: Iterable[str], cafile: str | None = None) -> bytes:
    """The registration file at ``url``, within the bounds of the module's docstring."""
    hosts = list(hosts)
    if not url.startswith("https://"):
        raise NotConfirmed("the registration file's URL must be https://")
    if not host_listed(url, hosts):
        raise NotConfirmed("its host is not in BUREAU_ERC8004_HOSTS")
    context = ssl.create_default_context(cafile=cafile)
    resolver = GuardedResolver(literal_hosts(hosts))
    connector = aiohttp.TCPConnector(resolver=resolver, ssl=context, use_dns_cache=False)
    try:
        async with aiohttp.ClientSession(connector=connector) as session, session.get(
                url, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=TIMEOUT)) as resp:
            if resp.status != 200:
                raise NotConfirmed(f"{url} answered {resp.status}")
            return await read_capped(resp, MAX_FILE)
    except TooLarge as exc:
        raise NotConfirmed(f"the registration file is {exc}") from None
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        if resolver.refused:
            raise NotConfirmed(f"not fetched: {next(iter(resolver.refused.values()))}"
                               ) from None
        raise NotConfirmed(f"could not read {url}: {type(exc).__name__}: {exc}") from None


def check(body: bytes, registry: str, agent_id: str, agent: str) -> None:
    """:class:`NotConfirmed` unless ``body`` confirms the link."""
    try:
        doc = strictjson.loads(body)
    except strictjson.StrictJSONError as exc:
        raise NotConfirmed(f"the registration file is not JSON: {exc}") from None
    why = registration_confirms(doc, registry, agent_id, agent)
    if why is not None:
        raise NotConfirmed(f"the registration file does not confirm the link: {why}")


async def confirm(url: str, hosts: Iterable[str], link: tuple[str, str], agent: str,
                  cafile: str | None = None) -> Confirmation:
    """Fetch and check; what to record (``link``: registry, agent id)."""
    body = await fetch(url, hosts, cafile)
    check(body, link[0], link[1], agent)
    return Confirmation(url, hashlib.sha256(body).digest(), dt.datetime.now(dt.UTC))
