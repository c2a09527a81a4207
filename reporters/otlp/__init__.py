"""``reporters.otlp``: an OTLP/HTTP trace receiver that turns agent-invocation spans into
facts (docs/proxy.md, "The OTLP receiver"). Run it with ``bureau-reporter otlp``; it
needs the ``otlp`` extra (``opentelemetry-proto``) and the ``proxy`` one.

The names below are imported when first used (PEP 562), so importing
``reporters.otlp.cli`` — which ``bureau-reporter`` does to list its subcommands — needs
neither extra."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reporters.otlp.config import OtlpConfig, from_mapping
    from reporters.otlp.receiver import RECEIVER, TRACES_PATH, Receiver

_WHERE = {"OtlpConfig": "config", "from_mapping": "config", "RECEIVER": "receiver",
          "TRACES_PATH": "receiver", "Receiver": "receiver"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'reporters.otlp' has no attribute {name!r}")
    return getattr(importlib.import_module(f"reporters.otlp.{_WHERE[name]}"), name)


__all__ = ["RECEIVER", "TRACES_PATH", "OtlpConfig", "Receiver", "from_mapping"]
