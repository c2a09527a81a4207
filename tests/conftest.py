"""Shared fixtures: a real PostgreSQL (embedded via pgserver unless BUREAU_DATABASE_URL
names one), a fresh database per test copied from a migrated template
(tests/databases.py), and the bureau served over real loopback HTTP.

Under pytest-xdist (``make test`` runs ``-n auto``) each worker process has its own
embedded server, its own databases and its own ports (every listener binds port 0)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.databases import drop_templates, fresh_database, tune_for_tests
from tests.support import BureauUnderTest, start_bureau


def _run_apart(work: Callable[[], Awaitable[None]]) -> None:
    """Run ``work`` on an event loop of its own thread: a session fixture runs outside
    pytest-asyncio's loop, and ``asyncio.run`` here would unset that loop."""
    async def main() -> None:
        await work()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, main()).result()

# LiteLLM (imported by the tests that read every module, and by tests/integrations) reads
# its model cost map from its package, not from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """The URL of a PostgreSQL server the tests may create databases on."""
    given = os.environ.get("BUREAU_DATABASE_URL")
    if given:
        yield given
        _run_apart(drop_templates)
        return
    import pgserver

    with tempfile.TemporaryDirectory(prefix="bureau-test-pg-") as tmp:
        server = pgserver.get_server(Path(tmp) / "pgdata", cleanup_mode="stop")
        _run_apart(lambda: tune_for_tests(server.get_uri()))
        yield server.get_uri()
        server.cleanup()


@pytest.fixture
async def database_url(pg_server_url: str) -> AsyncIterator[str]:
    """A new database for this test, migrated (a copy of the template); dropped afterwards."""
    async with fresh_database(pg_server_url) as url:
        yield url


@pytest.fixture
async def empty_database_url(pg_server_url: str) -> AsyncIterator[str]:
    """A new database with nothing in it, not even the migrations: for a test of what
    the bureau does to an empty database."""
    async with fresh_database(pg_server_url, migrated=False) as url:
        yield url


@pytest.fixture
async def bureau(database_url: str, tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    """The bureau, in this process, on a real loopback port, on a fresh database."""
    async with start_bureau(database_url, tmp_path) as b:
        yield b


# The slowest files, printed after --durations' slowest tests: where the suite's time goes
# (docs/architecture.md, "Running the tests"). Under pytest-xdist the reports of every
# worker reach this hook in the controlling process.
_FILE_SECONDS: dict[str, float] = {}
SLOWEST_FILES_SHOWN = 15


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files that hold a slow or third-party test run first, each file's tests kept
    together and in their order (module-scoped fixtures are set up once): a test of a
    minute that starts when every other test is done is a minute the other core sits
    idle. The order is a pure function of what was collected, so every xdist worker
    collects the same one."""
    heavy = {item.nodeid.split("::", 1)[0] for item in items
             if item.get_closest_marker("slow") or item.get_closest_marker("thirdparty")}
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ordered = sorted(files, key=lambda path: path not in heavy)  # stable: else as found
    items[:] = [item for path in ordered for item in files[path]]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _FILE_SECONDS:
        return
    total = sum(_FILE_SECONDS.values())
    terminalreporter.section(f"slowest {SLOWEST_FILES_SHOWN} files "
                             f"(setup + call + teardown, {total:.0f} s in all)")
    ranked = sorted(_FILE_SECONDS.items(), key=lambda item: -item[1])
    for path, seconds in ranked[:SLOWEST_FILES_SHOWN]:
        terminalreporter.write_line(f"{seconds:8.1f} s  {100 * seconds / total:4.1f} %  {path}")
