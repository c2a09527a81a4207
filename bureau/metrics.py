"""Prometheus metrics. Every name starts with ``bureau_``; counters end in ``_total``.

One process (``serve --workers 1``): metrics live in the default registry, so that
``/metrics`` shows process figures too. Several (``--workers N``): every process writes
its values to files in one per-run directory (prometheus_client's multiprocess mode,
``PROMETHEUS_MULTIPROC_DIR``, set before this module is imported: see
:func:`bureau.cli.serve.cmd_serve`), and whichever process a scrape reaches adds them all up
(:func:`exposition`). Gauges say how: the head seen is the largest any process saw, the
queue depth the sum over the live processes.

A few gauges are not kept by any process but read from the database at each scrape
(``SCRAPED``): the last seal and the seal lag are facts of the ledger, the same
whichever process answers. docs/operations.md lists every metric, and a test holds that
list and this module equal.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable, Iterator

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from bureau import __version__

#: gauges computed at each scrape (bureau.http.routes.ops): name -> help
BUILD_INFO = "bureau_build_info"
LAST_SEAL = "bureau_last_seal_timestamp_seconds"
SEAL_LAG = "bureau_seal_lag_seconds"
SCRAPED = {
    BUILD_INFO: "Always 1; the labels name the bureau's version and the Python running it.",
    LAST_SEAL: "When the latest seal entry was recorded (Unix time); absent before the "
               "first seal.",
    SEAL_LAG: "Seconds since the end of the oldest elapsed epoch whose reports are not yet "
              "published; 0 when every elapsed epoch has its reports.",
}

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
LATE_HEADS_TOTAL = Counter(
    "bureau_http_late_heads_total",
    "Connections to the service's port closed because a request's head was not in within "
    "BUREAU_HEADER_SECONDS of its first byte (or of the connection's opening): slow or "
    "stalled clients. Idle connections closed after as long are not counted.",
)
REQUEST_SECONDS = Histogram(
    "bureau_http_request_seconds",
    "HTTP request latency by route and status.",
    ["route", "method", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
LEDGER_HEAD_SEQ = Gauge(
    "bureau_ledger_head_seq",
    "Seq of the last ledger entry this process committed or saw (with several "
    "processes: the largest).",
    multiprocess_mode="max",
)
DB_TRANSACTION_SECONDS = Histogram(
    "bureau_db_transaction_seconds",
    "Duration of each named database transaction, by name and outcome.",
    ["name", "outcome"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
DATABASE_OUTAGES = Counter(
    "bureau_database_outages_total",
    "Outages of the database as the routes saw it: from the first answer 503 "
    "UNAVAILABLE (database_unreachable) to the next answer that is not one; each is "
    "logged once (bureau_unavailable_total counts the answers).",
)
DB_RECONNECTS = Counter(
    "bureau_db_reconnects_total",
    "Times a way this process reaches the database (link: database pool, committer, "
    "replica pool) connected again after losing it, or to another server than before "
    "(a failover).",
    ["link"],
)
COMMIT_GROUP_SIZE = Histogram(
    "bureau_commit_group_envelopes",
    "Envelopes judged per group-commit transaction.",
    buckets=(1, 2, 5, 10, 50, 100, 500, 1000, 2500, 5000),
)
#: observed only by the node's sequencer (bureau.intake.sequencer): how many envelopes
#: the one committer of a ``serve --workers N`` gathered into each group
SEQUENCER_GROUP_SIZE = Histogram(
    "bureau_sequencer_group_envelopes",
    "Envelopes per group formed by the node's sequencer (serve --workers N).",
    buckets=(1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 500, 1000, 5000),
)
SEQUENCER_FALLBACK_TOTAL = Counter(
    "bureau_sequencer_fallback_total",
    "Requests a worker committed by itself, under the head lock, because the node's "
    "sequencer was unreachable.",
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
    "Envelopes waiting for the group committer (with several processes: their sum).",
    multiprocess_mode="livesum",
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
SETTLEMENT_SECONDS = Histogram(
    "bureau_settlement_seconds",
    "Time to compute, sign and store one sealed epoch's settlement of its pool.",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
)
TREE_HEADS = Counter(
    "bureau_tree_heads_total",
    "Tree heads (GET /checkpoint notes) this process signed and published.",
)
TREE_HEAD_SIZE = Gauge(
    "bureau_tree_head_size",
    "Size of the latest tree head this process published (with several processes: "
    "the largest).",
    multiprocess_mode="max",
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
    "report builder; tree_heads: the tree-head publisher; mirror: the static mirror's "
    "writer), else 0 (with several "
    "processes: the sum over the live ones, so 1 on the node that leads).",
    ["role"],
    multiprocess_mode="livesum",
)


def multiprocess_dir() -> str | None:
    """The per-run directory of multiprocess mode, when this process is one of several."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class _Scrape:
    """What one scrape shows: the processes' metrics and the scraped gauges."""

    def __init__(self, sources: Iterable[Collector], scraped: list[GaugeMetricFamily]) -> None:
        self.sources, self.scraped = list(sources), scraped

    def collect(self) -> Iterator[object]:
        for source in self.sources:
            yield from source.collect()
        yield from self.scraped


def scraped_gauges(last_seal: float | None, seal_lag: float | None) -> list[GaugeMetricFamily]:
    """The gauges read at scrape time; a value the database could not give is left out."""
    info = GaugeMetricFamily(BUILD_INFO, SCRAPED[BUILD_INFO], labels=["version", "python"])
    info.add_metric([__version__, platform.python_version()], 1)
    out = [info]
    for name, value in ((LAST_SEAL, last_seal), (SEAL_LAG, seal_lag)):
        if value is not None:
            out.append(GaugeMetricFamily(name, SCRAPED[name], value=value))
    return out


def exposition(scraped: list[GaugeMetricFamily]) -> bytes:
    """The text a scrape of ``/metrics`` answers: with several processes, every
    process's values added up from the per-run directory (this process's alone would
    jump between processes from one scrape to the next)."""
    path = multiprocess_dir()
    source: Collector = (REGISTRY if path is None
                         else multiprocess.MultiProcessCollector(None, path))  # type: ignore[no-untyped-call]
    return generate_latest(_Scrape([source], scraped))  # type: ignore[arg-type]

# The static mirror (bureau.mirror; serve --mirror, bureau mirror).
MIRROR_PASS_SECONDS = Histogram(
    "bureau_mirror_pass_seconds",
    "Seconds a pass of the static mirror took that wrote something (tiles, checkpoint, "
    "epochs).",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300))
MIRROR_FILES = Counter(
    "bureau_mirror_files_written_total",
    "Files the static mirror wrote (each atomically: a temporary name, then a rename).")
MIRROR_TREE_SIZE = Gauge(
    "bureau_mirror_tree_size",
    "The tree size of the checkpoint the static mirror last wrote (with several "
    "processes: the largest).",
    multiprocess_mode="max")
MIRROR_EPOCH = Gauge(
    "bureau_mirror_epoch",
    "The latest epoch whose reports, bundles and cards the static mirror has written "
    "(with several processes: the largest).",
    multiprocess_mode="max")
