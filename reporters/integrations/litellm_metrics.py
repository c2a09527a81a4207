"""The LiteLLM plugin's Prometheus metrics (docs/litellm.md lists each one; a test holds
the two equal). They live in prometheus_client's default registry, the one LiteLLM's own
``/metrics`` serves (with ``callbacks: ["prometheus"]``); with several workers LiteLLM
sets ``PROMETHEUS_MULTIPROC_DIR`` and adds them up across processes, which is why the
gauges move by differences (``inc``/``dec``) and say how to add up (``livesum``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge


class LiteLLMMetrics:
    """The plugin's counters and gauges: one set per process, whatever the loggers."""

    def __init__(self) -> None:
        self.spooled = Counter(
            "bureau_litellm_facts_spooled", "Facts signed and spooled on disk for the "
            "bureau, one per attempt LiteLLM made at a mapped deployment.")
        self.dropped = Counter(
            "bureau_litellm_facts_dropped", "Facts not written, by reason: spool_full (the "
            "worker's spool holds max_spooled facts: the bureau has been away long), "
            "queue_full (the writer fell 10,000 events behind the calls), spool_error (the "
            "spool could not be opened or written). The call itself never waits.",
            ["reason"])
        self.unmapped = Counter(
            "bureau_litellm_calls_unmapped", "Attempts at deployments the config's "
            "[deployments] does not map: never reported under a guessed subject.")
        self.pending = Gauge(
            "bureau_litellm_spool_pending", "Facts in the spools of this proxy's workers "
            "that the bureau has not answered for yet.", multiprocess_mode="livesum")
        self.held = Gauge(
            "bureau_litellm_facts_held", "Failed attempts held on disk until their request "
            "settles (a success, LiteLLM giving up, or settle_seconds of quiet).",
            multiprocess_mode="livesum")
        self.delivered = Counter(
            "bureau_litellm_facts_delivered", "Facts the bureau answered for with a ledger "
            "entry, by result: accepted (new) or duplicate (it had it).", ["result"])
        self.rejected = Counter(
            "bureau_litellm_facts_rejected", "Facts the bureau refused, by reason code; "
            "final, never sent again.", ["code"])


METRICS = LiteLLMMetrics()

__all__ = ["METRICS", "LiteLLMMetrics"]
