"""What a reader of a static mirror may rely on at every instant, whatever lands in the
ledger while a pass runs: the mirror's ``checkpoint`` covers the tree of the epoch its
``v1/checkpoints/latest`` names, and every tile of that epoch's proof is there."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg

from bureau.http.keys import PUBLISHER
from bureau.mirror.documents import Site
from bureau.mirror.sync import Mirror
from bureau.storage import db
from bureau.transparency.heads import Head
from reporters import layout, wire
from reporters.tlog import proofs
from reporters.tlog.tilereader import tiles_needed
from reporters.tlog.tiles import TILE_WIDTH, Tile
from tests.support import BureauUnderTest
from tests.tiles.support import grow
from tests.views.support import EPOCH_SECONDS, World, next_epoch


class SealedMidPass(Mirror):
    """A mirror whose first pass sees the bureau seal an epoch right after it has
    written the tree of the head it read (the seal's checkpoint is stored by then)."""

    def __init__(self, root: Path, bureau: BureauUnderTest) -> None:
        super().__init__(root, Site(bureau.log_key.origin, EPOCH_SECONDS, None, None))
        self.bureau = bureau
        self.sealed: list[int] = []

    async def _tiles(self, conn: db.Connection, head: Head) -> None:
        await super()._tiles(conn, head)
        if not self.sealed:
            self.sealed = await next_epoch(self.bureau)


def _latest_epoch_is_whole(root: Path) -> int:
    """The epoch ``v1/checkpoints/latest`` names, once checked against the mirror's
    ``checkpoint`` and tiles as a reader proving its head would use them."""
    envelope = json.loads((root / layout.LATEST_CHECKPOINT).read_bytes())
    epoch = json.loads(wire.b64decode_canonical(envelope["payload"]))
    size = int((root / layout.CHECKPOINT).read_text().split("\n")[1])
    assert epoch["seq"] <= size, f"epoch {epoch['epoch']} (seq {epoch['seq']}) is past " \
                                 f"the mirror's checkpoint (size {size})"
    seq = epoch["seq"]
    wanted = tiles_needed(proofs.inclusion_plan(seq - 1, seq).nodes, seq) \
        | tiles_needed(proofs.consistency_plan(seq, size).nodes, size)
    # a partial tile may have gone once its full tile is there (a reader falls back)
    absent = [t.path for t in wanted if not (root / t.path).exists()
              and not (root / Tile(t.level, t.index, TILE_WIDTH).path).exists()]
    assert absent == [], f"tiles a reader of epoch {epoch['epoch']} needs: {absent}"
    return int(epoch["epoch"])


async def test_an_epoch_sealed_during_a_pass_waits_for_the_tree_that_holds_it(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    world = await World.make(bureau)
    agent = await world.agent("alpha")
    await world.fact(agent)
    [first] = await next_epoch(bureau)
    await bureau.app[PUBLISHER].tick()
    await grow(bureau, 600)  # more than two full tiles past the first epoch's tree
    mirror = SealedMidPass(tmp_path / "mirror", bureau)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        await mirror.sync(conn)
        assert mirror.sealed, "the epoch was sealed mid-pass"
        assert _latest_epoch_is_whole(mirror.dir.root) in (first, *mirror.sealed)
        await mirror.sync(conn)  # the next pass: the new head, then the epoch
        assert _latest_epoch_is_whole(mirror.dir.root) == mirror.sealed[-1]
    finally:
        mirror.close()
        await conn.close()
