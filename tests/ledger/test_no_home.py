"""A command that only reads, run where there is no bureau (issue 12: ``bureau verify``
outside a bureau home started a new embedded database and died with a traceback): one
line saying so, a non-zero exit, and nothing created — no directory, no database, no
key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reporters import wire
from tests.processes import BUREAU, bureau_env
from tests.support import BureauUnderTest

pytestmark = pytest.mark.slow

READ_ONLY = [["verify"], ["report", wire.signing_key_id(wire.generate_key())],
             ["report", wire.signing_key_id(wire.generate_key()), "--epoch", "3"],
             ["rebuild"]]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BUREAU, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def _no_bureau_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUREAU_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(extra)
    return env


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: "-".join(a[:1] + a[2:]))
def test_a_read_only_command_where_there_is_no_bureau_says_so_and_makes_nothing(
        args: list[str], tmp_path: Path) -> None:
    key = tmp_path / "keys" / "signing.key"
    key.parent.mkdir()
    key.write_text(wire.key_to_pem(wire.generate_key()))
    before = _tree(tmp_path)
    for env in (_no_bureau_env(),  # the default home, ./.bureau, does not exist
                _no_bureau_env(BUREAU_HOME=str(tmp_path / "nowhere")),
                _no_bureau_env(BUREAU_HOME=str(tmp_path / "keys"),
                               BUREAU_SIGNING_KEY=str(key))):  # a home without a database
        result = _run(args, tmp_path, env)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "no bureau here" in lines[0], result.stderr
        assert lines[0].startswith(f"bureau {args[0]}: ")
        assert "Traceback" not in result.stderr and result.stdout == ""
        assert _tree(tmp_path) == before


def test_an_unreachable_database_is_one_line_too(tmp_path: Path) -> None:
    env = _no_bureau_env(BUREAU_DATABASE_URL="postgresql://nobody@127.0.0.1:9/none")
    result = _run(["verify"], tmp_path, env)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "cannot read the bureau's database" in result.stderr
    assert _tree(tmp_path) == []


async def test_verify_still_reads_an_existing_bureau(bureau: BureauUnderTest,
                                                     tmp_path: Path) -> None:
    """The check does not stand in the way of a bureau that exists (here, by URL)."""
    env = bureau_env(bureau.database_url, tmp_path, wire.signing_key_id(bureau.admin))
    result = _run(["verify"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert "bureau verify: ok, 1 entry," in result.stdout
