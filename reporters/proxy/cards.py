"""A2A agent cards as declared promises: read at start and again every
``card_refresh_seconds``, signatures checked when there are any.

For each route with ``protocol = "a2a"`` the proxy reads ``upstream + card_path``
(default ``/.well-known/agent-card.json``) with a2a-sdk's card parser. A card with
``signatures`` is used only if one verifies (a2a-sdk's ``a2a.utils.signing``, PyJWT)
with a key from the route's ``card_keys_file`` (a JWKS) or, without one, from the JWKS
at the signature's own ``jku``. A card that cannot be read, parsed or verified leaves
the route working: its facts then carry no card promises, and
``bureau_proxy_agent_card_failures_total`` and a log line say why. A card that changed
is logged.

Bounds (issue 35): a card and a JWKS are read up to ``max_card_bytes`` (a larger one is
refused as it arrives: ``too_large``) within the route's ``timeout_seconds``, and only
the card's digest is kept between reads, never its bytes. A ``jku`` is the card's word,
so the proxy follows it only to a host the operator configured — the route's own
upstream (host and port), or one listed in the route's ``card_jku_hosts`` — and never
to a loopback, private, link-local or otherwise non-public address unless that host is
the route's upstream or is listed as an address literal: the check is made on the
addresses the connection is opened to (:class:`GuardedResolver`), so a name that
resolves elsewhere later cannot slip through. A refused ``jku`` is counted as
``bureau_proxy_limits_total{limit="jku_host"}``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp

from reporters._internal.capped import TooLarge, read_capped
from reporters.interop import card_key_mismatch
from reporters.protocols.answers import parse_strict
from reporters.proxy.config import Route
from reporters.proxy.jku import GuardedResolver, jku_allowed, trusted_hosts
from reporters.proxy.metrics import ProxyMetrics

if TYPE_CHECKING:
    from reporters.protocols import a2a

log = logging.getLogger("reporters.proxy")

#: Algorithms a card signature may use (never "none" or an HMAC: a card is public).
ALGORITHMS = ["ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384",
              "PS512", "EdDSA"]


class CardError(Exception):
    """Why a card is not used: ``reason`` is the metric's label."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class AgentCards:
    def __init__(self, routes: tuple[Route, ...], metrics: ProxyMetrics,
                 refresh_seconds: float, max_card_bytes: int = 1024 * 1024) -> None:
        self._routes = [r for r in routes if r.protocol == "a2a"]
        self._metrics = metrics
        self._refresh = refresh_seconds
        self._max = max_card_bytes
        self._declared: dict[str, a2a.Declared] = {}
        #: the digest of the card in use, per route: only to tell that it changed
        self._digest: dict[str, bytes] = {}
        self._task: asyncio.Task[None] | None = None
        self._jku_session: aiohttp.ClientSession | None = None
        self._jku_resolver: GuardedResolver | None = None

    def declared(self, prefix: str) -> a2a.Declared | None:
        return self._declared.get(prefix)

    async def start(self, session: aiohttp.ClientSession) -> None:
        """Read every card once (the route works whatever comes of it), then keep
        reading them in the background."""
        await asyncio.gather(*(self.read(session, r) for r in self._routes))
        if self._routes:
            self._task = asyncio.create_task(self._loop(session), name="proxy-cards")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._jku_session is not None:
            await self._jku_session.close()

    async def _loop(self, session: aiohttp.ClientSession) -> None:
        while True:
            await asyncio.sleep(self._refresh)
            await asyncio.gather(*(self.read(session, r) for r in self._routes))

    async def read(self, session: aiohttp.ClientSession, route: Route) -> None:
        try:
            raw = await self._fetch(session, route.upstream + route.card_path,
                                    route.timeout_seconds)
            digest = hashlib.sha256(raw).digest()
            if digest == self._digest.get(route.prefix):
                return
            card = await self._verified(session, route, raw)
        except CardError as exc:
            self._metrics.card_failures.labels(route.prefix, exc.reason).inc()
            if exc.reason == "too_large":
                self._metrics.limits.labels("card_size").inc()
            log.warning("agent card of route %s not used (%s): %s; the route works, its "
                        "facts carry no card promises", route.prefix, exc.reason, exc)
            self._declared.pop(route.prefix, None)
            self._digest.pop(route.prefix, None)
            return
        from reporters.protocols import a2a  # only for a2a routes: the a2a extra

        if route.prefix in self._digest:
            log.info("agent card of route %s changed; its promises are now the new card's",
                     route.prefix)
        self._digest[route.prefix] = digest
        self._declared[route.prefix] = a2a.declared(card)

    async def _fetch(self, session: aiohttp.ClientSession, url: str, timeout: float) -> bytes:
        """``url``'s body: at most ``max_card_bytes``, the whole read within ``timeout``."""
        try:
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=timeout),
                                   allow_redirects=False) as resp:
                if resp.status != 200:
                    raise CardError("status", f"{url} answered {resp.status}")
                return await read_capped(resp, self._max)
        except TooLarge as exc:
            raise CardError("too_large", f"{url}: {exc} (max_card_bytes)") from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise CardError("unreachable", f"{url}: {type(exc).__name__}: {exc}") from None

    async def _verified(self, session: aiohttp.ClientSession, route: Route,
                        raw: bytes) -> Any:
        from reporters.protocols import a2a

        ok, doc = parse_strict(raw)
        if not ok:
            raise CardError("invalid", "not strict JSON")
        # A card whose bureau extension names another agent claims a key other than the
        # one this route reports under (docs/interop.md): its promises are not this agent's.
        other = card_key_mismatch(doc, route.agent)
        if other is not None:
            raise CardError("other_agent", other)
        try:
            card = a2a.parse_card(doc)
        except ValueError as exc:
            raise CardError("invalid", str(exc)) from None
        if not card.signatures:
            return card
        from a2a.utils.signing import SignatureVerificationError, create_signature_verifier
        from jwt import PyJWK

        keys = await self._keys(session, route, card)
        if not keys:
            raise CardError("bad_signature", "signed, but no key to check it with "
                            "(card_keys_file, or a jku)")

        def key_for(kid: str | None, jku: str | None) -> PyJWK:
            for key in keys:
                if kid is None or key.key_id == kid:
                    found: PyJWK = key
                    return found
            raise CardError("bad_signature", f"no key {kid!r}")

        try:
            create_signature_verifier(key_for, ALGORITHMS)(card)
        except (SignatureVerificationError, CardError) as exc:
            raise CardError("bad_signature", str(exc)) from None
        return card

    async def _keys(self, session: aiohttp.ClientSession, route: Route, card: Any) -> list[Any]:
        texts: list[bytes] = []
        if route.card_keys_file is not None:
            texts.append(Path(route.card_keys_file).read_bytes())
        else:
            for jku in _jkus(card):
                why = jku_allowed(jku, route)
                if why is not None:
                    self._refused_jku(route, jku, why)
                    continue
                session = self._jkus_session(route)
                try:
                    texts.append(await self._fetch(session, jku, route.timeout_seconds))
                except CardError:
                    assert self._jku_resolver is not None
                    why = self._jku_resolver.refused.pop(_host(jku), None)
                    if why is not None:
                        self._refused_jku(route, jku, why)
        return [key for text in texts for key in jwks_keys(text)]

    def _refused_jku(self, route: Route, jku: str, why: str) -> None:
        self._metrics.limits.labels("jku_host").inc()
        log.warning("agent card of route %s: its jku %s is not followed: %s (card_jku_hosts)",
                    route.prefix, jku[:200], why)

    def _jkus_session(self, route: Route) -> aiohttp.ClientSession:
        """The session for ``jku`` fetches: its resolver refuses non-public addresses
        for every host but the configured ones (a session of its own, so the proxy's
        forwarding is never filtered)."""
        if self._jku_session is None:
            self._jku_resolver = GuardedResolver(trusted_hosts(self._routes))
            self._jku_session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(resolver=self._jku_resolver, limit=8,
                                               use_dns_cache=False),
                cookie_jar=aiohttp.DummyCookieJar())
        return self._jku_session


def jwks_keys(text: bytes) -> list[Any]:
    """The keys of a JWKS (at most ``max_card_bytes``, from the card's jku or the
    operator's file); none when it is not one. Parsed strictly first — nesting bounded,
    an object at the top — because PyJWKSet.from_json let a JWKS 50,000 arrays deep
    (RecursionError) or one that is not an object (AttributeError) out of the card
    reader: the agent's own upstream could stop the proxy from starting."""
    from jwt import PyJWKSet
    from jwt.exceptions import PyJWKSetError

    ok, doc = parse_strict(text)
    if not ok or not isinstance(doc, dict):
        return []
    try:
        return list(PyJWKSet.from_dict(doc).keys)
    except PyJWKSetError:
        return []


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _jkus(card: Any) -> list[str]:
    out = []
    for sig in card.signatures:
        try:
            header = json.loads(base64.urlsafe_b64decode(sig.protected + "=" * (
                -len(sig.protected) % 4)))
        except ValueError:
            continue
        if isinstance(header, dict) and isinstance(header.get("jku"), str) and \
                header["jku"].startswith("https://"):
            out.append(header["jku"])
    return out


__all__ = ["AgentCards", "CardError", "jwks_keys"]
