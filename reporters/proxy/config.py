"""The proxy's configuration: frozen values, read from a JSON or TOML file and/or flags.

The file (docs/proxy.md has the full reference)::

    bureau_url = "http://127.0.0.1:8080"
    key_file = "gateway.key"          # the reporter's key (role "facts")
    spool_dir = "./spool"
    proxy_id = "gw-eu-1"              # optional; interaction ids are "<proxy_id>:<n>"
    listen = "127.0.0.1:8081"
    ops_listen = "127.0.0.1:9465"     # /healthz, /readyz, /metrics; "off" for none
    drain_seconds = 10                # at a stop: for calls in flight, then for delivery
    keep_delivered_days = 0           # keep delivered facts, to re-send after a restore
    settle_seconds = 30               # the retry/switch window
    quiet_seconds = 300               # silence after a failure that means ABANDONED

    [agents."ed25519:…"]
    promises = [{promise = "p95-under-2s", max_ms = 2000}]

    [[routes]]
    prefix = "/alpha"
    agent = "ed25519:…"
    upstream = "http://127.0.0.1:9001"
    timeout_seconds = 30
    schema_file = "alpha.response.schema.json"   # or an inline `schema` table
    claim = {pointer = "/status", values = {ok = "SUCCESS", declined = "DECLINED"}}
    check = "mygateway.checks:alpha"             # module:function, a DeliverableCheck
    protocol = "auto"                 # or "http", "a2a", "mcp" (docs/proxy.md, "Protocols")
    card_path = "/.well-known/agent-card.json"   # a2a routes: the agent card
    card_keys_file = "alpha.jwks.json"           # a2a routes: keys for a signed card
    card_jku_hosts = ["keys.example.com"]        # a2a routes: where a card's jku may point

Relative paths in a file are relative to the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reporters._internal import extras
from reporters.daemon.config import (
    ConfigError,
    key_id_field,
    parse_listen,
    promise_bounds,
    reporter_basics,
)
from reporters.protocols.answers import CLAIMS, Claim

_PREFIX_RE = re.compile(r"^(/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$")
_PROXY_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
PROTOCOLS = ("auto", "http", "a2a", "mcp")
#: a host name or address literal, with an optional port: ``keys.example.com:8443``
_JKU_HOST_RE = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]{1,253})(:[0-9]{1,5})?")

#: Paths the proxy answers itself, on its own port as well as on the ops listener:
#: never forwarded, so no route may cover them.
RESERVED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def extra_installed(protocol: str) -> bool:
    """Whether the extra that reads ``protocol`` (``a2a``, ``mcp``) is installed."""
    return extras.installed(protocol)


def install_hint(protocol: str) -> str:
    """What to install to read ``protocol`` on the proxy's routes."""
    return extras.install_hint("proxy", protocol)


@dataclass(frozen=True)
class Route:
    prefix: str  # "/alpha": matches "/alpha" and "/alpha/…", never "/alphabet"
    agent: str  # the key id of the agent behind it: the facts' subject
    upstream: str  # base URL; the path below the prefix is appended to it
    timeout_seconds: float = 30.0
    schema: Mapping[str, Any] | None = None
    claim: Claim | None = None
    check: str | None = None  # "module:function", resolved when the app starts
    #: how calls are read: "auto" (a JSON-RPC POST of an A2A or MCP method is read as
    #: that protocol), "http" (never), "a2a" or "mcp" (that protocol only)
    protocol: str = "auto"
    card_path: str = "/.well-known/agent-card.json"
    card_keys_file: Path | None = None
    #: hosts (``host`` or ``host:port``) a signed card's ``jku`` may name besides the
    #: upstream's own (reporters.proxy.jku)
    card_jku_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProxyConfig:
    bureau_url: str
    key_file: Path
    spool_dir: Path
    routes: tuple[Route, ...]
    #: agent key id -> {promise id: max_ms}
    promises: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    proxy_id: str | None = None
    host: str = "127.0.0.1"
    port: int = 8081
    #: the ops listener (/healthz, /readyz, /metrics); ``ops_port`` None: no listener
    ops_host: str = "127.0.0.1"
    ops_port: int | None = 9465
    #: at a stop: how long calls in flight may take to finish, then how long the spool
    #: is delivered for; what is left stays on disk for the next start
    drain_seconds: float = 10.0
    #: keep delivered facts in the spool this long, for ``bureau-reporter resend``
    keep_delivered_days: float = 0.0
    settle_seconds: float = 30.0
    quiet_seconds: float = 300.0
    #: largest request or response body forwarded, in bytes
    max_body: int = 16 * 1024 * 1024
    #: how often an a2a route's agent card is read again
    card_refresh_seconds: float = 300.0
    #: largest agent card (or JWKS) read, in bytes
    max_card_bytes: int = 1024 * 1024
    #: a request's head must be in within this many seconds, its body within this many
    #: more (reporters.daemon.deadlines)
    header_seconds: float = 10.0
    body_seconds: float = 60.0

    def __post_init__(self) -> None:
        if not self.routes:
            raise ConfigError("routes: at least one route is needed")
        prefixes = [r.prefix for r in self.routes]
        if len(set(prefixes)) != len(prefixes):
            raise ConfigError("routes: a prefix appears twice")
        if not 0 < self.settle_seconds <= self.quiet_seconds:
            raise ConfigError("settle_seconds must be positive and at most quiet_seconds")
        if self.proxy_id is not None and not _PROXY_ID_RE.fullmatch(self.proxy_id):
            raise ConfigError("proxy_id: letters, digits, '.', '_', '-'; at most 64")
        if not self.drain_seconds >= 0:
            raise ConfigError("drain_seconds must not be negative")
        if not self.card_refresh_seconds > 0:
            raise ConfigError("card_refresh_seconds must be positive")
        if not self.keep_delivered_days >= 0:
            raise ConfigError("keep_delivered_days must not be negative")
        if self.max_card_bytes < 1024:
            raise ConfigError("max_card_bytes: at least 1024")
        if not (self.header_seconds > 0 and self.body_seconds > 0):
            raise ConfigError("header_seconds, body_seconds: more than 0")
        for route in self.routes:
            if route.prefix in RESERVED_PATHS:
                raise ConfigError(f"routes: {route.prefix} is the proxy's own; choose "
                                  "another prefix")

    def route_for(self, path: str) -> Route | None:
        """The route with the longest prefix matching ``path`` on a segment boundary."""
        best: Route | None = None
        for route in self.routes:
            if (path == route.prefix or path.startswith(route.prefix + "/")) and (
                    best is None or len(route.prefix) > len(best.prefix)):
                best = route
        return best


def _route(raw: Mapping[str, Any], base: Path, i: int) -> Route:
    where = f"routes[{i}]"
    unknown = set(raw) - {"prefix", "agent", "upstream", "timeout_seconds", "schema",
                          "schema_file", "claim", "check", "protocol", "card_path",
                          "card_keys_file", "card_jku_hosts"}
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {sorted(unknown)}")
    prefix = str(raw.get("prefix", "")).rstrip("/")
    if not _PREFIX_RE.fullmatch(prefix):
        raise ConfigError(f"{where}.prefix: a path like /alpha is needed")
    upstream = str(raw.get("upstream", "")).rstrip("/")
    if not upstream.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.upstream: an http(s) base URL is needed")
    schema = raw.get("schema")
    if "schema_file" in raw:
        schema = json.loads((base / str(raw["schema_file"])).read_text())
    if schema is not None and not isinstance(schema, dict):
        raise ConfigError(f"{where}.schema: a JSON Schema object is needed")
    claim = None
    if raw.get("claim") is not None:
        c = raw["claim"]
        values = dict(c.get("values", {}))
        if not isinstance(c.get("pointer"), str) or not all(v in CLAIMS for v in values.values()):
            raise ConfigError(f"{where}.claim: pointer and values -> SUCCESS|FAILURE|DECLINED")
        claim = Claim(c["pointer"], values)
    check = raw.get("check")
    if check is not None and (not isinstance(check, str) or ":" not in check):
        raise ConfigError(f"{where}.check: module:function is needed")
    protocol = raw.get("protocol", "auto")
    if protocol not in PROTOCOLS:
        raise ConfigError(f"{where}.protocol: one of {', '.join(PROTOCOLS)}")
    if protocol in ("a2a", "mcp") and not extra_installed(protocol):
        raise ConfigError(f"{where}.protocol: an {protocol} route needs the {protocol} "
                          f"extra: {install_hint(protocol)}")
    card_path = raw.get("card_path", "/.well-known/agent-card.json")
    if not isinstance(card_path, str) or not card_path.startswith("/"):
        raise ConfigError(f"{where}.card_path: a path like /.well-known/agent-card.json")
    keys = raw.get("card_keys_file")
    if keys is not None and not isinstance(keys, str):
        raise ConfigError(f"{where}.card_keys_file: a JWKS file's path")
    jku_hosts = raw.get("card_jku_hosts", [])
    if not isinstance(jku_hosts, list) or not all(
            isinstance(h, str) and _JKU_HOST_RE.fullmatch(h) for h in jku_hosts):
        raise ConfigError(f"{where}.card_jku_hosts: a list of host or host:port")
    return Route(prefix, key_id_field(raw.get("agent"), f"{where}.agent"), upstream,
                 float(raw.get("timeout_seconds", 30.0)), schema, claim, check, protocol,
                 card_path, None if keys is None else base / keys, tuple(jku_hosts))


def from_mapping(raw: Mapping[str, Any], base: Path = Path(".")) -> ProxyConfig:
    """A :class:`ProxyConfig` from a parsed file (``base``: its directory)."""
    unknown = set(raw) - {"bureau_url", "key_file", "spool_dir", "proxy_id", "listen",
                          "ops_listen", "drain_seconds", "keep_delivered_days",
                          "settle_seconds", "quiet_seconds",
                          "max_body", "agents", "routes", "card_refresh_seconds",
                          "max_card_bytes", "header_seconds", "body_seconds"}
    if unknown:
        raise ConfigError(f"unknown field(s) {sorted(unknown)}")
    ops_host, ops_port = reporter_basics(raw, "127.0.0.1:9465")
    host, port = parse_listen(str(raw.get("listen", "127.0.0.1:8081")))
    return ProxyConfig(
        bureau_url=raw["bureau_url"].rstrip("/"),
        key_file=base / raw["key_file"],
        spool_dir=base / raw["spool_dir"],
        routes=tuple(_route(r, base, i) for i, r in enumerate(raw.get("routes", []))),
        promises=promise_bounds(raw.get("agents", {})),
        proxy_id=raw.get("proxy_id"),
        host=host, port=port, ops_host=ops_host, ops_port=ops_port,
        drain_seconds=float(raw.get("drain_seconds", 10.0)),
        keep_delivered_days=float(raw.get("keep_delivered_days", 0.0)),
        settle_seconds=float(raw.get("settle_seconds", 30.0)),
        quiet_seconds=float(raw.get("quiet_seconds", 300.0)),
        max_body=int(raw.get("max_body", 16 * 1024 * 1024)),
        card_refresh_seconds=float(raw.get("card_refresh_seconds", 300.0)),
        max_card_bytes=int(raw.get("max_card_bytes", 1024 * 1024)),
        header_seconds=float(raw.get("header_seconds", 10.0)),
        body_seconds=float(raw.get("body_seconds", 60.0)),
    )
