"""The proxy's Prometheus metrics (docs/proxy.md lists each one; a test holds the two equal).

Each :class:`Proxy` has its own registry, served on its ops listener, so several proxies
in one process (tests, the simulation) never mix their counts and the bureau's own
metrics never show up on a proxy's listener. Names start with ``bureau_proxy_``;
counters end in ``_total`` when exposed.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

#: Upstream latency buckets, seconds: agents answer in milliseconds to minutes.
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class ProxyMetrics:
    """The counters and gauges of one proxy, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # Registered in this order, which is the order of the exposition.
        self._count_calls(self.registry)
        self._count_facts(self.registry)
        self._count_reading(self.registry)

    def _count_calls(self, r: CollectorRegistry) -> None:
        """The calls forwarded, or not."""
        self.calls = Counter(
            "bureau_proxy_calls_forwarded", "Calls forwarded to an agent, by route prefix and "
            "result: answered (any HTTP status), timeout, unreachable, too_large.",
            ["route", "result"], registry=r)
        self.unrouted = Counter(
            "bureau_proxy_calls_unrouted", "Calls under no route: answered 404 by the proxy, "
            "not forwarded, reported nowhere.", registry=r)
        self.upstream_seconds = Histogram(
            "bureau_proxy_upstream_latency_seconds", "Time from forwarding a call to the last "
            "byte of the agent's answer, answered calls only, by route prefix.",
            ["route"], buckets=_LATENCY_BUCKETS, registry=r)

    def _count_facts(self, r: CollectorRegistry) -> None:
        """The facts: held, spooled, delivered."""
        self.held = Gauge(
            "bureau_proxy_facts_held", "Facts held on disk, waiting for their derived outcome "
            "(what the caller does next) or for room in the spool.", registry=r)
        self.recovered = Counter(
            "bureau_proxy_facts_recovered", "Held facts found on disk at start: left by a run "
            "that did not stop cleanly, and carried on from where it was.", registry=r)
        self.spooled = Counter(
            "bureau_proxy_facts_spooled", "Facts signed and spooled for delivery (released "
            "from holding).", registry=r)
        self.spool_pending = Gauge(
            "bureau_proxy_spool_pending", "Envelopes in the spool that the bureau has not "
            "answered for yet.", registry=r)
        self.delivered = Counter(
            "bureau_proxy_facts_delivered", "Facts the bureau answered for with a ledger entry, "
            "by result: accepted (a new entry) or duplicate (it had the entry already).",
            ["result"], registry=r)
        self.rejected = Counter(
            "bureau_proxy_facts_rejected", "Facts the bureau refused, by reason code; final: "
            "they are not sent again.", ["code"], registry=r)
        self.delivery_failures = Counter(
            "bureau_proxy_delivery_failures", "Attempts to deliver a batch that failed as a "
            "whole, by reason (UNAVAILABLE, PROTOCOL, TOO_LARGE, a whole-batch refusal's "
            "code, SPOOL_ERROR, INTERNAL); each is retried after a backoff.",
            ["reason"], registry=r)
        self.delivery_retries = Counter(
            "bureau_proxy_delivery_retries", "Facts to be sent again: the lines of failed "
            "batches, and lines the bureau answered UNAVAILABLE.", registry=r)

    def _count_reading(self, r: CollectorRegistry) -> None:
        """What the proxy made of the protocols it reads, and the bounds it held on a
        stranger's bytes."""
        self.protocol_calls = Counter(
            "bureau_proxy_protocol_calls", "Calls of a protocol, by route prefix and "
            "protocol (a2a, mcp) and what they made: fact (a call of an interaction), "
            "none (bookkeeping: initialize, tools/list, notifications, a task not followed) "
            "or unread (an auto route without the protocol's extra: forwarded, no fact).",
            ["route", "protocol", "made"], registry=r)
        self.card_failures = Counter(
            "bureau_proxy_agent_card_failures", "Reads of an a2a route's agent card that "
            "left it unused, by route prefix and reason: unreachable, status, too_large, invalid, "
            "bad_signature, other_agent. The route works; its facts carry no card promises.",
            ["route", "reason"], registry=r)
        self.limits = Counter(
            "bureau_proxy_limits", "Times a bound on a stranger's bytes was reached, by "
            "limit: event_size (an event of a relayed stream over max_body: relayed on, no "
            "longer read), card_size (an agent card over max_card_bytes), jku_host (a "
            "card's jku naming a host not in card_jku_hosts, or a loopback or private "
            "address), header_seconds (a request's head not in within header_seconds: the "
            "connection is closed), body_seconds (a body not in within body_seconds: 408).",
            ["limit"], registry=r)
        self.schema_failures = Counter(
            "bureau_proxy_mcp_schema_failures", "Times the proxy could not learn an mcp "
            "route's tools by asking the server (outputSchema not checked), by route.",
            ["route"], registry=r)

        self.deviations = Gauge(
            "bureau_proxy_protocol_deviations", "Agents of a route whose answers deviate "
            "from the protocol's published schema in a way the proxy reads all the same "
            "(timestamp-without-zone, other-version-names, other-version-shape), by route "
            "prefix and deviation: counted once per agent, not per call.",
            ["route", "deviation"], registry=r)

    def watch(self, held: Callable[[], float], spool_pending: Callable[[], float]) -> None:
        """Read the two gauges from the proxy's state at every scrape."""
        self.held.set_function(held)
        self.spool_pending.set_function(spool_pending)

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
