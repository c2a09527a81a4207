"""``reporters.prober``: ``bureau-reporter probe``, a prober that needs no probe library
(docs/probing.md). It sends agents tasks from :mod:`reporters.probing` as ordinary calls
(A2A ``message/send``, or plain HTTP by a request template), checks the answers and
reports ``probe`` entries, with the fact of each call, through a durable spool.

``Prober`` (and ``Pace``, when it asks) is imported when first used (PEP 562):
``bureau-reporter`` imports this package to list its subcommands, and must do so without
the ``proxy`` extra."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reporters.prober.config import ProbeConfig, Request, Response, Route, from_mapping

if TYPE_CHECKING:
    from reporters.prober.runner import Pace, Prober


def __getattr__(name: str) -> Any:
    if name not in ("Pace", "Prober"):
        raise AttributeError(f"module 'reporters.prober' has no attribute {name!r}")
    from reporters.prober import runner

    return getattr(runner, name)


__all__ = ["Pace", "ProbeConfig", "Prober", "Request", "Response", "Route", "from_mapping"]
