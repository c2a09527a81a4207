"""Deviations from a protocol that the proxy reads all the same, said once per agent.

An agent that writes a timestamp without a zone writes it in every answer; a warning per
call would bury the log, and a counter per call would say how busy the agent is rather
than that it deviates. So each (route, agent, deviation) is logged at ``WARNING`` the
first time it is seen, and counted then in ``bureau_proxy_protocol_deviations`` — the
number of agents of a route seen deviating so — and never again in this run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from reporters.proxy.metrics import ProxyMetrics

log = logging.getLogger("reporters.proxy")


class Deviations:
    def __init__(self, metrics: ProxyMetrics) -> None:
        self._metrics = metrics
        self._seen: set[tuple[str, str, str]] = set()

    def seen(self, route: str, agent: str, deviations: Iterable[str]) -> None:
        """The answer of ``agent`` on ``route`` needed ``deviations`` to be read."""
        for name in deviations:
            if (route, agent, name) in self._seen:
                continue
            self._seen.add((route, agent, name))
            self._metrics.deviations.labels(route, name).inc()
            log.warning("route %s: agent %s answers with a deviation from the protocol "
                        "(%s); read all the same, and said once", route, agent, name)
