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
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from bureau.config import Config
from bureau.storage import db

ReadOnly = Callable[[argparse.Namespace, str], Coroutine[Any, Any, int]]


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
            doc = fb.as_json()
            transactions.append({"agent": report["agent"], "file": str(path.relative_to(out)),
                                 "feedbackURI": fb.uri, "feedbackHash": doc["feedbackHash"],
                                 **doc["transaction"]})
    out.mkdir(parents=True, exist_ok=True)
    (out / "transactions.json").write_text(json.dumps(
        {"epoch": epoch, "clientAddress": config.eth_address, "transactions": transactions},
        indent=2) + "\n")
    print(f"bureau erc8004 export: epoch {epoch}: {len(transactions)} feedback files of "
          f"{len(reports)} agents in {out}")
    return 0


def add_command(sub: argparse._SubParsersAction[Any],
                read_only: Callable[[ReadOnly], Callable[[argparse.Namespace], int]],
                epoch_type: Callable[[str], int]) -> None:
    p = sub.add_parser("erc8004", help="ERC-8004 feedback from the bureau's sealed reports")
    commands = p.add_subparsers(dest="erc8004_command", required=True)
    export = commands.add_parser("export", help="write every linked agent's feedback of an "
                                 "epoch, with its giveFeedback calldata, for a wallet tool")
    export.add_argument("--epoch", type=epoch_type, required=True, help="a sealed epoch")
    export.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="the directory to write (created if missing)")
    export.set_defaults(func=read_only(_export))
