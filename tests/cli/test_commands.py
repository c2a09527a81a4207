"""The ``bureau`` command as a person and a script meet it: help without markup and with
defaults, ``--version``, ``--json`` that parses, a payload type that does not exist
refused, epochs shown with their UTC start."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.metadata
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bureau.http.keys import SEALER
from reporters import wire
from reporters.models import PAYLOAD_MODELS
from tests.processes import ServeProcess, bureau_env
from tests.support import BureauUnderTest, fact_payload, kid

COMMANDS = ["serve", "keygen", "keyid", "sign", "verify", "rebuild", "report", "simulate"]


def bureau_cli(*args: str, env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bureau.cli", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


async def bureau_cli_async(*args: str, env: dict[str, str] | None = None,
                           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """:func:`bureau_cli` from a test that runs a bureau in its own event loop: on a
    thread, so the bureau keeps serving (a loop blocked for seconds leaves its leaders'
    connections unanswered, and the pool then never closes)."""
    return await asyncio.to_thread(bureau_cli, *args, env=env, timeout=timeout)


@pytest.mark.parametrize("command", [None, *COMMANDS])
@pytest.mark.slow
def test_help_is_plain_text(command: str | None) -> None:
    done = bureau_cli(*([command] if command else []), "--help")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    # no reStructuredText, no references to documents a user does not have
    for markup in ("``", ":func:", ":class:", "SPEC", "§"):
        assert markup not in text, (command, markup)
    assert text.startswith(f"usage: bureau{' ' + command if command else ''}")
    if command is not None:  # each command's help says what it does before its flags
        assert text.split("\n\n")[1].strip()


@pytest.mark.slow
def test_top_level_help_names_every_command_and_the_environment() -> None:
    text = bureau_cli("--help").stdout
    for command in COMMANDS:
        assert f"\n    {command} " in text, command
    assert "BUREAU_EPOCH_SECONDS" in text and "BUREAU_HOME" in text


@pytest.mark.slow
def test_help_shows_defaults() -> None:
    serve = bureau_cli("serve", "--help").stdout
    assert "(default: 8080)" in serve and "(default: 127.0.0.1)" in serve
    assert "(default 9464" in serve
    simulate = bureau_cli("simulate", "--help").stdout
    assert "(default: 400)" in simulate and "(default: 3)" in simulate


@pytest.mark.slow
def test_version_is_the_installed_version() -> None:
    done = bureau_cli("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == \
        f"bureau {importlib.metadata.version('agent-reputation-bureau')}"


@pytest.mark.slow
def test_sign_refuses_an_unknown_type_naming_the_valid_ones(tmp_path: Path) -> None:
    key = tmp_path / "k.key"
    assert bureau_cli("keygen", str(key)).returncode == 0
    payload = tmp_path / "fact.json"
    payload.write_text("{}")
    done = bureau_cli("sign", "--key", str(key), "--type", "facts", str(payload))
    assert done.returncode == 2 and done.stdout == ""
    assert "invalid choice: 'facts'" in done.stderr
    for name in PAYLOAD_MODELS:
        assert f"'{name}'" in done.stderr
    good = bureau_cli("sign", "--key", str(key), "--type", "fact", str(payload))
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["payloadType"] == wire.payload_type("fact")


async def _agent_with_a_report(bureau: BureauUnderTest) -> str:
    rep = await bureau.reporter(roles=("facts",))
    agent = wire.generate_key()
    for i in range(3):
        await bureau.accepted(rep, "fact", fact_payload(f"cli-{i}", kid(agent), check="PASS"))
    bureau.clock.advance(bureau.config.epoch_seconds)
    assert await bureau.app[SEALER].seal_once()
    return kid(agent)


def _env(bureau: BureauUnderTest, home: Path) -> dict[str, str]:
    return {"BUREAU_DATABASE_URL": bureau.database_url, "BUREAU_HOME": str(home),
            "PATH": "/usr/bin:/bin"}


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.slow
async def test_report_json_and_epoch_dates(bureau: BureauUnderTest, tmp_path: Path) -> None:
    agent = await _agent_with_a_report(bureau)
    env = _env(bureau, tmp_path)
    done = await bureau_cli_async("report", agent, "--json", env=env)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    assert set(doc) == {"envelope", "report", "epoch_start"}
    report = doc["report"]
    assert report["agent"] == agent and report["score"]["interactions"] == 3
    assert json.loads(wire.b64decode_canonical(doc["envelope"]["payload"])) == report
    start = _utc(doc["epoch_start"])
    assert start.timestamp() == report["epoch"] * bureau.config.epoch_seconds

    text = await bureau_cli_async("report", agent, env=env)
    assert text.returncode == 0, text.stderr
    shape = "%Y-%m-%d %H:%M:%S" if bureau.config.epoch_seconds % 60 else "%Y-%m-%d %H:%M"
    assert f"epoch {report['epoch']} (from {start.strftime(shape)} UTC)" in text.stdout
    assert "0.5 no evidence" in text.stdout


@pytest.mark.slow
async def test_verify_json(bureau: BureauUnderTest, tmp_path: Path) -> None:
    await _agent_with_a_report(bureau)
    env = _env(bureau, tmp_path)
    done = await bureau_cli_async("verify", "--json", env=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["ok"] is True and doc["entries"] >= 5  # genesis, reporter, 3 facts, seal

    conn = await asyncpg.connect(bureau.database_url)
    try:  # change an entry behind the guard: verify names it, as JSON on standard output
        async with conn.transaction():
            await conn.execute("SET LOCAL session_replication_role = replica")
            await conn.execute("UPDATE entries SET epoch = epoch + 1 WHERE seq = 3")
    finally:
        await conn.close()
    bad = await bureau_cli_async("verify", "--json", env=env)
    assert bad.returncode == 1
    failed = json.loads(bad.stdout)
    assert failed["ok"] is False and failed["seq"] == 3 and failed["reason"]


@pytest.mark.slow
def test_simulate_json_parses(tmp_path: Path) -> None:
    done = bureau_cli("simulate", "--json", "--agents", "4", "--interactions", "60",
                      "--epochs", "1", "--epoch-seconds", "2",
                      env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, timeout=300)
    doc = json.loads(done.stdout)  # the document alone on standard output
    assert {a["kind"] for a in doc["agents"]} >= {"honest", "bluffer"}
    assert all(a["report"]["agent"] == a["key"] for a in doc["agents"] if a["report"])
    assert isinstance(doc["findings"], dict) and doc["epochs_sealed"]
    assert done.returncode == (0 if all(doc["findings"].values()) else 1)


@pytest.mark.parametrize(("args", "says"), [
    (["serve", "--port", "70000"], "a port is 0 to 65535"),
    (["serve", "--ops-port", "-1"], "a port is 0 to 65535"),
    (["serve", "--max-pending", "0"], "must be at least 1"),
    (["report", "ed25519:" + "A" * 43, "--epoch", "-3"], "an epoch is 0 or more"),
    (["report", "someone"], "not a key id"),
])
@pytest.mark.slow
def test_bad_arguments_are_refused_before_anything_starts(
        args: list[str], says: str, tmp_path: Path) -> None:
    done = bureau_cli(*args, env={"PATH": "/usr/bin:/bin", "BUREAU_HOME": str(tmp_path / "h")})
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (tmp_path / "h").exists()  # no bureau made, no database started


@pytest.mark.slow
async def test_serving_on_is_printed_once_the_database_is_ready(
        empty_database_url: str, tmp_path: Path) -> None:
    """A newcomer reads "serving on …" as "ready": it comes after every migration and
    the genesis entry, and the address it names answers."""
    admin = wire.generate_key()
    log = tmp_path / "serve.log"
    server = ServeProcess(bureau_env(empty_database_url, tmp_path / "home", kid(admin)), log)
    await server.start()
    try:
        deadline = time.monotonic() + 60
        while "serving on" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            await asyncio.sleep(0.1)
    finally:
        server.stop()
    lines = log.read_text().splitlines()
    serving = next(i for i, line in enumerate(lines) if "serving on" in line)
    migrations = [i for i, line in enumerate(lines) if "applied migration" in line]
    genesis = next(i for i, line in enumerate(lines) if "genesis entry written" in line)
    assert migrations and max(migrations) < serving and genesis < serving
    assert f"serving on http://127.0.0.1:{server.port}" in lines[serving]
