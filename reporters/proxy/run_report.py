"""What a proxy run did, told as it happens and at its stop: the metrics and log lines of
the bureau's answers (deliveries, refusals) and the one line a stop leaves."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reporters import Rejection
from reporters._internal.outcomes import Delivery
from reporters._internal.wording import count
from reporters.proxy.metrics import ProxyMetrics

log = logging.getLogger("reporters.proxy")


@dataclass
class RunTally:
    """What this run did, for the log line at the stop."""

    calls: int = 0
    accepted: int = 0
    duplicate: int = 0
    rejected: int = 0


class RunReport:
    """``pending`` is how many facts wait in the spool (for the log lines)."""

    def __init__(self, metrics: ProxyMetrics, pending: Callable[[], int]) -> None:
        self.metrics = metrics
        self.tally = RunTally()
        self._pending = pending

    def delivered(self, d: Delivery) -> None:
        """The reporter's ``on_delivery``: an attempt to deliver a batch, and its end."""
        m = self.metrics
        if d.failure is not None:
            m.delivery_failures.labels(d.failure).inc()
            m.delivery_retries.inc(d.lines)
            return
        m.delivered.labels("accepted").inc(d.accepted)
        m.delivered.labels("duplicate").inc(d.duplicate)
        m.delivery_retries.inc(d.unavailable)
        r = self.tally
        r.accepted += d.accepted
        r.duplicate += d.duplicate
        r.rejected += d.rejected
        seqs = "" if d.first_seq is None else f", ledger seq {d.first_seq}-{d.last_seq}"
        again = f", {d.unavailable} to send again" if d.unavailable else ""
        log.info("delivered %s: %d accepted, %d duplicate, %d rejected%s%s; "
                 "%d in the spool", count(d.lines - d.unavailable, "fact"), d.accepted,
                 d.duplicate, d.rejected, again, seqs, self._pending())

    def rejected(self, rejection: Rejection) -> None:
        """The reporter's ``on_rejection``."""
        self.metrics.rejected.labels(rejection.code).inc()
        log.warning("the bureau refused a fact: %s at %s: %s", rejection.code, rejection.path,
                    rejection.detail)

    def stopped(self, held: int, spool_file: Path) -> None:
        """The line a stop leaves: what was forwarded and delivered, what is left."""
        r = self.tally
        left = self._pending(), held
        where = (f"{count(left[0], 'fact')} {'waits' if left[0] == 1 else 'wait'} in the "
                 f"spool and {left[1]} {'is' if left[1] == 1 else 'are'} held in "
                 f"{spool_file}: the next start on this spool sends them")
        log.info("stopped: %s forwarded, %s delivered (%d accepted, %d duplicate, "
                 "%d rejected); %s", count(r.calls, "call"),
                 count(r.accepted + r.duplicate + r.rejected, "fact"),
                 r.accepted, r.duplicate, r.rejected,
                 where if any(left) else "nothing left behind")
