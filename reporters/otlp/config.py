"""The OTLP receiver's configuration, in the proxy's style (reporters/proxy/config.py):
frozen values from a JSON or TOML file and/or flags. docs/proxy.md has the reference::

    bureau_url = "http://127.0.0.1:8080"
    key_file = "gateway.key"          # the reporter's key (role "facts")
    spool_dir = "./otlp-spool"
    listen = "127.0.0.1:4318"         # OTLP/HTTP's port
    ops_listen = "127.0.0.1:9467"     # /healthz, /readyz, /metrics; "off" for none
    drain_seconds = 10
    keep_delivered_days = 0
    max_body = 16777216               # bytes of a request, inflated
    header_seconds = 10               # a request's head must be in within this
    body_seconds = 60                 # ... and its body within this (else 408)
    decode_queue = 4                  # large requests waiting to be decoded (else 503)

    [limits]                          # what one request may decode to (docs/proxy.md)
    max_spans = 50000
    max_attributes = 500000

    [agent_ids]                       # gen_ai.agent.id -> the agent's key id
    "asst_5j66UpCpwteGg4YSxUnt7lPY" = "ed25519:…"
    [agent_names]                     # gen_ai.agent.name -> key id
    "Math Tutor" = "ed25519:…"
    [server_addresses]                # server.address (or net.peer.name) -> key id
    "alpha.agents.internal" = "ed25519:…"

    [agents."ed25519:…"]              # optional latency promises, as for the proxy
    promises = [{promise = "p95-under-2s", max_ms = 2000}]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reporters.daemon.config import (
    ConfigError,
    key_id_field,
    parse_listen,
    promise_bounds,
    reporter_basics,
)
from reporters.otlp.bounds import Limits
from reporters.otlp.mapping import AGENT_ID, AGENT_NAME, SERVER_ADDRESS, Subjects

#: config table -> the span attribute its keys are values of
TABLES = {"agent_ids": AGENT_ID, "agent_names": AGENT_NAME,
          "server_addresses": SERVER_ADDRESS}


@dataclass(frozen=True)
class OtlpConfig:
    bureau_url: str
    key_file: Path
    spool_dir: Path
    subjects: Subjects
    #: agent key id -> {promise id: max_ms}
    promises: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 4318
    ops_host: str = "127.0.0.1"
    ops_port: int | None = 9467
    drain_seconds: float = 10.0
    keep_delivered_days: float = 0.0
    max_body: int = 16 * 1024 * 1024
    #: what one request may decode to (reporters.otlp.bounds)
    limits: Limits = field(default_factory=Limits)
    header_seconds: float = 10.0
    body_seconds: float = 60.0
    #: large requests that may wait for the decoding thread; one more is answered 503
    decode_queue: int = 4

    def __post_init__(self) -> None:
        if not any(self.subjects.tables.values()):
            raise ConfigError("agent_ids, agent_names, server_addresses: at least one "
                              "agent is needed (which spans should become facts?)")
        if not self.drain_seconds >= 0:
            raise ConfigError("drain_seconds must not be negative")
        if not self.keep_delivered_days >= 0:
            raise ConfigError("keep_delivered_days must not be negative")
        if self.max_body < 1024:
            raise ConfigError("max_body: at least 1024 bytes")
        if not (self.header_seconds > 0 and self.body_seconds > 0):
            raise ConfigError("header_seconds, body_seconds: more than 0")
        if self.decode_queue < 0:
            raise ConfigError("decode_queue must not be negative")


def _table(raw: Any, name: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{name}: a table of attribute value -> key id is needed")
    return {str(value): key_id_field(kid, f"{name}.{value}") for value, kid in raw.items()}


def from_mapping(raw: Mapping[str, Any], base: Path = Path(".")) -> OtlpConfig:
    """An :class:`OtlpConfig` from a parsed file (``base``: its directory)."""
    unknown = set(raw) - {"bureau_url", "key_file", "spool_dir", "listen", "ops_listen",
                          "drain_seconds", "keep_delivered_days", "max_body", "agents",
                          "header_seconds", "body_seconds", "decode_queue", "limits",
                          *TABLES}
    if unknown:
        raise ConfigError(f"unknown field(s) {sorted(unknown)}")
    ops_host, ops_port = reporter_basics(raw, "127.0.0.1:9467")
    host, port = parse_listen(str(raw.get("listen", "127.0.0.1:4318")))
    return OtlpConfig(
        bureau_url=raw["bureau_url"].rstrip("/"),
        key_file=base / raw["key_file"],
        spool_dir=base / raw["spool_dir"],
        subjects=Subjects({attr: _table(raw.get(name), name) for name, attr in TABLES.items()}),
        promises=promise_bounds(raw.get("agents", {})),
        host=host, port=port, ops_host=ops_host, ops_port=ops_port,
        drain_seconds=float(raw.get("drain_seconds", 10.0)),
        keep_delivered_days=float(raw.get("keep_delivered_days", 0.0)),
        max_body=int(raw.get("max_body", 16 * 1024 * 1024)),
        limits=_limits(raw.get("limits", {})),
        header_seconds=float(raw.get("header_seconds", 10.0)),
        body_seconds=float(raw.get("body_seconds", 60.0)),
        decode_queue=int(raw.get("decode_queue", 4)),
    )


def _limits(raw: Any) -> Limits:
    """The ``[limits]`` table: any of :class:`Limits`'s fields, whole numbers ≥ 1."""
    if not isinstance(raw, Mapping):
        raise ConfigError("limits: a table of bound -> number")
    unknown = set(raw) - set(Limits.names())
    if unknown:
        raise ConfigError(f"limits: unknown field(s) {sorted(unknown)}; the bounds are "
                          f"{', '.join(Limits.names())}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in raw.values()):
        raise ConfigError("limits: whole numbers")
    try:
        return Limits(**raw)
    except ValueError as exc:
        raise ConfigError(f"limits.{exc}") from None
