"""Key files, backoff and Retry-After: the small pure pieces."""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

import pytest

import reporters
from reporters import wire
from reporters._internal.backoff import Backoff
from reporters._internal.transport import parse_retry_after


def test_key_files_round_trip_privately(tmp_path: Path) -> None:
    key = reporters.generate_key()
    path = tmp_path / "agent.key"
    reporters.save_key(key, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    loaded = reporters.load_key(path)
    assert reporters.key_id(loaded) == reporters.key_id(key) == wire.signing_key_id(key)
    with pytest.raises(FileExistsError):
        reporters.save_key(reporters.generate_key(), path)
    other = reporters.generate_key()
    reporters.save_key(other, path, overwrite=True)
    assert reporters.key_id(reporters.load_key(path)) == reporters.key_id(other)


def test_a_file_that_is_not_a_key_is_bad_key_file(tmp_path: Path) -> None:
    path = tmp_path / "junk.key"
    path.write_text("hello\n")
    with pytest.raises(reporters.BureauClientError) as info:
        reporters.load_key(path)
    assert info.value.code == "BAD_KEY_FILE" and info.value.status is None


def test_backoff_grows_with_jitter_and_caps() -> None:
    low = Backoff(base=0.1, cap=1.0, rng=lambda: 0.0)
    high = Backoff(base=0.1, cap=1.0, rng=lambda: 1.0)
    assert [round(low.next_delay(), 3) for _ in range(6)] == [0.05, 0.1, 0.2, 0.4, 0.5, 0.5]
    assert [round(high.next_delay(), 3) for _ in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    high.reset()
    assert high.next_delay() == pytest.approx(0.1)


def test_backoff_honours_retry_after() -> None:
    backoff = Backoff(base=0.1, cap=1.0, rng=lambda: 0.5)
    assert backoff.next_delay(retry_after=2.0) == 2.0  # never sooner than asked
    assert backoff.next_delay(retry_after=0.0) == pytest.approx(0.15)


def test_retry_after_header_forms() -> None:
    now = dt.datetime(2026, 11, 29, 23, 0, 0, tzinfo=dt.UTC)
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("Sun, 29 Nov 2026 23:00:05 GMT", now) == 5.0
    assert parse_retry_after("Sun, 29 Nov 2026 22:00:00 GMT", now) == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
