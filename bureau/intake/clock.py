"""The bureau's clock and the two readings every entry records: its RFC 3339 time and
its epoch."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

Clock = Callable[[], dt.datetime]


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def format_timestamp(t: dt.datetime) -> str:
    """RFC 3339, UTC, microseconds, ``Z`` — the form written into every entry."""
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def epoch_of(t: dt.datetime, epoch_seconds: int) -> int:
    micros = (t - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    return micros // (epoch_seconds * 1_000_000)
