"""``bureau admin``: the admin payloads (docs/protocol.md), signed with the admin key and
posted to a bureau (docs/operations.md#admin-commands), so nobody writes their JSON by
hand:

    bureau admin register-reporter gateway.key --name "gateway one" --operator "Example"
    bureau admin distrust ed25519:… --name "gateway one" --operator "Example" --from now
    bureau admin resolve ENTRY_ID --decision EXCLUDED --reason "…"
    bureau admin seal
    bureau admin policy v2 --from-epoch 123
    bureau admin pool 1000
    bureau admin keys --bureau new-signing.key --admins admin.key,ed25519:…

Each prints the bureau's answer and exits 0 when it was accepted (or a duplicate of an
entry it already has), 1 when it was refused (its reason code on standard error), 2 when
the bureau could not be reached or an argument is unusable. ``--print`` prints the
signed envelope instead of posting it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from bureau import keyfiles
from bureau.errors import BureauError, Code
from bureau.http.params import KEY_ID
from reporters import wire
from reporters._internal import wording
from reporters._internal.payloads import issued_timestamp, now_timestamp
from reporters.models import parse_timestamp

DEFAULT_URL = "http://127.0.0.1:8080"


class Unusable(BureauError):
    """An argument the command cannot use (``str()`` says which and why): the caller's
    input, so a ``SCHEMA`` refusal under the one error root."""

    def __init__(self, detail: str) -> None:
        super().__init__(Code.SCHEMA, "", detail)

    def __str__(self) -> str:
        return self.detail


def key_id_of(text: str) -> str:
    """A key id as given, or the key id of the key file at ``text``."""
    if re.fullmatch(KEY_ID, text):
        return text
    path = Path(text)
    if not path.is_file():
        raise Unusable(f"{text!r} is neither a key id (ed25519:…) nor a key file")
    try:
        return wire.signing_key_id(keyfiles.read_key(path))
    except (ValueError, wire.WireError) as exc:
        raise Unusable(f"{text}: not an Ed25519 key file ({exc})") from None


def timestamp(text: str) -> str:
    """``now``, or an RFC 3339 UTC time as given."""
    if text == "now":
        return now_timestamp()
    try:
        if not text.endswith("Z"):
            raise ValueError
        parse_timestamp(text)
    except ValueError:
        raise Unusable(f"{text!r}: an RFC 3339 UTC time like 2026-12-01T00:00:00Z, or now"
                       ) from None
    return text


def _registration(args: argparse.Namespace, distrusted_from: str | None) -> dict[str, Any]:
    roles = [r for r in args.roles.split(",") if r]
    if not roles or set(roles) - {"facts", "probes"}:
        raise Unusable(f"--roles {args.roles!r}: facts, probes, or facts,probes")
    return {"reporter": key_id_of(args.reporter), "name": args.name,
            "operator": args.operator, "roles": roles, "issued_at": issued_timestamp(),
            "distrusted_from": distrusted_from}


def register_reporter(args: argparse.Namespace, url: str) -> tuple[str, dict[str, Any]]:
    since = None if args.distrusted_from is None else timestamp(args.distrusted_from)
    return "reporter", _registration(args, since)


def distrust(args: argparse.Namespace, url: str) -> tuple[str, dict[str, Any]]:
    return "reporter", _registration(args, None if args.lift else timestamp(args.since))


def resolve(args: argparse.Namespace, url: str) -> tuple[str, dict[str, Any]]:
    if re.fullmatch("[0-9a-f]{64}", args.dispute) is None:
        raise Unusable(f"{args.dispute!r}: a dispute is named by its entry id (64 hex digits)")
    return "resolution", {"dispute": args.dispute, "decision": args.decision,
                          "reason": args.reason}


def seal(args: argparse.Namespace, url: str) -> tuple[str, dict[str, Any]]:
    return "seal", {"requested_at": now_timestamp()}


def policy(args: argparse.Namespace, url: str) -> tuple[str, dict[str, Any]]:
    from bureau.scoring.policy import KNOWN_POLICIES, known_policy_hashes, policy_hash

    if args.policy in KNOWN_POLICIES:
        digest = policy_hash(KNOWN_POLICIES[args.policy])
    elif args.policy in known_policy_hashes():
        digest = args.policy
    else:
        raise Unusable(f"{args.policy!r}: a policy this bureau knows, by name ("
                       f"{', '.join(sorted(KNOWN_POLICIES))}) or by hash")
    return "policy", {"policy": digest, "from_epoch": _from_epoch(args, url),
                      "issued_at": issued_timestamp()}


def pool(args: argparse.Namespace, url: str) -> tuple[str, dict[str, Any]]:
    if not 0 <= args.units <= 10**15:
        raise Unusable(f"{args.units}: a pool is 0 to 10^15 whole units an epoch")
    return "pool", {"units": args.units, "from_epoch": _from_epoch(args, url),
                    "issued_at": issued_timestamp()}


def _from_epoch(args: argparse.Namespace, url: str) -> int:
    """``--from-epoch``, or the next epoch: never one that may already be recorded in."""
    if args.from_epoch is not None:
        return int(args.from_epoch)
    return int(time.time()) // asyncio.run(_epoch_seconds(url)) + 1


def keys(args: argparse.Namespace, url: str) -> tuple[str, dict[str, Any]]:
    admins = [key_id_of(a) for a in args.admins.split(",") if a]
    if not admins:
        raise Unusable("--admins: at least one admin key id or key file")
    return "keys", {"bureau": key_id_of(args.bureau), "admins": admins,
                    "issued_at": issued_timestamp()}


async def _epoch_seconds(url: str) -> int:
    async with aiohttp.ClientSession() as session, session.get(url + "/v1/bureau") as resp:
        if resp.status != 200:
            raise Unusable(f"{url}/v1/bureau answered {resp.status}")
        return int((await resp.json())["epoch_seconds"])


async def post(url: str, envelope: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.post(
            url + "/v1/evidence", json=envelope, timeout=aiohttp.ClientTimeout(total=60)) as resp:
        body: dict[str, Any] = await resp.json(content_type=None)
        return resp.status, body


def run(args: argparse.Namespace) -> int:
    name = f"bureau admin {args.admin_command}"
    url = args.url.rstrip("/")
    try:
        key = keyfiles.read_key(Path(args.key))
    except (OSError, ValueError, wire.WireError) as exc:
        print(f"{name}: cannot read the admin key {args.key}: {exc}", file=sys.stderr)
        return 2
    try:
        kind, payload = args.build(args, url)
    except Unusable as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    except (aiohttp.ClientError, OSError) as exc:
        print(f"{name}: cannot reach {url}: {exc}", file=sys.stderr)
        return 2
    envelope = wire.sign_payload(key, kind, payload)
    if args.print:
        print(json.dumps(envelope))
        return 0
    try:
        status, answer = asyncio.run(post(url, envelope))
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
        print(f"{name}: cannot reach {url}: {exc or type(exc).__name__}", file=sys.stderr)
        return 2
    print(json.dumps(answer))
    if answer.get("status") in ("accepted", "duplicate"):
        return 0
    print(f"{name}: refused ({status}): {answer.get('code')} at {answer.get('path')!r}: "
          f"{answer.get('detail')}", file=sys.stderr)
    return 1


def _reporter_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("reporter", help="the reporter's key id, or its key file")
    parser.add_argument("--name", required=True, help="the reporter's name, as the public "
                        "sees it (an update replaces the whole registration)")
    parser.add_argument("--operator", required=True, help="who runs it")
    parser.add_argument("--roles", default="facts",
                        help="facts, probes, or facts,probes (default facts)")


def _add(commands: Any, name: str, parents: list[argparse.ArgumentParser],
         help: str) -> argparse.ArgumentParser:
    """One admin command, its help also the opening line of its ``--help``."""
    parser: argparse.ArgumentParser = commands.add_parser(name, parents=parents, help=help,
                                                          description=help)
    return parser


def add_arguments(admin: argparse.ArgumentParser) -> None:
    """``bureau admin …``: its commands, on the ``bureau admin`` parser."""
    admin.description = wording.plain(__doc__)
    # the description as written (its examples), with the defaults every flag shows
    plain_defaults: Any = admin.formatter_class
    formatter: type[argparse.HelpFormatter] = type(
        "AdminHelp", (argparse.RawDescriptionHelpFormatter, plain_defaults), {})
    admin.formatter_class = formatter
    admin.set_defaults(func=run)
    commands = admin.add_subparsers(dest="admin_command", required=True, metavar="COMMAND")
    common = _common_flags()
    _reporter_commands(commands, common)
    _ledger_commands(commands, common)


def _common_flags() -> argparse.ArgumentParser:
    """The flags of every admin command: the key, the bureau, ``--print``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--key", default=str(Path(os.environ.get("BUREAU_HOME", ".bureau"))
                                             / "admin.key"),
                        help="the admin key file (default $BUREAU_HOME/admin.key: "
                        "%(default)s)")
    common.add_argument("--url", default=os.environ.get("BUREAU_URL", DEFAULT_URL),
                        help="the bureau's base URL (default $BUREAU_URL, else "
                        f"{DEFAULT_URL})")
    common.add_argument("--print", action="store_true",
                        help="print the signed envelope on standard output instead of "
                        "posting it")
    return common


def _reporter_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """``register-reporter`` and ``distrust``: a reporter's registration."""
    one = _add(commands, "register-reporter", [common], "register a reporter, or update it")
    _reporter_flags(one)
    one.add_argument("--distrusted-from", default=None,
                     help="distrust its evidence from this RFC 3339 UTC time on, or now "
                     "(default: trusted)")
    one.set_defaults(build=register_reporter)

    one = _add(commands, "distrust", [common], "set a reporter's evidence aside from a "
               "time on (a reporter update: give its registration again)")
    _reporter_flags(one)
    one.add_argument("--from", dest="since", default="now",
                     help="an RFC 3339 UTC time, or now (default now)")
    one.add_argument("--lift", action="store_true", help="trust it again (distrusted_from null)")
    one.set_defaults(build=distrust)


def _ledger_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """``resolve``, ``seal``, ``policy``, ``pool``, ``keys``: the ledger's own decisions."""
    one = _add(commands, "resolve", [common],
               "decide a dispute: the entry stands, or is excluded")
    one.add_argument("dispute", help="the dispute's entry id")
    one.add_argument("--decision", required=True, choices=["UPHELD", "EXCLUDED"],
                     help="UPHELD: the disputed entry stands; EXCLUDED: it counts nowhere")
    one.add_argument("--reason", required=True, help="why, in words (published to the agent)")
    one.set_defaults(build=resolve)

    one = _add(commands, "seal", [common],
               "close every epoch that has elapsed by the bureau's clock")
    one.set_defaults(build=seal)

    one = _add(commands, "policy", [common], "the scoring policy from an epoch on")
    one.add_argument("policy", help="a policy the bureau knows: v1, v2, or its hash")
    one.add_argument("--from-epoch", type=int, default=None,
                     help="the first epoch it scores (default: the next epoch, by the "
                     "bureau's epoch length)")
    one.set_defaults(build=policy)

    one = _add(commands, "pool", [common], "the evaluators' pool from an epoch on")
    one.add_argument("units", type=int,
                     help="whole units paid each epoch to the evaluators (0 stops settling)")
    one.add_argument("--from-epoch", type=int, default=None,
                     help="the first epoch it pays (default: the next epoch, by the "
                     "bureau's epoch length)")
    one.set_defaults(build=pool)

    one = _add(commands, "keys", [common], "rotate the bureau's signing key and the "
               "admin set, from the next entry on")
    one.add_argument("--bureau", required=True,
                     help="the new signing key: its key id, or its key file")
    one.add_argument("--admins", required=True,
                     help="the admin set, comma-separated key ids or key files (1 to 64)")
    one.set_defaults(build=keys)
