"""``bureau verify``, ``rebuild``, ``report`` and ``status``: what a ledger holds, checked,
re-derived and read — from the ledger here, or (``report``, ``status``) from a running
bureau over HTTP."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bureau import keyfiles
from bureau.cli.parser import epoch, key_id
from bureau.cli.reading import read_only
from bureau.config import Config
from bureau.report_text import render_report, report_json
from bureau.storage import db
from bureau.verify import BadEntry, BadSettlement, BadTree, terminal_progress, verify_database
from reporters._internal import wording


def verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help='print {"ok", "entries"} or {"ok": false, "seq", "reason"} as '
                        "JSON on standard output")
    parser.set_defaults(func=cmd_verify)


def rebuild_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(func=cmd_rebuild)


def report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", type=key_id, help="the agent's key id")
    parser.add_argument("--epoch", type=epoch, default=None,
                        help="a sealed epoch (default: the latest)")
    parser.add_argument("--url", default=None,
                        help="read a running bureau at this base URL over HTTP, checking the "
                        "report's signature (default: the ledger under BUREAU_HOME)")
    parser.add_argument("--json", action="store_true",
                        help='print {"envelope", "report", "epoch_start"} as JSON: the '
                        "signed envelope, its decoded payload, the epoch's UTC start")
    parser.set_defaults(func=cmd_report)


def status_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default=None,
                        help="a running bureau's base URL, read over HTTP (default: the "
                        "ledger under BUREAU_HOME)")
    parser.add_argument("--spool", action="append", default=[], metavar="OPS_URL",
                        help="a proxy's or prober's ops listener, whose /metrics gives its "
                        "spool's depth (repeatable)")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.set_defaults(func=cmd_status)


async def _verify(args: argparse.Namespace, url: str) -> int:
    """Re-read the whole ledger and check every entry (bureau.verify)."""
    conn = await db.connect(url)
    try:
        count = await verify_database(conn, terminal_progress)
    except BadEntry as bad:
        return _verify_failed(args, f"FAILED at entry seq {bad.seq}: {bad.reason}",
                              {"ok": False, "seq": bad.seq, "reason": bad.reason})
    except (BadTree, BadSettlement) as bad:
        return _verify_failed(args, f"FAILED: {bad.reason}",
                              {"ok": False, "seq": None, "reason": bad.reason})
    finally:
        await conn.close()
    if args.json:
        print(json.dumps({"ok": True, "entries": count}))
    else:
        print(f"bureau verify: ok, {wording.count(count, 'entry')}, every id, link, signature "
              "and indexed column checked, every tree node and signed tree head recomputed, "
              "every settlement added up")
    return 0


def _verify_failed(args: argparse.Namespace, text: str, doc: dict[str, Any]) -> int:
    """A failed verification: one line on stderr, or with ``--json`` the document on
    stdout (a script reads one place); exit 1 either way."""
    if args.json:
        print(json.dumps(doc))
    else:
        print(f"bureau verify: {text}", file=sys.stderr)
    return 1


cmd_verify = read_only(_verify)


def _rebuild_progress(step: str) -> None:
    """Each step of a rebuild as it starts, on stderr when it is a terminal (a rebuild
    takes as long as the first seal of every epoch)."""
    if sys.stderr.isatty():
        print(f"bureau rebuild: {step}", file=sys.stderr, flush=True)


async def _rebuild(url: str, signing_path: Path) -> int:
    from bureau.intake import genesis
    from bureau.transparency.heads import LogKey
    from bureau.views.rebuild import rebuild
    from reporters.tlog.checkpoint import default_origin

    key = keyfiles.read_key(signing_path)
    conn = await db.connect(url)
    try:
        await db.migrate(conn)
        settings = await genesis.read(conn)  # the log's origin is the ledger's
        origin = settings.origin if settings else default_origin(bytes(key.verify_key))
        result = await rebuild(conn, key, LogKey.of(origin, key), _rebuild_progress)
    finally:
        await conn.close()
    print(f"bureau rebuild: {wording.count(result.entries, 'entry')} replayed, "
          f"{wording.count(result.reports, 'report')} and "
          f"{wording.count(result.epochs, 'checkpoint')} signed")
    if result.unfinished:
        print(f"bureau rebuild: epochs {', '.join(map(str, result.unfinished))} were still "
              "being built by the service: derived, not compared (nothing finished to "
              "compare with)")
    if result.kept:
        print(f"bureau rebuild: epochs {', '.join(map(str, result.kept))} were signed by an "
              "earlier bureau key: their reports and checkpoints were kept, not re-signed")
    if not result.identical:
        for line in result.differences:
            print(f"bureau rebuild: DIFFERENT: {line}", file=sys.stderr)
        return 1
    print("bureau rebuild: identical: every derived row and every signed byte")
    return 0


async def _rebuild_checked(args: argparse.Namespace, url: str) -> int:
    """Re-derive every view from the entries, once the bureau's signing key is found."""
    config = Config.from_env()
    signing = config.signing_key_path or config.home / "signing.key"
    if not signing.exists():
        print(f"bureau rebuild: no signing key at {signing} (set BUREAU_SIGNING_KEY): "
              "reports are signed with the bureau's own key", file=sys.stderr)
        return 2
    return await _rebuild(url, signing)


cmd_rebuild = read_only(_rebuild_checked)


async def _report(args: argparse.Namespace, url: str) -> int:
    """Print an agent's signed report."""
    from bureau.intake import genesis
    from bureau.storage.reports import report_envelope

    agent, epoch = args.agent, args.epoch

    conn = await db.connect(url)
    try:
        envelope = await report_envelope(conn, agent, epoch)
        settings = await genesis.read(conn)
    finally:
        await conn.close()
    return _print_report(args, envelope, settings.epoch_seconds if settings else 0)


def _print_report(args: argparse.Namespace, envelope: bytes | None, epoch_seconds: int) -> int:
    """The report as text or ``--json``; exit 1 saying so when there is none."""
    if envelope is None or not epoch_seconds:
        where = "at the latest sealed epoch" if args.epoch is None else f"at epoch {args.epoch}"
        print(f"bureau report: no report for {args.agent} {where}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report_json(envelope, epoch_seconds), indent=2))
    else:
        print(render_report(envelope, epoch_seconds))
    return 0


_report_ledger = read_only(_report)


def cmd_report(args: argparse.Namespace) -> int:
    """Print an agent's signed report: from the ledger here, or from a running bureau
    (``--url``) like any client."""
    if args.url is None:
        return _report_ledger(args)
    from bureau import remote

    try:
        info, envelope = asyncio.run(remote.signed_report(args.url, args.agent, args.epoch))
    except remote.RemoteError as exc:
        print(f"bureau report: {exc}", file=sys.stderr)
        return 2
    print(remote.bureau_line(args.url, info), file=sys.stderr, flush=True)
    return _print_report(args, envelope, int(info["epoch_seconds"]))


async def _local_status(args: argparse.Namespace, url: str) -> int:
    """Where the bureau of this ledger stands (bureau.status)."""
    from bureau import status

    conn = await db.connect(url)
    try:
        doc = await status.local(conn, Config.from_env())
    finally:
        await conn.close()
    doc["spools"] = await status.spools(args.spool)
    print(json.dumps(doc, indent=2) if args.json else status.render(doc))
    return 0


_status_ledger = read_only(_local_status, announce=False)


def cmd_status(args: argparse.Namespace) -> int:
    if args.url is None:
        return _status_ledger(args)
    from bureau import remote, status

    try:
        doc = asyncio.run(status.remote(args.url))
        doc["spools"] = asyncio.run(status.spools(args.spool))
    except remote.RemoteError as exc:
        print(f"bureau status: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(doc, indent=2) if args.json else status.render(doc))
    return 0
