"""``bureau mirror DIR`` (docs/operations.md, "A static mirror"): write the static
mirror of the ledger's public reads into ``DIR``, or bring it up to date — one pass of
:class:`bureau.mirror.sync.Mirror`, resumable after a kill. It only reads the ledger:
it signs nothing and can run beside a serving bureau, or on a read replica. (``bureau
serve --mirror DIR`` keeps a mirror current in the serving processes instead.)"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bureau.config import Config
from bureau.storage import db


async def _mirror(args: argparse.Namespace, url: str) -> int:
    """Write the static mirror of every public read into DIR."""
    from bureau.intake import genesis
    from bureau.mirror.documents import Site
    from bureau.mirror.files import CannotWrite
    from bureau.mirror.sync import Mirror, MirrorRefused

    config = Config.from_env()
    start = time.perf_counter()
    conn = await db.connect(url)
    try:
        settings = await genesis.read(conn)
        if settings is None:
            print("bureau mirror: the ledger is empty: nothing to mirror", file=sys.stderr)
            return 2
        site = Site(settings.origin, settings.epoch_seconds, config.public_url,
                    config.eth_address)
        mirror = Mirror(args.dir, site)
        try:
            result = await mirror.sync(conn)
        except MirrorRefused as exc:
            print(f"bureau mirror: refusing: {exc}", file=sys.stderr)
            return 2
        except CannotWrite as exc:  # a full disk: the mirror is left as it was
            print(f"bureau mirror: {exc}", file=sys.stderr)
            return 2
        finally:
            mirror.close()
    finally:
        await conn.close()
    epochs = (f"epochs {result.epochs[0]}–{result.epochs[-1]}" if len(result.epochs) > 1
              else f"epoch {result.epochs[0]}" if result.epochs else "no new epoch")
    print(f"bureau mirror: {args.dir}: tree size {result.size}, {epochs} ({result.agents} "
          f"agents' reports, bundles and cards), {result.files} files written in "
          f"{time.perf_counter() - start:.2f} s")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    from bureau.cli.reading import read_only

    p.add_argument("dir", type=Path, metavar="DIR", help="the mirror's directory (created "
                   "if missing; a mirror of this ledger is brought up to date)")
    p.set_defaults(func=read_only(_mirror))
