"""``bureau keygen``, ``keyid``, ``sign`` and ``now``: the commands that need no bureau —
key files, a payload signed as an envelope, and the time as payloads write it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bureau import keyfiles
from reporters import wire


def keygen_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="where to write the PKCS#8 PEM key")
    parser.set_defaults(func=cmd_keygen)


def keyid_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a PKCS#8 PEM Ed25519 key file")
    parser.set_defaults(func=cmd_keyid)


def sign_arguments(parser: argparse.ArgumentParser) -> None:
    from reporters.models import PAYLOAD_MODELS

    parser.add_argument("--key", required=True, help="the signer's key file")
    parser.add_argument("--type", required=True, choices=sorted(PAYLOAD_MODELS),
                        metavar="TYPE", help="the payload's type, one of: "
                        + ", ".join(sorted(PAYLOAD_MODELS)))
    parser.add_argument("payload", help="payload file, or - for standard input")
    parser.set_defaults(func=cmd_sign)


def now_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", action="store_true", help="whole seconds (observed_at)")
    parser.set_defaults(func=cmd_now)


def cmd_keygen(args: argparse.Namespace) -> int:
    key = wire.generate_key()
    try:
        keyfiles.write_key(Path(args.path), key)
    except FileExistsError:
        print(f"bureau keygen: {args.path} exists; not overwriting it", file=sys.stderr)
        return 1
    print(wire.signing_key_id(key))
    return 0


def cmd_sign(args: argparse.Namespace) -> int:
    """Sign a payload file as a DSSE envelope; the payload bytes are signed as they are."""
    key = keyfiles.read_key(Path(args.key))
    body = sys.stdin.buffer.read() if args.payload == "-" else Path(args.payload).read_bytes()
    envelope = wire.sign_envelope(key, wire.payload_type(args.type), body.strip())
    print(json.dumps(envelope))
    return 0


def cmd_now(args: argparse.Namespace) -> int:
    """The time now in UTC, RFC 3339 with ``Z``: what a walk-through's payloads need,
    without GNU date's ``%6N``."""
    from reporters._internal.payloads import issued_timestamp, now_timestamp

    print(now_timestamp() if args.seconds else issued_timestamp())
    return 0


def cmd_keyid(args: argparse.Namespace) -> int:
    print(wire.signing_key_id(keyfiles.read_key(Path(args.path))))
    return 0
