"""Issue 24, row 1: every command that reads a ledger says which one in its first line,
``bureau report --url`` reads a running bureau like any client, ``make demo`` prints
the ``export BUREAU_HOME=…`` line, and ``serve`` says what it did as it stops."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bureau import ledger_line
from bureau.config import Config
from reporters import wire
from tests.cli.test_commands import _agent_with_a_report, _env, bureau_cli, bureau_cli_async
from tests.copy import assert_plain
from tests.processes import free_port
from tests.support import BureauUnderTest

ROOT = Path(__file__).resolve().parents[2]


def test_the_place_is_said_as_typed(tmp_path: Path, monkeypatch: object) -> None:
    here = Path.cwd()
    assert ledger_line.where(Config(home=here / ".bureau-demo")) == "./.bureau-demo"
    assert ledger_line.where(Config(home=tmp_path / "h")) == str((tmp_path / "h").resolve())
    url = "postgresql://bureau:s3cret@db.example:5432/ledger?sslmode=require&password=x"
    assert ledger_line.where(Config(home=here, database_url=url)) == \
        "postgresql://bureau@db.example:5432/ledger?sslmode=require"


def test_the_line_counts_in_words() -> None:
    one = ledger_line.LedgerSummary("./x", 30, 1, None).line()
    assert one == "ledger at ./x, 30 s epochs, 1 entry, no epoch sealed yet"
    many = ledger_line.LedgerSummary("./x", 30, 75, 59869649).line()
    assert many == ("ledger at ./x, 30 s epochs, 75 entries, latest sealed epoch 59869649 "
                    "(from 2026-12-01 01:44:30 UTC)")


@pytest.mark.slow
async def test_verify_and_report_name_their_ledger_first(bureau: BureauUnderTest,
                                                         tmp_path: Path) -> None:
    agent = await _agent_with_a_report(bureau)
    env = _env(bureau, tmp_path)
    seconds = bureau.config.epoch_seconds
    for args in (["verify"], ["verify", "--json"], ["report", agent], ["report", agent,
                                                                       "--json"]):
        done = await bureau_cli_async(*args, env=env)
        assert done.returncode == 0, done.stderr
        assert_plain(done.stdout + done.stderr)
        first = done.stderr.splitlines()[0]
        assert first.startswith("ledger at postgresql://"), (args, first)
        assert f", {seconds} s epochs, " in first and "latest sealed epoch" in first
        entries = int(re.search(r", (\d+) entries,", first).group(1))  # type: ignore[union-attr]
        assert entries >= 6  # genesis, reporter, 3 facts, seal
    assert json.loads((await bureau_cli_async("verify", "--json", env=env)).stdout)["ok"]
    missing = await bureau_cli_async("report", "ed25519:" + "A" * 43, env=env)
    assert missing.returncode == 1
    assert missing.stderr.splitlines()[0].startswith("ledger at ")
    assert "no report for" in missing.stderr.splitlines()[1]


@pytest.mark.slow
async def test_report_over_http_is_the_local_report(bureau: BureauUnderTest,
                                                    tmp_path: Path) -> None:
    agent = await _agent_with_a_report(bureau)
    local = await bureau_cli_async("report", agent, "--json", env=_env(bureau, tmp_path))
    nowhere = {"PATH": "/usr/bin:/bin", "BUREAU_HOME": str(tmp_path / "none")}
    remote = await bureau_cli_async("report", "--url", bureau.url, agent, "--json", env=nowhere)
    assert remote.returncode == 0, remote.stderr
    assert json.loads(remote.stdout) == json.loads(local.stdout)
    assert remote.stderr.splitlines()[0] == (
        f"bureau at {bureau.url}, {bureau.config.epoch_seconds} s epochs, "
        f"key {wire.signing_key_id(bureau.signing_key)}")
    text = await bureau_cli_async("report", "--url", bureau.url + "/", agent, env=nowhere)
    assert text.returncode == 0 and f"agent      {agent}" in text.stdout
    none = await bureau_cli_async("report", "--url", bureau.url, "ed25519:" + "B" * 43,
                                  env=nowhere)
    assert none.returncode == 1 and "no report for" in none.stderr
    down = await bureau_cli_async("report", "--url", f"http://127.0.0.1:{free_port()}", agent,
                                  env=nowhere)
    assert down.returncode == 2 and "unreachable" in down.stderr
    assert "Traceback" not in down.stderr
    assert not (tmp_path / "none").exists()  # over HTTP nothing local is read or made


@pytest.mark.slow
def test_now_is_a_payload_timestamp() -> None:
    fine = bureau_cli("now").stdout.strip()
    seconds = bureau_cli("now", "--seconds").stdout.strip()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", fine), fine
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", seconds), seconds
    then = dt.datetime.fromisoformat(fine.replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.UTC) - then).total_seconds()) < 60


def _fake_venv(tmp_path: Path) -> Path:
    """A VENV for make whose bin is this interpreter's, its install stamp in place."""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.executable).parent)
    stamp = subprocess.run(["cksum", str(ROOT / "pyproject.toml")], capture_output=True,
                           text=True, check=True).stdout.split()[0]
    (venv / f".installed-{stamp}").touch()
    return venv


@pytest.mark.slow
def test_first_make_run_says_it_is_installing(tmp_path: Path) -> None:
    dry = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(ROOT), "run",
                          f"VENV={tmp_path / 'v'}"], capture_output=True, text=True,
                         check=True).stdout
    first = dry.splitlines()[0]
    assert "installing into" in first and "first run only, about a minute" in first


@pytest.mark.slow
async def test_make_demo_prints_the_export_line_and_serve_its_stop_line(
        database_url: str, tmp_path: Path) -> None:
    venv = _fake_venv(tmp_path)
    home = tmp_path / "demo-home"
    env = dict(os.environ, BUREAU_DATABASE_URL=database_url)
    env.pop("BUREAU_HOME", None)
    log = tmp_path / "demo.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            ["make", "-s", "--no-print-directory", "-C", str(ROOT), "demo", f"VENV={venv}",
             f"DEMO_HOME={home}", f"PORT={free_port()}", f"OPS_PORT={free_port()}"],
            env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while "serving on" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            await asyncio.sleep(0.2)
        text = log.read_text()
        assert f"  export BUREAU_HOME={home}\n" in text
        assert text.index("export BUREAU_HOME=") < text.index("serving on")
        assert f"ledger at {ledger_line.where(Config(home=home, database_url=database_url))}" \
            in text
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        await asyncio.to_thread(proc.wait, 60)
    assert_plain(log.read_text())
    stop = [line for line in log.read_text().splitlines() if "bureau serve: stopped" in line]
    assert len(stop) == 1, log.read_text()[-2000:]
    assert re.search(r"stopped on SIGINT: \d+ entr(y|ies) appended while it ran, 1 entry in "
                     r"the ledger at postgresql://.*; 1 entry waits for the seal of its epoch",
                     stop[0]), stop


@pytest.mark.slow
async def test_a_closed_pipe_is_no_traceback(bureau: BureauUnderTest, tmp_path: Path) -> None:
    """``bureau report AGENT | head -1``: the reader stops reading; no traceback. Here
    standard output is a pipe whose reading end is already closed, so every write
    fails as it would once ``head`` has exited."""
    agent = await _agent_with_a_report(bureau)
    code = ("import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
            "from bureau.cli import main; "
            f"sys.exit(main(['report', '--url', {bureau.url!r}, {agent!r}]))")

    def piped() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code], env=_env(bureau, tmp_path),
                              capture_output=True, text=True, timeout=120)

    done = await asyncio.to_thread(piped)
    assert done.returncode == 141 and "Traceback" not in done.stderr, done.stderr
