"""``bureau-check bundle FILE`` and ``bureau-check card FILE``: a report's proof bundle
or its card, checked with no network at all (:func:`reporters.verify_bundle`,
:func:`reporters.verify_card`).

The keys are the caller's: ``--key VKEY`` (the bureau's note vkey, from ``/v1/bureau``,
kept out of band; repeat it for a bureau that rotated its key), ``--witness VKEY`` and
``--quorum N``; ``--agent`` and ``--epoch`` say whose report, of which epoch, the file
must be. The result is one line when it fails (``FAILED``, exit 1: the file is not what
it must be; ``CANNOT CHECK``, exit 2: it cannot be read), or the steps verified and,
each on a line of its own, what could not be checked offline (consistency with the
bureau's latest head needs the network).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from reporters import VerificationError, strictjson, verify_bundle, verify_card, wire
from reporters._internal.portable import Carried
from reporters.check.files import read_at_most
from reporters.check.text import one_line
from reporters.portable import MAX_CARD_BYTES

OK, FAILED, CANNOT = 0, 1, 2
#: the largest file read: a bundle holds a report (at most 256 KiB) and a few KB more
CAPS = {"bundle": 512 * 1024, "card": 64 * 1024}


def _read(path: str, kind: str) -> bytes:
    try:
        data = read_at_most(path, CAPS[kind])
    except OSError as exc:
        raise _Cannot(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > CAPS[kind]:
        raise VerificationError("BAD_BUNDLE", "", f"{path} is larger than any {kind} "
                                f"({CAPS[kind]} bytes)")
    return data


class _Cannot(Exception):
    pass


def _check(args: argparse.Namespace) -> Carried:
    data = _read(args.file, args.command)
    try:
        doc = strictjson.loads(data)
    except strictjson.StrictJSONError as exc:
        raise VerificationError("BAD_BUNDLE", "", f"{args.file} is not JSON ({exc}): "
                                "a truncated or damaged file?") from None
    if args.command == "card":
        _card_size(doc, args.file)
    check = verify_bundle if args.command == "bundle" else verify_card
    return check(doc, args.key, witnesses=args.witness, quorum=args.quorum,
                 agent=args.agent, epoch=args.epoch)


def _card_size(doc: Any, path: str) -> None:
    """A card's size is its canonical form's: whoever carries it may indent it again."""
    try:
        size = len(wire.canonical_json(doc))
    except wire.WireError as exc:
        raise VerificationError("BAD_BUNDLE", "", f"{path} is not a card: {exc}") from None
    if size > MAX_CARD_BYTES:
        raise VerificationError("BAD_BUNDLE", "", f"{path} is a document of {size} bytes "
                                f"as canonical JSON: a card is at most {MAX_CARD_BYTES}")


def _print(doc: dict[str, Any]) -> None:
    print(json.dumps(doc, sort_keys=True), flush=True)


def run(args: argparse.Namespace) -> int:
    """The command: check the file, print the result, return the exit status."""
    try:
        carried = _check(args)
    except VerificationError as exc:
        why = one_line(f"{exc.code}" + (f" at {exc.path}" if exc.path else "")
                       + f": {exc.detail}")
        if args.json:
            _print({"ok": False, "command": args.command, "result": "failed", "error": why})
        else:
            print(f"bureau-check {args.command}: FAILED: {why}")
        return FAILED
    except _Cannot as exc:
        if args.json:
            _print({"ok": False, "command": args.command, "result": "cannot_check",
                    "error": str(exc)})
        else:
            print(f"bureau-check {args.command}: CANNOT CHECK: {one_line(str(exc))}")
        return CANNOT
    if args.json:
        _print({"ok": True, "command": args.command, "steps": carried.steps,
                "unchecked": carried.unchecked, **carried.facts})
        return OK
    print(f"bureau-check {args.command}: OK (offline)")
    print(f"  trusted: the key{'s' if len(args.key) > 1 else ''} given with --key")
    for step in carried.steps:
        print(f"  ok  {step}")
    for item in carried.unchecked:
        print(f"  NOT CHECKED: {item}")
    return OK


def add_commands(sub: Any) -> None:
    """``bundle`` and ``card`` on the command's subparsers."""
    for name, what in (("bundle", "a report's proof bundle (GET /v1/agents/{agent}/proof)"),
                       ("card", "a report's compact card (GET /v1/agents/{agent}/card)")):
        cmd = sub.add_parser(name, help=f"verify {what} with no network")
        cmd.add_argument("file", help="the file, or - for standard input")
        cmd.add_argument("--key", action="append", required=True, metavar="VKEY",
                         help="the bureau's note vkey (from /v1/bureau, kept out of band; "
                         "repeatable)")
        cmd.add_argument("--witness", action="append", default=[], metavar="VKEY",
                         help="a witness's cosignature vkey (repeatable)")
        cmd.add_argument("--quorum", type=_count, default=0,
                         help="how many of the --witness keys must have cosigned (default 0)")
        cmd.add_argument("--agent", metavar="KEYID", help="the agent the file must be about")
        cmd.add_argument("--epoch", type=_count, help="the epoch the file must be of")
        cmd.add_argument("--json", action="store_true", help="one JSON object")


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value
