"""``reporters.proxy``: a zero-effort reporting proxy for gateways (docs/proxy.md).

Put it in front of agents' HTTP endpoints; it forwards every call unchanged and
reports one fact per call through a :class:`reporters.Reporter`. Run it with
``bureau-reporter proxy``, or embed it::

    proxy = Proxy(config, reporters.load_key("gateway.key"), checks={"/alpha": my_check})
    web.run_app(proxy.app(), host=config.host, port=config.port)
"""

from reporters.proxy.app import INTERACTION_HEADER, PROXY, REPORTER_HEADER, Proxy, create_app
from reporters.proxy.config import (
    Claim,
    ConfigError,
    ProxyConfig,
    Route,
    from_mapping,
    read_file,
)
from reporters.proxy.measure import DeliverableCheck, Exchange
from reporters.proxy.tracker import Call, DerivedOutcomes, Settled

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
