"""The ``bureau`` command's parser: every command's name and summary, known up front
(``bureau --help`` lists them), and each command's arguments, added by its own module
only when that command runs or its help is asked for.

So ``bureau --help`` imports no command at all, and a command imports only what it
needs: ``bureau serve`` pulls in aiohttp, asyncpg and the whole service, ``bureau keyid``
none of that. :func:`build_parser` builds every command's arguments at once (the tests
and the docs read them all); :func:`main <bureau.cli.main>` asks for them on demand.
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bureau import __version__
from bureau.http.params import KEY_ID


@dataclass(frozen=True)
class Command:
    """One ``bureau`` command: its name, its summary (``bureau --help``'s line, and the
    opening line of its own ``--help``), and ``module:function`` of what adds its
    arguments to its parser (and sets its ``func``)."""

    name: str
    summary: str
    arguments: str


COMMANDS = (
    Command("serve", "run the HTTP service", "bureau.cli.serve:add_arguments"),
    Command("keygen", "write a new Ed25519 key file, print its key id",
            "bureau.cli.keys:keygen_arguments"),
    Command("keyid", "print the key id of a key file", "bureau.cli.keys:keyid_arguments"),
    Command("sign", "sign a JSON payload file as a DSSE envelope",
            "bureau.cli.keys:sign_arguments"),
    Command("verify", "recompute every id, link and signature, and check every indexed "
            "column against the entry", "bureau.cli.ledger_commands:verify_arguments"),
    Command("rebuild", "re-derive every view and report from the entries; exit 0 when "
            "every byte came out identical", "bureau.cli.ledger_commands:rebuild_arguments"),
    Command("report", "print an agent's signed report, readably",
            "bureau.cli.ledger_commands:report_arguments"),
    Command("status", "where the bureau stands: ledger, size, seals, policy, key, "
            "witnesses, replicas, leaders", "bureau.cli.ledger_commands:status_arguments"),
    Command("now", "print the time now as payloads write it: an issued_at to the "
            "microsecond, or with --seconds an observed_at", "bureau.cli.keys:now_arguments"),
    # docs/operations.md#admin-commands
    Command("admin", "sign an admin payload with the admin key and post it to a bureau",
            "bureau.admin_cli:add_arguments"),
    Command("simulate", "drive a simulated population through the reporting proxy and "
            "print a table of every agent's report", "bureau.simulate.cli:add_arguments"),
    Command("erc8004", "ERC-8004 feedback from the bureau's sealed reports",  # docs/interop.md
            "bureau.interop.cli:add_arguments"),
    Command("mirror", "write every public read (tiles, checkpoint, each epoch's reports, "
            "bundles and cards, pages) as files in DIR, for a static web server or an "
            "object store", "bureau.mirror.cli:add_arguments"),
)


def key_id(text: str) -> str:
    if re.fullmatch(KEY_ID, text) is None:
        raise argparse.ArgumentTypeError("not a key id (ed25519: and 43 base64url characters)")
    return text


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("a port is 0 to 65535 (0: any free port)")
    return value


def epoch(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("an epoch is 0 or more")
    return value


class _HelpFormatter(argparse.HelpFormatter):
    """Help that shows every default a flag has, unless its text already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (action.default in (None, False, argparse.SUPPRESS) or "default" in text
                or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """Every ``bureau`` parser, subcommands included: the same help formatter."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def _add_arguments(command: Command, parser: argparse.ArgumentParser) -> None:
    module, _, function = command.arguments.partition(":")
    adder: Callable[[argparse.ArgumentParser], None] = getattr(
        importlib.import_module(module), function)
    adder(parser)


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    _SubParsers = argparse._SubParsersAction


class _Commands(_SubParsers):
    """The subcommands, each given its arguments the first time it is parsed."""

    #: name -> the command whose arguments are still to be added
    pending: dict[str, Command]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None,
                 ) -> None:
        assert isinstance(values, list) and values
        self.complete(values[0])
        super().__call__(parser, namespace, values, option_string)

    def complete(self, name: str) -> None:
        """Add command ``name``'s arguments, unless they are there already (or there is
        no such command: the parse then says so)."""
        command = self.pending.pop(name, None)
        if command is not None:
            _add_arguments(command, self.choices[name])


_EPILOG = """environment: BUREAU_HOME (default ./.bureau), BUREAU_DATABASE_URL (default: an embedded
PostgreSQL under BUREAU_HOME), BUREAU_EPOCH_SECONDS (default 21600; 30 for a quick demo),
BUREAU_PUBLIC_URL, BUREAU_ADMIN_KEYS, BUREAU_SIGNING_KEY and more: docs/operations.md.
"bureau COMMAND --help" describes one command."""


def build_parser(*, on_demand: bool = False) -> argparse.ArgumentParser:
    """The ``bureau`` command's parser, with every command's arguments; with
    ``on_demand``, only the one command that is parsed gets its arguments (and only its
    module is imported)."""
    parser = _Parser(prog="bureau", epilog=_EPILOG,
                     description="The Agent Reputation Bureau: run the service, make and "
                     "sign keys, check and\nrebuild the ledger, read reports, simulate.")
    parser.formatter_class = lambda prog: argparse.RawDescriptionHelpFormatter(prog)
    parser.add_argument("--version", action="version", version=f"bureau {__version__}")
    parser.register("action", "parsers", _Commands)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    assert isinstance(sub, _Commands)
    sub.pending = {}
    for command in COMMANDS:  # each command's --help opens with its summary
        sub.add_parser(command.name, help=command.summary, description=command.summary)
        sub.pending[command.name] = command
    if not on_demand:
        for command in COMMANDS:
            sub.complete(command.name)
    return parser
