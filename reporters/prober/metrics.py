"""The prober's Prometheus metrics (docs/probing.md lists each one; a test holds the two
equal). Each :class:`reporters.prober.Prober` has its own registry, served on its ops
listener. Names start with ``bureau_probe_``; counters end in ``_total`` when exposed."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class ProbeMetrics:
    """The counters and gauges of one prober, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.sent = Counter(
            "bureau_probe_tasks_sent", "Tasks sent to an agent, by agent key id and task kind.",
            ["agent", "kind"], registry=r)
        self.results = Counter(
            "bureau_probe_results", "What the tasks came to, by agent key id and result: "
            "passed, failed, declined, unfinished, no_answer.", ["agent", "result"], registry=r)
        self.latency = Histogram(
            "bureau_probe_answer_latency_seconds", "From sending a task to the agent's whole "
            "answer, answered tasks only, by agent key id.", ["agent"],
            buckets=_LATENCY_BUCKETS, registry=r)
        self.exhausted = Counter(
            "bureau_probe_batch_exhausted", "Epochs in which an agent's rate asked for more "
            "tasks of its kinds than the batch holds (no more probes until the next epoch).",
            ["agent"], registry=r)
        self.interrupted = Counter(
            "bureau_probe_interrupted", "Tasks whose answers are unknown, so nothing was "
            "reported for them: in flight when a run ended without stopping cleanly (found "
            "at start), or failed in the prober itself (logged with the error).",
            registry=r)
        self.recovered = Counter(
            "bureau_probe_recovered", "Probes answered and judged by a run that ended before "
            "they were spooled, found at start and spooled.", registry=r)
        self.spool_pending = Gauge(
            "bureau_probe_spool_pending", "Envelopes in the spool that the bureau has not "
            "answered for yet.", registry=r)
        self.delivered = Counter(
            "bureau_probe_entries_delivered", "Entries (probes and facts) the bureau answered "
            "for, by result: accepted (a new entry) or duplicate (it had it already).",
            ["result"], registry=r)
        self.rejected = Counter(
            "bureau_probe_entries_rejected", "Entries the bureau refused, by reason code; "
            "final: they are not sent again.", ["code"], registry=r)
        self.delivery_failures = Counter(
            "bureau_probe_delivery_failures", "Attempts to deliver a batch that failed as a "
            "whole, by reason (UNAVAILABLE, PROTOCOL, TOO_LARGE, a whole-batch refusal's "
            "code, SPOOL_ERROR, INTERNAL); each is retried after a backoff.",
            ["reason"], registry=r)

    def watch(self, spool_pending: Callable[[], float]) -> None:
        self.spool_pending.set_function(spool_pending)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
