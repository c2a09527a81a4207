"""``bureau-check``: verify a bureau's reports, proofs and tree heads from anywhere.

    bureau-check report URL AGENT [--epoch E] [--envelope FILE]
    bureau-check inclusion URL ENTRY_ID [--note FILE] [--seq N]
    bureau-check consistency URL OLD_NOTE [NEW_NOTE]
    bureau-check monitor URL --state FILE [--interval S] [--once | --count N]
    bureau-check file URL --key AGENT_KEY_FILE [--epoch E]
    bureau-check settlement URL EPOCH [--key EVALUATOR_KEY_FILE]
    bureau-check links URL AGENT [--epoch E] [--mcp-registry URL] [--cafile FILE]
    bureau-check bundle FILE --key VKEY [--witness VKEY --quorum N] [--agent A] [--epoch E]
    bureau-check card FILE --key VKEY [--witness VKEY --quorum N] [--agent A] [--epoch E]

``bundle`` and ``card`` need no network: they check a file against the keys given
(reporters.check.offline). Every other command takes ``--bureau-key KEYID`` or
``--vkey VKEY`` (pin the bureau's key: it must be in the key history ``/v1/bureau``
serves; without either, that history is used and the output says so; every signature
is checked against the key in force where it stands),
``--witness VKEY`` (repeatable) with ``--threshold N``, ``--timeout S`` and ``--json``.
Exit status: 0 verified, 1 something the bureau served does not verify (the output says
what), 2 nothing could be verified (unreachable, an error answer, bad input).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp

from reporters import BureauClientError, load_key
from reporters._internal import wording
from reporters.check.bureau import CAPS, Bureau, CannotCheck, CheckFailed, Trust
from reporters.check.checks import (
    Checking,
    Outcome,
    Witnessing,
    check_consistency,
    check_file,
    check_inclusion,
    check_report,
    check_settlement,
)
from reporters.check.files import read_at_most
from reporters.check.links import MCP_REGISTRY, Fetching, check_links
from reporters.check.monitor import monitor_step
from reporters.check.offline import add_commands
from reporters.check.offline import run as run_offline
from reporters.check.text import one_line

OK, FAILED, CANNOT = 0, 1, 2


def _read(path: str, what: str, kind: str) -> bytes:
    """A file (or ``-``, standard input) no larger than a bureau's answer of that kind."""
    try:
        data = read_at_most(path, CAPS[kind])
    except OSError as exc:
        raise CannotCheck(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > CAPS[kind]:
        raise CannotCheck(f"{what} {path} is larger than any {kind} ({CAPS[kind]} bytes)")
    return data


def _text(path: str, what: str) -> str:
    try:
        return _read(path, what, "note").decode("utf-8")
    except UnicodeDecodeError:
        raise CheckFailed(f"{what} {path} is not UTF-8 text") from None


class Printer:
    """Human lines by default; with ``--json`` one JSON object a result."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def ok(self, out: Outcome) -> None:
        if self.as_json:
            self._json({"ok": True, "command": out.command, "trust": out.trust.as_json(),
                        "steps": out.steps, **out.facts})
            return
        print(f"bureau-check {out.command}: OK")
        print(f"  bureau key {out.trust.key_id}: {out.trust.source}")
        for step in out.steps:
            print(f"  ok  {step}")

    def failed(self, command: str, result: str, message: str, trust: Trust | None) -> None:
        message = one_line(message)
        if self.as_json:
            self._json({"ok": False, "command": command, "result": result, "error": message,
                        "trust": trust.as_json() if trust else None})
            return
        word = "FAILED" if result == "failed" else "CANNOT CHECK"
        print(f"bureau-check {command}: {word}: {message}")
        if trust is not None:
            print(f"  bureau key {trust.key_id}: {trust.source}")

    def _json(self, doc: dict[str, Any]) -> None:
        print(json.dumps(doc, sort_keys=True), flush=True)


async def _run(args: argparse.Namespace, printer: Printer) -> int:
    witnessing = Witnessing(tuple(args.witness), args.threshold)
    async with aiohttp.ClientSession() as session:
        bureau = Bureau(args.url, session, args.timeout)
        if args.command == "monitor":
            return await _monitor(args, bureau, witnessing, printer)
        trust: Trust | None = None
        try:
            trust = await bureau.trust(args.bureau_key, args.vkey)
            out = await _one(args, Checking(bureau, trust, witnessing))
        except CheckFailed as exc:
            printer.failed(args.command, "failed", str(exc), trust)
            return FAILED
        except CannotCheck as exc:
            printer.failed(args.command, "cannot_check", str(exc), trust)
            return CANNOT
        except Exception as exc:  # a bug here must still end in one line and exit 2
            printer.failed(args.command, "cannot_check", _unexpected(exc), trust)
            return CANNOT
        printer.ok(out)
        return OK


def _unexpected(exc: BaseException) -> str:
    return f"unexpected error in bureau-check (a bug): {type(exc).__name__}: {exc}"


async def _one(args: argparse.Namespace, checking: Checking) -> Outcome:
    if args.command == "report":
        envelope = _read(args.envelope, "the report", "report") if args.envelope else None
        out, _ = await check_report(checking, args.agent, epoch=args.epoch, envelope=envelope)
        return out
    if args.command == "inclusion":
        note = _text(args.note, "the note") if args.note else None
        return await check_inclusion(checking, args.entry, note=note, seq=args.seq)
    if args.command == "links":
        try:
            context = ssl.create_default_context(cafile=args.cafile) if args.cafile else None
        except (OSError, ssl.SSLError) as exc:
            raise CannotCheck(f"--cafile {args.cafile}: {exc}") from None
        how = Fetching(args.mcp_registry, context, args.timeout)
        return await check_links(checking, args.agent, how, epoch=args.epoch)
    if args.command == "consistency":
        new = _text(args.new_note, "the note") if args.new_note else None
        return await check_consistency(checking, _text(args.old_note, "the note"), new)
    try:
        key = load_key(args.key) if args.key is not None else None
    except BureauClientError as exc:
        raise CannotCheck(f"--key {args.key}: {exc.detail}") from None
    if args.command == "settlement":
        return await check_settlement(checking, args.epoch, key=key)
    assert key is not None  # file's --key is required
    return await check_file(checking, key, epoch=args.epoch)


async def _monitor(args: argparse.Namespace, bureau: Bureau, witnessing: Witnessing,
                   printer: Printer) -> int:
    """Check every ``--interval`` seconds; stop at the first inconsistency (1), after
    ``--count`` checks or with ``--once`` (0, or 2 if the last one could not check)."""
    trust: Trust | None = None
    done = 0
    while True:
        try:
            if trust is None:
                trust = await bureau.trust(args.bureau_key, args.vkey)
            printer.ok(await monitor_step(bureau, trust, Path(args.state), witnessing))
            status = OK
        except CheckFailed as exc:
            printer.failed("monitor", "failed", str(exc), trust)
            return FAILED
        except CannotCheck as exc:
            printer.failed("monitor", "cannot_check", str(exc), trust)
            status = CANNOT
        except Exception as exc:  # a bug: one line, and the monitor keeps its state
            printer.failed("monitor", "cannot_check", _unexpected(exc), trust)
            status = CANNOT
        done += 1
        if args.once or (args.count is not None and done >= args.count):
            return status
        await asyncio.sleep(args.interval)


def _nonnegative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not 0 < value < 1e9:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = argparse.ArgumentParser(prog="bureau-check", description=wording.plain(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_log_checks(sub, common)
    _add_party_checks(sub, common)
    add_commands(sub)
    return parser


def _common_options() -> argparse.ArgumentParser:
    """The options every online check takes: which keys to trust, the witnesses, the
    timeout, the output."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bureau-key", metavar="KEYID",
                        help="pin the bureau's key id (ed25519:...)")
    common.add_argument("--vkey", help="pin the bureau's note verifier key (from "
                        "/v1/bureau, kept out of band)")
    common.add_argument("--witness", action="append", default=[], metavar="VKEY",
                        help="a witness's cosignature vkey (repeatable)")
    common.add_argument("--threshold", type=_nonnegative, default=0,
                        help="how many of the --witness keys must have cosigned (default 0)")
    common.add_argument("--timeout", type=_positive_float, default=30.0,
                        help="seconds for each HTTP request, its whole answer read "
                        "(default 30)")
    common.add_argument("--json", action="store_true", help="one JSON object a result")
    return common


def _add_log_checks(sub: Any, common: argparse.ArgumentParser) -> None:
    """``report``, ``inclusion``, ``consistency``, ``monitor``: what the bureau publishes
    and its log."""
    report = sub.add_parser("report", parents=[common],
                            help="verify an agent's report, its checkpoint and tree")
    report.add_argument("url", help="the bureau's base URL")
    report.add_argument("agent", help="the agent's key id")
    report.add_argument("--epoch", type=_nonnegative, help="a sealed epoch (default: the "
                        "latest)")
    report.add_argument("--envelope", metavar="FILE", help="verify this report envelope "
                        "(a file, or - for standard input) instead of fetching it")
    inclusion = sub.add_parser("inclusion", parents=[common],
                               help="prove that an entry is in the log")
    inclusion.add_argument("url", help="the bureau's base URL")
    inclusion.add_argument("entry", help="the entry id")
    inclusion.add_argument("--note", metavar="FILE", help="a checkpoint note kept earlier "
                           "(default: the latest, GET /checkpoint)")
    inclusion.add_argument("--seq", type=_positive, help="the entry's seq (a receipt's): "
                           "the proof must place it there")
    consistency = sub.add_parser("consistency", parents=[common],
                                 help="check that two checkpoint notes are one history")
    consistency.add_argument("url", help="the bureau's base URL")
    consistency.add_argument("old_note", help="a checkpoint note (file, or - for stdin)")
    consistency.add_argument("new_note", nargs="?", help="a later note (default: the latest)")
    monitor = sub.add_parser("monitor", parents=[common],
                             help="follow /checkpoint; fail on any inconsistency")
    monitor.add_argument("url", help="the bureau's base URL")
    monitor.add_argument("--state", required=True, metavar="FILE",
                         help="where the last verified head is kept between checks and runs")
    monitor.add_argument("--interval", type=_positive_float, default=10.0,
                         help="seconds between checks (default 10)")
    how_long = monitor.add_mutually_exclusive_group()
    how_long.add_argument("--once", action="store_true", help="check once and exit")
    how_long.add_argument("--count", type=_nonnegative, help="check this many times")


def _add_party_checks(sub: Any, common: argparse.ArgumentParser) -> None:
    """``file``, ``settlement``, ``links``: what one party can check of its own (with its
    key) or of an agent's claims."""
    file = sub.add_parser("file", parents=[common],
                          help="as an agent: check your report against your own file")
    file.add_argument("url", help="the bureau's base URL")
    file.add_argument("--key", required=True, help="the agent's key file (PKCS#8 PEM)")
    file.add_argument("--epoch", type=_nonnegative, help="a sealed epoch (default: the "
                      "latest)")
    settlement = sub.add_parser("settlement", parents=[common],
                                help="verify an epoch's settlement of the evaluators' pool, "
                                     "and with --key your own share")
    settlement.add_argument("url", help="the bureau's base URL")
    settlement.add_argument("epoch", type=_nonnegative, help="a sealed epoch with a pool")
    settlement.add_argument("--key", help="the evaluator's key file (PKCS#8 PEM): fetch "
                            "its own row and check it against the root and the pool")
    links = sub.add_parser("links", parents=[common],
                           help="confirm an agent's links from the other side")
    links.add_argument("url", help="the bureau's base URL")
    links.add_argument("agent", help="the agent's key id")
    links.add_argument("--epoch", type=_nonnegative, help="a sealed epoch (default: the "
                       "latest)")
    links.add_argument("--mcp-registry", default=MCP_REGISTRY, metavar="URL",
                       help=f"the MCP registry to look servers up in (default {MCP_REGISTRY})")
    links.add_argument("--cafile", metavar="FILE", help="trust these CA certificates (PEM) "
                       "when fetching agent cards and registry entries")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("bundle", "card"):
        if args.quorum > len(args.witness):
            print(f"bureau-check: --quorum {args.quorum} needs as many --witness keys",
                  file=sys.stderr)
            return CANNOT
        return run_offline(args)
    if args.threshold > len(args.witness):
        print(f"bureau-check: --threshold {args.threshold} needs as many --witness keys",
              file=sys.stderr)
        return CANNOT
    try:
        return asyncio.run(_run(args, Printer(args.json)))
    except KeyboardInterrupt:
        return CANNOT


if __name__ == "__main__":
    sys.exit(main())
