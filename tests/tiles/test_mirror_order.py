"""What a reader of a static mirror may rely on at every instant, whatever lands in the
ledger while a pass runs and however a pass ends: the mirror's ``checkpoint`` covers
the tree of the epoch its ``v1/checkpoints/latest`` names, and every tile of that
epoch's proof is there. A pass that cannot write a file (a full disk) says which in one
line and leaves no temporary file; the next one completes the mirror."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path

import asyncpg
import pytest

from bureau.http.keys import DB_POOL, PUBLISHER
from bureau.mirror.documents import Site
from bureau.mirror.sync import Mirror, MirrorTask
from bureau.storage import db
from bureau.transparency.heads import Head
from reporters import layout, wire
from reporters.tlog import proofs
from reporters.tlog.tilereader import tiles_needed
from reporters.tlog.tiles import TILE_WIDTH, Tile
from tests.processes import BUREAU, bureau_env
from tests.support import BureauUnderTest, kid
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


#: ``bureau mirror DIR`` where no file may pass 4 KiB (RLIMIT_FSIZE: a write past it
#: fails with EFBIG, as one on a full disk fails with ENOSPC): the first full tile fails
_CAPPED = ("import os, resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN);"
           " resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096));"
           " os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")


async def _mirror_run(bureau: BureauUnderTest, root: Path, *, capped: bool
                      ) -> tuple[int, str]:
    env = bureau_env(bureau.database_url, root.parent / "home", kid(bureau.admin))
    argv = [*BUREAU, "mirror", str(root)]
    if capped:
        argv = [sys.executable, "-c", _CAPPED, *argv[1:]]
    proc = await asyncio.create_subprocess_exec(*argv, env=env,
                                                stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


@pytest.mark.slow  # bureau mirror in a process of its own
async def test_a_file_that_cannot_be_written_ends_the_pass_in_one_line(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    world = await World.make(bureau)
    await world.fact(await world.agent("alpha"))
    await grow(bureau, 600)
    await next_epoch(bureau)
    await bureau.app[PUBLISHER].tick()
    root = tmp_path / "mirror"
    status, err = await _mirror_run(bureau, root, capped=True)
    last = err.strip().splitlines()[-1]
    assert status == 2 and "Traceback" not in err, err
    assert last.startswith(f"bureau mirror: cannot write {root}/tile/") \
        and last.endswith("File too large"), err  # not "cannot read the database"
    assert list(root.rglob(".*.tmp")) == []
    assert not (root / layout.CHECKPOINT).exists()  # nothing says the tiles are there
    status, err = await _mirror_run(bureau, root, capped=False)
    assert status == 0, err
    _latest_epoch_is_whole(root)


async def test_serve_says_once_that_it_cannot_write_the_mirror(
        bureau: BureauUnderTest, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``serve --mirror``: a pass that cannot write is tried again each tick, and said
    once, not once a tick (a full disk fails on a file of its own each time)."""
    await grow(bureau, 300)
    await bureau.app[PUBLISHER].tick()
    root = tmp_path / "mirror"
    root.mkdir()
    (root / "tile").write_bytes(b"a file where the tiles' directory goes")
    task = MirrorTask(bureau.app[DB_POOL], Mirror(root, Site(
        bureau.log_key.origin, EPOCH_SECONDS, None, None)))
    try:
        with caplog.at_level(logging.ERROR, logger="bureau.mirror.sync"):
            for _ in range(3):
                assert await task.tick() is None
        said = [r.getMessage() for r in caplog.records if "NOT MIRRORING" in r.message]
        assert len(said) == 1 and f"cannot write {root}/tile/" in said[0], said
        assert list(root.rglob(".*.tmp")) == [] and task.passes == 0
        (root / "tile").unlink()
        assert await task.tick() is not None and task.passes == 1
    finally:
        await task.stop()
