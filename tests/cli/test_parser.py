"""The ``bureau`` parser gives each command its arguments only when that command is
parsed (issue 33: ``bureau --help`` took 2.6 s importing the whole service and client
library; it imports no command now). The commands parse and help as they did when every
command was built up front."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stdout

import pytest

from bureau.cli.parser import COMMANDS, build_parser

#: what no command's listing may import: the service's and the client library's weight
HEAVY = ("aiohttp", "asyncpg", "pydantic", "nacl", "reporters", "prometheus_client")


def _help(argv: list[str]) -> str:
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        build_parser(on_demand=True).parse_args(argv)
    return out.getvalue()


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_a_command_parsed_on_demand_is_the_command_built_up_front(command: str) -> None:
    whole = build_parser()
    sub = next(a for a in whole._actions if a.dest == "command")
    assert _help([command, "--help"]) == sub.choices[command].format_help()  # type: ignore[index]


def test_the_listing_is_the_same_either_way() -> None:
    assert _help(["--help"]) == build_parser().format_help()


def test_a_command_gets_its_arguments_once() -> None:
    parser = build_parser(on_demand=True)
    assert parser.parse_args(["serve", "--port", "1"]).port == 1
    assert parser.parse_args(["serve", "--port", "2"]).port == 2  # not added twice


@pytest.mark.slow
def test_the_listing_imports_no_command() -> None:
    code = ("import sys\nfrom bureau.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert "usage: bureau" in done.stdout
    loaded = set(done.stdout.splitlines()[-1].split())
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []
    assert {m for m in loaded if m.startswith("bureau.")} == {
        "bureau.cli", "bureau.cli.parser", "bureau.http", "bureau.http.params"}
