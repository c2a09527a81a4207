"""The prober's configuration: frozen values, read from a JSON or TOML file and flags.

The file (docs/probing.md has the full reference and a working example)::

    bureau_url = "http://127.0.0.1:8080"
    key_file = "prober.key"           # the reporter's key (roles "probes" and "facts")
    spool_dir = "./probe-spool"
    seed_file = "probe.seed"          # secret; made in the spool directory if not given
    prober_id = "pb-eu-1"             # interaction ids are "<prober_id>:<n>"
    ops_listen = "127.0.0.1:9466"     # /healthz, /readyz, /metrics; "off" for none
    audit_log = "audit.jsonl"         # one line per probe; "off" for none
    facts = true                      # also report what was seen of each call
    batch_size = 100                  # tasks in an epoch's batch
    drain_seconds = 10

    [[routes]]
    agent = "ed25519:…"
    protocol = "http"                 # or "a2a"
    upstream = "http://127.0.0.1:9001"
    probes_per_hour = 4
    timeout_seconds = 30
    kinds = ["arithmetic", "logic"]   # default: every kind
    request = {method = "POST", path = "/solve", json = {question = "{{task}}"}}
    response = {reply = "/answer", claim = {pointer = "/status", values = {no = "DECLINED"}}}

Relative paths in a file are relative to the file.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reporters._internal import extras
from reporters.daemon.config import ConfigError, key_id_field, reporter_basics
from reporters.probing import DEFAULT_BATCH_SIZE, KINDS
from reporters.protocols.answers import CLAIMS, Claim

#: Where the task's text goes in a request template.
PLACEHOLDER = "{{task}}"
#: In a ``body`` string: the task's text as a JSON string literal, quotes included.
JSON_PLACEHOLDER = "{{task_json}}"

_PROBER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH"})
_EXTRA_HINT = "an A2A route needs the a2a extra: " + extras.install_hint("proxy", "a2a")

Protocol = Literal["http", "a2a"]


@dataclass(frozen=True)
class Request:
    """How a task is sent over plain HTTP: the template. ``{{task}}`` stands for the
    task's text wherever it appears (path, query values, body; not headers)."""

    method: str = "POST"
    path: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)
    #: a text body (``{{task_json}}`` also allowed), or ``None``
    body: str | None = None
    #: a JSON body (``{{task}}`` replaced inside its strings), or ``None``
    json: Any = None


@dataclass(frozen=True)
class Response:
    """Where the agent's reply is in its answer, and how it says it declines."""

    #: a JSON Pointer into a JSON answer; ``None``: the whole body, as text
    reply: str | None = None
    claim: Claim | None = None
    #: a regular expression: a reply it matches (``re.search``) declines the task
    decline_pattern: str | None = None


@dataclass(frozen=True)
class Route:
    agent: str  # the key id of the agent probed: the entries' subject
    upstream: str  # base URL (A2A: where its agent card is served)
    protocol: Protocol = "http"
    probes_per_hour: float = 1.0
    timeout_seconds: float = 30.0
    kinds: tuple[str, ...] = KINDS
    request: Request = field(default_factory=Request)
    response: Response = field(default_factory=Response)
    #: A2A: the agent card's path under ``upstream``
    card_path: str = "/.well-known/agent-card.json"


@dataclass(frozen=True)
class ProbeConfig:
    bureau_url: str
    key_file: Path
    spool_dir: Path
    routes: tuple[Route, ...]
    #: the secret seed's file; ``None``: ``probe.seed`` in the spool directory
    seed_file: Path | None = None
    prober_id: str | None = None
    ops_host: str = "127.0.0.1"
    ops_port: int | None = 9466
    #: one JSON line per probe; ``None``: none
    audit_log: Path | None = None
    facts: bool = True
    batch_size: int = DEFAULT_BATCH_SIZE
    #: the bureau's epoch length; ``None``: read from its ``/v1/bureau``
    epoch_seconds: int | None = None
    drain_seconds: float = 10.0

    def __post_init__(self) -> None:
        if not self.routes:
            raise ConfigError("routes: at least one route is needed")
        agents = [r.agent for r in self.routes]
        if len(set(agents)) != len(agents):
            raise ConfigError("routes: an agent appears twice (give it one route)")
        if self.prober_id is not None and not _PROBER_ID_RE.fullmatch(self.prober_id):
            raise ConfigError("prober_id: letters, digits, '.', '_', '-'; at most 64")
        if not 1 <= self.batch_size <= 10_000:
            raise ConfigError("batch_size: 1 to 10000 tasks")
        if self.epoch_seconds is not None and self.epoch_seconds < 1:
            raise ConfigError("epoch_seconds must be positive")
        if not self.drain_seconds >= 0:
            raise ConfigError("drain_seconds must not be negative")

    @property
    def seed_path(self) -> Path:
        return self.seed_file if self.seed_file is not None else self.spool_dir / "probe.seed"


def _unknown(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = set(raw) - known
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {sorted(unknown)}")


def _strings(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ConfigError(f"{where}: a table of strings is needed")
    return dict(raw)


def _mentions_task(value: Any) -> bool:
    if isinstance(value, str):
        return PLACEHOLDER in value or JSON_PLACEHOLDER in value
    if isinstance(value, Mapping):
        return any(_mentions_task(v) for v in value.values())
    if isinstance(value, list):
        return any(_mentions_task(v) for v in value)
    return False


def _request(raw: Any, where: str) -> Request:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: a table is needed")
    _unknown(raw, {"method", "path", "headers", "query", "body", "json"}, where)
    method = str(raw.get("method", "POST")).upper()
    if method not in _METHODS:
        raise ConfigError(f"{where}.method: one of {sorted(_METHODS)}")
    path = raw.get("path", "")
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise ConfigError(f"{where}.path: a path like /solve is needed")
    body, doc = raw.get("body"), raw.get("json")
    if body is not None and doc is not None:
        raise ConfigError(f"{where}: body or json, not both")
    if body is not None and not isinstance(body, str):
        raise ConfigError(f"{where}.body: a string is needed (or use json)")
    request = Request(method, path, _strings(raw.get("headers", {}), f"{where}.headers"),
                      _strings(raw.get("query", {}), f"{where}.query"), body, doc)
    if _mentions_task(dict(request.headers)):
        raise ConfigError(f"{where}.headers: a task (it may span lines) cannot go in a header")
    if not _mentions_task([request.path, dict(request.query), request.body, request.json]):
        raise ConfigError(f"{where}: {PLACEHOLDER} appears nowhere, so no task would be sent")
    return request


def _response(raw: Any, where: str) -> Response:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: a table is needed")
    _unknown(raw, {"reply", "claim", "decline_pattern"}, where)
    reply = raw.get("reply")
    if reply is not None and (not isinstance(reply, str) or (reply and reply[0] != "/")):
        raise ConfigError(f"{where}.reply: a JSON Pointer like /answer is needed")
    claim = None
    if raw.get("claim") is not None:
        c = raw["claim"]
        values = dict(c.get("values", {})) if isinstance(c, Mapping) else {}
        if not isinstance(c, Mapping) or not isinstance(c.get("pointer"), str) or \
                not all(v in CLAIMS for v in values.values()):
            raise ConfigError(f"{where}.claim: pointer and values -> SUCCESS|FAILURE|DECLINED")
        claim = Claim(c["pointer"], values)
    pattern = raw.get("decline_pattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise ConfigError(f"{where}.decline_pattern: {exc}") from None
    return Response(reply, claim, pattern)


def _a2a_available() -> bool:
    try:
        importlib.import_module("a2a.client")
    except ImportError:
        return False
    return True


def _route(raw: Mapping[str, Any], i: int) -> Route:
    where = f"routes[{i}]"
    _unknown(raw, {"agent", "protocol", "upstream", "probes_per_hour", "timeout_seconds",
                   "kinds", "request", "response", "card_path"}, where)
    protocol = raw.get("protocol", "http")
    if protocol not in ("http", "a2a"):
        raise ConfigError(f"{where}.protocol: http or a2a")
    upstream = str(raw.get("upstream", "")).rstrip("/")
    if not upstream.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.upstream: an http(s) base URL is needed")
    rate = raw.get("probes_per_hour", 1.0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not (
            0 < rate <= 360_000 and math.isfinite(rate)):
        raise ConfigError(f"{where}.probes_per_hour: a number above 0, at most 360000")
    timeout = raw.get("timeout_seconds", 30.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ConfigError(f"{where}.timeout_seconds must be positive")
    kinds = tuple(raw.get("kinds", KINDS))
    if not kinds or not set(kinds) <= set(KINDS):
        raise ConfigError(f"{where}.kinds: some of {list(KINDS)}")
    card_path = str(raw.get("card_path", "/.well-known/agent-card.json"))
    if protocol == "a2a":
        if "request" in raw or "response" in raw:
            raise ConfigError(f"{where}: request and response are for http routes; an A2A "
                              "route sends message/send and reads the task")
        if not _a2a_available():
            raise ConfigError(f"{where}: {_EXTRA_HINT}")
        request, response = Request(), Response()
    else:
        if "request" not in raw:
            raise ConfigError(f"{where}.request: an http route needs a request template")
        request = _request(raw["request"], f"{where}.request")
        response = _response(raw.get("response", {}), f"{where}.response")
    return Route(key_id_field(raw.get("agent"), f"{where}.agent"), upstream, protocol, float(rate),
                 float(timeout), tuple(k for k in KINDS if k in kinds), request, response,
                 card_path)


def _optional_path(raw: Mapping[str, Any], name: str, base: Path) -> Path | None:
    value = raw.get(name)
    if value is None or value == "off":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{name}: a path is needed")
    return base / value


def from_mapping(raw: Mapping[str, Any], base: Path = Path(".")) -> ProbeConfig:
    """A :class:`ProbeConfig` from a parsed file (``base``: its directory)."""
    _unknown(raw, {"bureau_url", "key_file", "spool_dir", "seed_file", "prober_id",
                   "ops_listen", "audit_log", "facts", "batch_size", "epoch_seconds",
                   "drain_seconds", "routes"}, "the config")
    ops_host, ops_port = reporter_basics(raw, "127.0.0.1:9466")
    facts = raw.get("facts", True)
    if not isinstance(facts, bool):
        raise ConfigError("facts: true or false")
    routes = raw.get("routes", [])
    if not isinstance(routes, list) or not all(isinstance(r, Mapping) for r in routes):
        raise ConfigError("routes: a list of tables is needed")
    spool_dir = base / raw["spool_dir"]
    epoch_seconds = raw.get("epoch_seconds")
    if epoch_seconds is not None and (isinstance(epoch_seconds, bool)
                                      or not isinstance(epoch_seconds, int)):
        raise ConfigError("epoch_seconds: whole seconds")
    batch_size = raw.get("batch_size", DEFAULT_BATCH_SIZE)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise ConfigError("batch_size: a whole number of tasks")
    return ProbeConfig(
        bureau_url=raw["bureau_url"].rstrip("/"),
        key_file=base / raw["key_file"],
        spool_dir=spool_dir,
        routes=tuple(_route(r, i) for i, r in enumerate(routes)),
        seed_file=_optional_path(raw, "seed_file", base),
        prober_id=raw.get("prober_id"),
        ops_host=ops_host, ops_port=ops_port,
        audit_log=(_optional_path(raw, "audit_log", base) if "audit_log" in raw
                   else spool_dir / "audit.jsonl"),
        facts=facts,
        batch_size=batch_size,
        epoch_seconds=epoch_seconds,
        drain_seconds=float(raw.get("drain_seconds", 10.0)),
    )

