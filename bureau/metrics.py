"""Prometheus metrics. Every name starts with ``bureau_``; counters end in ``_total``.

Metrics live in the default registry so that ``/metrics`` shows process figures too.
docs/operations.md lists each one, and a test holds that list and this module equal.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

INTAKE_TOTAL = Counter(
    "bureau_intake_total",
    "Envelopes judged by intake, by payload type and result (accepted, duplicate, rejected).",
    ["payload_type", "result"],
)
REFUSALS_TOTAL = Counter(
    "bureau_refusals_total",
    "Envelopes refused, by reason code (including ones that cannot be attributed).",
    ["code"],
)
UNAVAILABLE_TOTAL = Counter(
    "bureau_unavailable_total",
    "Answers UNAVAILABLE (503; 500 for internal_error), by named reason: queue_full, "
    "intake_full, database_unreachable, shutting_down, internal_error.",
    ["reason"],
)
REQUEST_SECONDS = Histogram(
    "bureau_http_request_seconds",
    "HTTP request latency by route and status.",
    ["route", "method", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
LEDGER_HEAD_SEQ = Gauge(
    "bureau_ledger_head_seq",
    "Seq of the last ledger entry this process committed or saw.",
)
DB_TRANSACTION_SECONDS = Histogram(
    "bureau_db_transaction_seconds",
    "Duration of each named database transaction, by name and outcome.",
    ["name", "outcome"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
COMMIT_GROUP_SIZE = Histogram(
    "bureau_commit_group_envelopes",
    "Envelopes judged per group-commit transaction.",
    buckets=(1, 2, 5, 10, 50, 100, 500, 1000, 2500, 5000),
)
GROUP_SPLITS_TOTAL = Counter(
    "bureau_commit_group_splits_total",
    "Group commits the database refused (not by going away), committed again in halves "
    "to find the submission it cannot store.",
)
ISOLATED_TOTAL = Counter(
    "bureau_commit_isolated_total",
    "Submissions (or pieces of locked work) refused alone because a group holding only "
    "them failed: each is answered 500 UNAVAILABLE (internal_error) and logged.",
)
COMMIT_SECTION_SECONDS = Counter(
    "bureau_commit_section_seconds_total",
    "Time the group committer held the ledger head lock in committed groups, from the "
    "lock's grant to COMMIT's return, by part: python (the committer thread's CPU) and "
    "database (the rest: waiting on PostgreSQL, and on the GIL).",
    ["part"],
)
COMMIT_SECTION_ENVELOPES = Counter(
    "bureau_commit_section_envelopes_total",
    "Envelopes judged in committed groups (divides bureau_commit_section_seconds_total "
    "into a cost per envelope).",
)
INTAKE_QUEUE_DEPTH = Gauge(
    "bureau_intake_queue_envelopes",
    "Envelopes waiting for the group committer.",
)
SEALS_TOTAL = Counter(
    "bureau_seals_total",
    "Seal entries appended by this process.",
)
REPORT_BUILD_SECONDS = Histogram(
    "bureau_report_build_seconds",
    "Time to derive, sign and store every report of one sealed epoch.",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
)
TREE_HEADS = Counter(
    "bureau_tree_heads_total",
    "Tree heads (GET /checkpoint notes) this process signed and published.",
)
TREE_HEAD_SIZE = Gauge(
    "bureau_tree_head_size",
    "Size of the latest tree head this process published.",
)
TREE_HEAD_REFUSALS = Counter(
    "bureau_tree_head_refusals_total",
    "Tree heads not signed because the ledger no longer extends a head already "
    "published (a restore that lost published entries; docs/runbook.md).",
)
WITNESS_COSIGNATURES = Counter(
    "bureau_witness_cosignatures_total",
    "Cosignatures received from each witness (BUREAU_WITNESSES).",
    ["witness"],
)
WITNESS_CONFLICTS = Counter(
    "bureau_witness_conflicts_total",
    "Checkpoints a witness refused as inconsistent with what it cosigned before (422), "
    "or answered with a size larger than any head published: the log may have forked.",
    ["witness"],
)
WITNESS_FAILURES = Counter(
    "bureau_witness_failures_total",
    "Pushes to a witness that failed otherwise: unreachable, timed out, another status, "
    "or an answer outside tlog-witness; tried again at the publisher's next tick.",
    ["witness"],
)
READS_TOTAL = Counter(
    "bureau_reads_total",
    "Reads of documents and files, by the database that served them (primary, replica) "
    "and why: current (the replica had it), no_replica, replica_behind (a party's own "
    "latest write not replayed within BUREAU_READ_WAIT), not_found_on_replica (a "
    "negative answer confirmed on the primary), replica_unavailable.",
    ["database", "reason"],
)
LEADING = Gauge(
    "bureau_leading",
    "1 while this process holds the election for the work ``role`` names (reports: the "
    "report builder; tree_heads: the tree-head publisher), else 0.",
    ["role"],
)
