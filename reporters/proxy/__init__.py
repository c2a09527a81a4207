"""``reporters.proxy``: a zero-effort reporting proxy for gateways (docs/proxy.md).

Put it in front of agents' HTTP endpoints; it forwards every call unchanged and
reports one fact per call through a :class:`reporters.Reporter`. Run it with
``bureau-reporter proxy``, or embed it::

    proxy = Proxy(config, reporters.load_key("gateway.key"), checks={"/alpha": my_check})
    web.run_app(proxy.app(), host=config.host, port=config.port)

The names below are imported when first used (PEP 562): ``bureau-reporter`` lives in
this package (``reporters.proxy.cli``), and its ``keygen`` and ``keyid`` must run with
the client alone, without the ``proxy`` extra the proxy itself needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reporters.daemon.config import ConfigError, read_file
    from reporters.protocols.answers import Claim
    from reporters.proxy.app import INTERACTION_HEADER, PROXY, REPORTER_HEADER, Proxy, create_app
    from reporters.proxy.config import ProxyConfig, Route, from_mapping
    from reporters.proxy.measure import DeliverableCheck, Exchange
    from reporters.proxy.tracker import Call, DerivedOutcomes, Settled

#: name -> the module that defines it
_WHERE = {
    **dict.fromkeys(("INTERACTION_HEADER", "PROXY", "REPORTER_HEADER", "Proxy", "create_app"),
                    "reporters.proxy.app"),
    **dict.fromkeys(("ProxyConfig", "Route", "from_mapping"), "reporters.proxy.config"),
    **dict.fromkeys(("ConfigError", "read_file"), "reporters.daemon.config"),
    "Claim": "reporters.protocols.answers",
    **dict.fromkeys(("DeliverableCheck", "Exchange"), "reporters.proxy.measure"),
    **dict.fromkeys(("Call", "DerivedOutcomes", "Settled"), "reporters.proxy.tracker"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'reporters.proxy' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)


__all__ = [
    "INTERACTION_HEADER",
    "PROXY",
    "REPORTER_HEADER",
    "Call",
    "Claim",
    "ConfigError",
    "DeliverableCheck",
    "DerivedOutcomes",
    "Exchange",
    "Proxy",
    "ProxyConfig",
    "Route",
    "Settled",
    "create_app",
    "from_mapping",
    "read_file",
]
