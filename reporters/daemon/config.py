"""What every daemon's configuration reads the same way — the proxy's, the OTLP
receiver's and the prober's: a JSON or TOML file, flags laid over it, the fields every
reporter needs (``bureau_url``, ``key_file``, ``spool_dir``, ``ops_listen``), listen
addresses, key ids and latency promises, each refused with a :class:`ConfigError` that
names the field."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reporters.wire import WireError, public_key_from_key_id

_PROMISE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the field."""


def key_id_field(value: Any, where: str) -> str:
    """``value`` when it is a valid key id, else a :class:`ConfigError` naming ``where``."""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: a key id (ed25519:…) is needed")
    try:
        public_key_from_key_id(value)
    except WireError as exc:
        raise ConfigError(f"{where}: {exc.detail}") from None
    return value


def promise_bounds(raw: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """An ``[agents]`` table (agent key id -> ``promises = [{promise, max_ms}]``) as
    agent -> {promise id: max_ms}: the proxy's, and the OTLP receiver's."""
    out: dict[str, dict[str, int]] = {}
    for agent, spec in raw.items():
        kid = key_id_field(agent, f"agents.{agent}")
        bounds: dict[str, int] = {}
        for j, p in enumerate(spec.get("promises", [])):
            pid, max_ms = p.get("promise"), p.get("max_ms")
            if not isinstance(pid, str) or not _PROMISE_RE.fullmatch(pid) or \
                    not isinstance(max_ms, int) or max_ms < 0:
                raise ConfigError(f"agents.{agent}.promises[{j}]: "
                                  "{promise: id, max_ms: whole milliseconds} is needed")
            bounds[pid] = max_ms
        out[kid] = bounds
    return out


def reporter_basics(raw: Mapping[str, Any], ops_default: str) -> tuple[str, int | None]:
    """What every reporter's config file needs, checked the same way for the proxy, the
    OTLP receiver and the prober: ``bureau_url``, ``key_file`` and ``spool_dir`` given as
    strings; and its operator listener (``ops_listen``, ``"off"`` for none) as
    (host, port or None)."""
    for name in ("bureau_url", "key_file", "spool_dir"):
        if not isinstance(raw.get(name), str):
            raise ConfigError(f"{name}: required")
    ops = str(raw.get("ops_listen", ops_default))
    return ("", None) if ops == "off" else parse_listen(ops, "ops_listen")


def overlay_flags(raw: dict[str, Any], args: Any, names: Mapping[str, str]) -> dict[str, Any]:
    """``raw`` (a config file) with each flag that was given laid over its field
    (``names``: flag attribute -> field)."""
    for flag, name in names.items():
        value = getattr(args, flag)
        if value is not None:
            raw[name] = value
    return raw


def read_file(path: Path) -> dict[str, Any]:
    """A config file as a mapping: TOML when it ends in ``.toml``, else JSON."""
    text = path.read_text()
    doc = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: a table/object is needed at the top")
    return doc


def parse_listen(text: str, field: str = "listen") -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"{field}: HOST:PORT is needed, not {text!r}")
    return host, int(port)
