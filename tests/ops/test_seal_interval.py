"""``BUREAU_SEAL_INTERVAL`` configures the sealer; its name before issue 33,
``BUREAU_SETTLE_INTERVAL``, is still read, with one deprecation line in the log."""

from __future__ import annotations

import logging
import os

import pytest

from bureau import config as config_module
from bureau.config import OLD_SEAL_INTERVAL, Config, child_environment


@pytest.fixture(autouse=True)
def _fresh_deprecation_lines() -> None:
    """Each test sees the deprecation line as a new process would (it is said once per
    process)."""
    config_module._deprecated.cache_clear()


def _deprecations(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "bureau.config" and r.levelno == logging.WARNING]


def test_the_new_name_configures_the_sealer_and_says_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "bureau.config")
    assert Config.from_env({"BUREAU_SEAL_INTERVAL": "0.25"}).seal_interval == 0.25
    assert Config.from_env({}).seal_interval == 5.0
    assert _deprecations(caplog) == []


def test_the_old_name_is_still_read_with_one_deprecation_line(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "bureau.config")
    env = {OLD_SEAL_INTERVAL: "0.75"}
    assert Config.from_env(env).seal_interval == 0.75
    assert Config.from_env(env).seal_interval == 0.75  # a command that reads it twice
    assert _deprecations(caplog) == [
        "BUREAU_SETTLE_INTERVAL is deprecated: set BUREAU_SEAL_INTERVAL instead"]


def test_the_new_name_wins_and_the_old_one_is_said_to_be_ignored(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "bureau.config")
    env = {OLD_SEAL_INTERVAL: "0.75", "BUREAU_SEAL_INTERVAL": "2"}
    assert Config.from_env(env).seal_interval == 2.0
    assert _deprecations(caplog) == [
        "BUREAU_SETTLE_INTERVAL is deprecated and ignored: BUREAU_SEAL_INTERVAL is set"]


@pytest.mark.parametrize("name", ["BUREAU_SEAL_INTERVAL", OLD_SEAL_INTERVAL])
def test_a_bad_interval_is_refused_under_the_name_it_was_given(name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be a positive number of seconds"):
        Config.from_env({name: "0"})


def test_processes_serve_starts_read_the_new_name_only(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """``serve --workers N``'s workers and sequencer get the interval under its new name:
    the operator hears the deprecation once, from the process they started."""
    caplog.set_level(logging.WARNING, "bureau.config")
    monkeypatch.setenv(OLD_SEAL_INTERVAL, "0.75")
    parent = Config.from_env()
    child = child_environment(parent, BUREAU_HOME="/elsewhere")
    assert OLD_SEAL_INTERVAL not in child and child["BUREAU_HOME"] == "/elsewhere"
    assert child["PATH"] == os.environ["PATH"]
    config_module._deprecated.cache_clear()  # the child is a process of its own
    assert Config.from_env(child).seal_interval == 0.75
    assert len(_deprecations(caplog)) == 1  # the parent's
