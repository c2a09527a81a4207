"""The OTLP receiver's Prometheus metrics (docs/proxy.md lists each one; a test holds the
two equal). One registry per receiver, as for the proxy (reporters/proxy/metrics.py);
names start with ``bureau_otlp_``."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest


class OtlpMetrics:
    """The counters and gauges of one receiver, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "bureau_otlp_requests", "Export requests answered, by result: accepted (every "
            "agent span became a fact), partial (some agent spans were not mapped), "
            "not_otlp (400), unsupported (415), too_large (413: over max_body or a bound "
            "of [limits]), too_slow (408: the body was not in within body_seconds), "
            "unavailable (503: the spool could not take them, or decode_queue requests "
            "were waiting; the exporter retries).", ["result"], registry=r)
        self.limits = Counter(
            "bureau_otlp_limits", "Times a bound on a stranger's bytes was reached, by "
            "limit: spans, blocks, attributes, events, links, depth, fields, json_tokens "
            "(what one request decodes to, [limits]: 413), decode_queue (503), header_seconds (the "
            "connection closed), body_seconds (408).", ["limit"], registry=r)
        self.spans = Counter(
            "bureau_otlp_spans", "Spans received, by result: mapped (a fact was spooled), "
            "ignored (not an agent invocation), not_mapped (an agent span that did not "
            "become a fact; see bureau_otlp_spans_not_mapped_total).", ["result"],
            registry=r)
        self.not_mapped = Counter(
            "bureau_otlp_spans_not_mapped", "Agent-invocation spans not turned into facts, "
            "by reason: unmapped_agent (no subject in the config's tables: never guessed), "
            "bad_span (ids or times that are not a span's).", ["reason"], registry=r)
        self.spool_pending = Gauge(
            "bureau_otlp_spool_pending", "Facts in the spool that the bureau has not "
            "answered for yet.", registry=r)
        self.delivered = Counter(
            "bureau_otlp_facts_delivered", "Facts the bureau answered for with a ledger "
            "entry, by result: accepted (a new entry) or duplicate (it had it: a span "
            "exported twice).", ["result"], registry=r)
        self.rejected = Counter(
            "bureau_otlp_facts_rejected", "Facts the bureau refused, by reason code; final.",
            ["code"], registry=r)
        self.delivery_failures = Counter(
            "bureau_otlp_delivery_failures", "Attempts to deliver a batch that failed as a "
            "whole, by reason; each is retried after a backoff.", ["reason"], registry=r)

    def watch(self, spool_pending: Callable[[], float]) -> None:
        self.spool_pending.set_function(spool_pending)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
