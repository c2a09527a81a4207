"""``bureau erc8004 export --epoch E --out DIR`` (docs/interop.md): every linked agent's
ERC-8004 feedback of a sealed epoch, written as files an operator sends on chain from
the bureau's Ethereum account with any wallet tool. The bureau itself sends nothing.

``DIR/<agent>/<chain>-<identity registry>-<agent id>-<tag>.json`` holds each file's
bytes (the bytes ``feedbackHash`` is the keccak-256 of, and that the bureau serves at
``feedbackURI``); ``DIR/transactions.json`` lists, for each, ``chainId``, ``from``, ``to``
and ``data`` (the ``giveFeedback`` calldata) beside the file's name and hash.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bureau.config import Config
from bureau.storage import db
from bureau.storage import erc8004 as erc8004_store


async def _export(args: argparse.Namespace, url: str) -> int:
    """Write the ERC-8004 feedback of a sealed epoch."""
    config = Config.from_env()
    if config.eth_address is None or config.public_url is None:
        print("bureau erc8004 export: set BUREAU_ETH_ADDRESS (the bureau's Ethereum "
              "address) and BUREAU_PUBLIC_URL (where the files will be served)",
              file=sys.stderr)
        return 2
    from bureau.intake import genesis
    from bureau.interop import erc8004
    from bureau.interop.linked import complete_epoch, linked_reports

    conn = await db.connect(url)
    try:
        settings = await genesis.read(conn)
        epoch = await complete_epoch(conn, args.epoch)
        reports = [] if epoch is None else await linked_reports(conn, "erc8004", epoch)
        confirmed = {r["agent"]: await erc8004_store.confirmed(conn, r["agent"])
                     for r, _ in reports}
    finally:
        await conn.close()
    if settings is None or epoch is None:
        print(f"bureau erc8004 export: epoch {args.epoch} is not sealed", file=sys.stderr)
        return 1
    bureau = erc8004.Bureau(config.public_url, config.eth_address)
    out: Path = args.out
    transactions = []
    for report, _ in reports:
        folder = out / report["agent"].removeprefix("ed25519:")
        for fb in erc8004.feedback_files(report, bureau, settings.epoch_seconds):
            _, chain, address = fb.registry.split(":")
            path = folder / f"{chain}-{address}-{fb.agent_id}-{fb.tag1}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(fb.body)
            offer = erc8004.Offer(confirmed[report["agent"]],
                                  config.erc8004_unconfirmed_calldata)
            doc = offer.as_json(fb)
            transactions.append({"agent": report["agent"], "file": str(path.relative_to(out)),
                                 "confirmed": doc["confirmed"],
                                 "feedbackURI": fb.uri, "feedbackHash": doc["feedbackHash"],
                                 **doc["transaction"]})
    out.mkdir(parents=True, exist_ok=True)
    (out / "transactions.json").write_text(json.dumps(
        {"epoch": epoch, "clientAddress": config.eth_address, "transactions": transactions},
        indent=2) + "\n")
    print(f"bureau erc8004 export: epoch {epoch}: {len(transactions)} feedback files of "
          f"{len(reports)} agents in {out}")
    return 0


async def _confirm(args: argparse.Namespace, url: str) -> int:
    """Confirm an agent's erc8004 link from the token's registration file."""
    from bureau.interop.confirm import NotConfirmed, confirm
    from reporters.identity_links import Erc8004Link

    config = Config.from_env()
    registry, agent_id = args.registry, args.agent_id
    try:
        Erc8004Link.model_validate({"kind": "erc8004", "registry": registry,
                                    "agent_id": agent_id})
    except ValueError as exc:
        print(f"bureau erc8004 confirm: not an erc8004 link: {exc}".splitlines()[0],
              file=sys.stderr)
        return 2
    try:
        found = await confirm(args.url, config.erc8004_hosts, (registry, agent_id),
                              args.agent, args.cafile)
    except NotConfirmed as exc:
        print(f"bureau erc8004 confirm: NOT CONFIRMED: {exc}", file=sys.stderr)
        return 1
    conn = await db.connect(url)
    try:
        await erc8004_store.record(conn, erc8004_store.Confirmed(
            args.agent, registry, agent_id, found.url, found.sha256, found.at))
    finally:
        await conn.close()
    print(f"bureau erc8004 confirm: CONFIRMED {args.agent} is token {agent_id} of {registry} "
          f"(registration file {found.url}, sha256 {found.sha256.hex()})")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    from bureau.cli.parser import epoch as epoch_type
    from bureau.cli.reading import read_only

    commands = p.add_subparsers(dest="erc8004_command", required=True)
    export = commands.add_parser("export", help="write every linked agent's feedback of an "
                                 "epoch, with its giveFeedback calldata, for a wallet tool")
    export.add_argument("--epoch", type=epoch_type, required=True, help="a sealed epoch")
    export.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="the directory to write (created if missing)")
    export.set_defaults(func=read_only(_export))
    confirm = commands.add_parser("confirm", help="confirm an agent's erc8004 link: the "
                                  "token's registration file must name the agent's key id")
    confirm.add_argument("--agent", required=True, help="the agent's key id")
    confirm.add_argument("--registry", required=True,
                         help="the link's registry, eip155:<chain id>:<address>")
    confirm.add_argument("--agent-id", required=True, help="the link's token id (decimal)")
    confirm.add_argument("--url", required=True, help="the registration file's https URL "
                         "(the token's tokenURI), on a host of BUREAU_ERC8004_HOSTS")
    confirm.add_argument("--cafile", default=None,
                         help="trust this CA file for the fetch (a private CA)")
    confirm.set_defaults(func=read_only(_confirm))
