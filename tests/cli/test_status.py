"""``bureau status`` (issue 24, row 3): where a bureau stands, human by default and
``--json``, from the ledger here or from a running bureau over HTTP."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from bureau.scoring.policy import DEFAULT_POLICY_NAME, policy_name_of
from bureau.status import seal_plan
from reporters import wire
from tests.cli.test_commands import _agent_with_a_report, _env, bureau_cli_async
from tests.copy import assert_plain
from tests.processes import free_port
from tests.support import BureauUnderTest


def test_seal_plan() -> None:
    now = dt.datetime(2026, 12, 1, 0, 0, 40, tzinfo=dt.UTC)  # epoch 1 of 30 s epochs ...
    base = int(now.timestamp()) // 30
    quiet = seal_plan(now, 30, None)
    assert quiet["epoch"] is None and not quiet["overdue"]
    busy = seal_plan(now, 30, base)
    assert busy["epoch"] == base and not busy["overdue"]
    assert busy["due"] == "2026-12-01T00:01:00Z"
    late = seal_plan(now, 30, base - 2)
    assert late["overdue"] and late["due"] == "2026-12-01T00:00:00Z"


@pytest.mark.slow
async def test_status_of_the_local_ledger(bureau: BureauUnderTest, tmp_path: Path) -> None:
    await _agent_with_a_report(bureau)
    env = _env(bureau, tmp_path)
    done = await bureau_cli_async("status", "--json", env=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["source"].startswith("ledger at postgresql://")
    assert doc["entries"] >= 6 and doc["database_bytes"] > 0
    assert doc["epoch_seconds"] == bureau.config.epoch_seconds
    assert doc["latest_sealed"]["epoch"] is not None
    assert doc["next_seal"]["epoch"] is None  # nothing recorded since that seal
    assert doc["policy"]["name"] == policy_name_of(doc["policy"]["hash"]) == DEFAULT_POLICY_NAME
    assert doc["witnesses"] == [] and doc["replicas"]["streaming"] == []
    assert set(doc["leaders"]) == {"reports", "tree heads"}
    # the bureau of this test leads report building from this process's connection
    assert doc["leaders"]["reports"] is not None
    down = f"http://127.0.0.1:{free_port()}"
    spooled = await bureau_cli_async("status", "--spool", down, env=env)
    assert spooled.returncode == 0, spooled.stderr
    text = spooled.stdout
    assert_plain(text)
    assert text.splitlines()[0].startswith("ledger at postgresql://")
    assert "no activity since" in text and f"policy     {DEFAULT_POLICY_NAME}" in text
    assert f"spool      {down}: unreachable" in text
    assert "leader     reports: pid" in text


@pytest.mark.slow
async def test_status_over_http(bureau: BureauUnderTest, tmp_path: Path) -> None:
    await _agent_with_a_report(bureau)
    nowhere = {"PATH": "/usr/bin:/bin", "BUREAU_HOME": str(tmp_path / "none")}
    done = await bureau_cli_async("status", "--url", bureau.url, "--json", env=nowhere)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["source"] == f"bureau at {bureau.url}"
    assert doc["key"] == wire.signing_key_id(bureau.signing_key)
    assert doc["latest_sealed"]["epoch"] is not None and doc["replicas"] is None
    text = await bureau_cli_async("status", "--url", bureau.url, env=nowhere)
    assert "replicas   not known from outside" in text.stdout
    assert "spools     not known here" in text.stdout
    down = await bureau_cli_async("status", "--url", f"http://127.0.0.1:{free_port()}",
                                  env=nowhere)
    assert down.returncode == 2 and "unreachable" in down.stderr
    assert not (tmp_path / "none").exists()
