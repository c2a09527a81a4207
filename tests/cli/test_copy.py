"""Every command's ``--help``, and what the commands print in the suite's scenarios,
read as plain words: no reStructuredText, no "1 entries" (issue 24, row 8)."""

from __future__ import annotations

import argparse
import io
import re
from collections.abc import Iterator
from contextlib import redirect_stdout

import pytest

from bureau.cli import build_parser as bureau_parser
from bureau.ledger_line import LedgerSummary
from reporters._internal.wording import count, plain
from reporters.check.cli import build_parser as check_parser
from reporters.proxy.cli import build_parser as reporter_parser
from tests.copy import assert_plain, copy_faults


def _parsers(parser: argparse.ArgumentParser, prog: str
             ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{prog} {name}")


HELP = [*_parsers(bureau_parser(), "bureau"), *_parsers(reporter_parser(), "bureau-reporter"),
        *_parsers(check_parser(), "bureau-check")]


@pytest.mark.parametrize(("prog", "parser"), HELP, ids=[p for p, _ in HELP])
def test_every_help_is_plain(prog: str, parser: argparse.ArgumentParser) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        parser.print_help()
    text = out.getvalue()
    assert text.startswith(f"usage: {prog}")
    assert_plain(text)
    # no run of spaces inside a command line (a docstring's line continuation eats the
    # newline and leaves the next line's indent: "./spool         [--since …]")
    for line in text.splitlines():
        if line.lstrip().startswith(prog.split()[0]):
            assert not re.search(r"\S {3,}[\[-]", line.strip()), line


def test_the_checker_finds_what_it_looks_for() -> None:
    assert copy_faults("ok, 1 entries checked") and copy_faults("see ``bureau``")
    assert copy_faults("by :func:`add_command`")
    assert not copy_faults("ok, 1 entry, 21 entries, 1.5 interactions, 2 facts")


def test_counted_words() -> None:
    assert count(1, "entry") == "1 entry" and count(2, "entry") == "2 entries"
    assert count(1, "fact") == "1 fact" and count(0, "interaction") == "0 interactions"
    assert count(3, "standby", "standbys") == "3 standbys"
    assert plain("``x`` and :func:`y` and :class:`~a.B`") == "x and y and a.B"
    assert_plain(LedgerSummary("./h", 30, 1, None).line())
