"""The ``bureau`` command: run the service, make and sign keys, check and rebuild the
ledger, read reports, simulate (docs/operations.md#command-line).

One module per idea: :mod:`~bureau.cli.parser` (every command's name and summary; its
arguments are added, and its module imported, only when it runs), :mod:`~bureau.cli.serve`
(``bureau serve``), :mod:`~bureau.cli.supervisor` (``serve --workers N``'s other
processes), :mod:`~bureau.cli.reading` (the frame of the commands that only read a
ledger), :mod:`~bureau.cli.ledger_commands` (``verify``, ``rebuild``, ``report``,
``status``) and :mod:`~bureau.cli.keys` (``keygen``, ``keyid``, ``sign``, ``now``).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from bureau.cli.parser import build_parser as build_parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    args = build_parser(on_demand=True).parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        result: int = args.func(args)
        sys.stdout.flush()  # here, not at exit, so a closed pipe is caught below
    except BrokenPipeError:  # `bureau report … | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a pipe's writer killed by SIGPIPE
    return result
