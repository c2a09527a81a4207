"""The LiteLLM plugin's own configuration (docs/litellm.md, "Configuration"): a TOML or
JSON file named by ``BUREAU_LITELLM_CONFIG``, read once per worker process."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reporters.wire import WireError, public_key_from_key_id

CONFIG_ENV = "BUREAU_LITELLM_CONFIG"

#: What LiteLLM's proxy logs as ``user_api_key_hash`` for its master key: one fixed
#: string for whoever holds the master key, so it names no caller.
MASTER_KEY_HASH = "litellm_proxy_master_key"
#: A virtual key's ``user_api_key_hash``: the SHA-256 of the ``sk-…`` key, in hex.
_KEY_HASH = re.compile(r"[0-9a-f]{64}")

_FIELDS = frozenset({"bureau_url", "key_file", "spool_dir", "deployments", "callers",
                     "settle_seconds", "max_spooled"})


class LiteLLMConfigError(ValueError):
    """The plugin's configuration cannot be used; the message names the field."""


@dataclass(frozen=True)
class LiteLLMConfig:
    bureau_url: str
    key_file: Path
    #: each worker process spools in a directory of its own under it (``worker-N``)
    spool_dir: Path
    #: deployment id, model group or model -> subject key id
    deployments: Mapping[str, str]
    #: virtual key hash (SHA-256 of the ``sk-…`` key, hex) -> caller key id
    callers: Mapping[str, str] = field(default_factory=dict)
    settle_seconds: float = 30.0
    #: facts a worker keeps on disk (spooled and held) before it drops new ones
    max_spooled: int = 100_000


def _key_ids(raw: Any, name: str) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise LiteLLMConfigError(f"{name}: a table of name -> key id is needed")
    out = {}
    for value, kid in raw.items():
        try:
            public_key_from_key_id(str(kid))
        except WireError as exc:
            raise LiteLLMConfigError(f"{name}.{value}: {exc.detail}") from None
        out[str(value)] = str(kid)
    return out


def _callers(raw: Any) -> dict[str, str]:
    callers = _key_ids(raw, "callers")
    for name in callers:
        if name == MASTER_KEY_HASH:
            raise LiteLLMConfigError(
                f"callers.{name}: LiteLLM logs this for its master key, whoever holds it; "
                "give the caller a virtual key and map that key's hash")
        if not _KEY_HASH.fullmatch(name):
            raise LiteLLMConfigError(
                f"callers.{name}: a virtual key's hash is needed (user_api_key_hash: the "
                "SHA-256 of the sk-... key, 64 lowercase hex digits), not the key itself")
    return callers


def config_from_mapping(raw: Mapping[str, Any], base: Path = Path(".")) -> LiteLLMConfig:
    unknown = set(raw) - _FIELDS
    if unknown:
        raise LiteLLMConfigError(f"unknown field(s) {sorted(unknown)}")
    for name in ("bureau_url", "key_file", "spool_dir"):
        if not isinstance(raw.get(name), str):
            raise LiteLLMConfigError(f"{name}: required")
    deployments = _key_ids(raw.get("deployments", {}), "deployments")
    if not deployments:
        raise LiteLLMConfigError("deployments: at least one deployment is needed")
    settle = float(raw.get("settle_seconds", 30.0))
    if not settle > 0:
        raise LiteLLMConfigError("settle_seconds must be positive")
    max_spooled = raw.get("max_spooled", 100_000)
    if not isinstance(max_spooled, int) or isinstance(max_spooled, bool) or max_spooled < 1:
        raise LiteLLMConfigError("max_spooled must be a whole number of facts, at least 1")
    return LiteLLMConfig(raw["bureau_url"].rstrip("/"), base / raw["key_file"],
                         base / raw["spool_dir"], deployments, _callers(raw.get("callers", {})),
                         settle, max_spooled)


def read_config(path: Path) -> LiteLLMConfig:
    text = path.read_text()
    doc = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    return config_from_mapping(doc, path.parent)


__all__ = ["CONFIG_ENV", "MASTER_KEY_HASH", "LiteLLMConfig", "LiteLLMConfigError",
           "config_from_mapping", "read_config"]
