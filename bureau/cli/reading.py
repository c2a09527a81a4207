"""The frame of the commands that only read a ledger (``bureau verify``, ``rebuild``,
``report``, ``status``, ``mirror``, ``erc8004``): which database they read, and what they
say when there is none."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from bureau import ledger_line
from bureau.config import Config
from bureau.errors import InternalError
from bureau.storage import db


def database_url(config: Config) -> str:
    """The configured database, or the embedded one under BUREAU_HOME."""
    if config.database_url:
        return config.database_url
    return db.embedded_database_url(config.home.resolve())


class NoBureau(InternalError):
    """A command that only reads was run where there is no bureau to read (``str()`` is
    the one line that says so)."""


def existing_database_url(config: Config) -> str:
    """For commands that only read: the configured database, or the embedded one of an
    existing bureau home — never a new one. Raises :class:`NoBureau` (creating nothing,
    starting nothing) when there is neither."""
    if config.database_url:
        return config.database_url
    home = config.home.resolve()
    if not db.has_embedded_database(home):
        raise NoBureau(f"no bureau here: {home} holds no bureau database and "
                       "BUREAU_DATABASE_URL is not set (set BUREAU_HOME to a bureau's home, "
                       "or BUREAU_DATABASE_URL to its database)")
    return db.embedded_database_url(home)


ReadOnly = Callable[[argparse.Namespace, str], Coroutine[Any, Any, int]]


def read_only(run: ReadOnly, *, announce: bool = True) -> Callable[[argparse.Namespace], int]:
    """A command that only reads the ledger: where there is no bureau, or its database
    cannot be reached, it says so in one line and exits 2 — no traceback, nothing made.
    With ``announce``, its first line (on standard error) says which ledger it reads."""
    def command(args: argparse.Namespace) -> int:
        name = f"bureau {args.command}"
        try:
            config = Config.from_env()
            url = existing_database_url(config)
            if not announce:
                return asyncio.run(run(args, url))
            return asyncio.run(_named(run, args, url, ledger_line.where(config)))
        except NoBureau as exc:
            print(f"{name}: {exc}", file=sys.stderr)
        except db.QUERY_ERRORS as exc:
            print(f"{name}: cannot read the bureau's database: {exc}".replace("\n", " "),
                  file=sys.stderr)
        return 2
    command.__doc__ = run.__doc__
    return command


async def _named(run: ReadOnly, args: argparse.Namespace, url: str, place: str) -> int:
    """``run``, after one line on standard error that says which ledger it reads."""
    conn = await db.connect(url)
    try:
        line = (await ledger_line.summary(conn, place)).line()
    finally:
        await conn.close()
    print(line, file=sys.stderr, flush=True)
    return await run(args, url)
