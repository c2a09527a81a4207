"""The tiles of a mirror: what the tree of the latest published head has that the
mirror's ``checkpoint`` did not, read in runs of up to :data:`BATCH` tiles a statement
(bureau.storage.tiles) and written as files; full tiles only once. Reads take no lock of
the ledger."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

from bureau.errors import InternalError
from bureau.mirror.files import MirrorDir
from bureau.storage import db
from bureau.storage import tiles as tile_rows
from reporters.tlog.tilereader import right_edge
from reporters.tlog.tiles import TILE_WIDTH, Tile, tiles_of, width_in

#: tiles read in one statement: 64 full tiles are 512 KiB of hashes
BATCH = 64


def _runs(tiles: list[Tile]) -> Iterator[list[Tile]]:
    """Consecutive tiles of one level, at most :data:`BATCH` at a time."""
    for _, level in itertools.groupby(tiles, key=lambda t: t.level):
        run = list(level)
        for at in range(0, len(run), BATCH):
            yield run[at:at + BATCH]


async def _read(conn: db.Connection, run: list[Tile]) -> bytes:
    first, count = run[0].first, sum(t.width for t in run)
    if run[0].is_entries:
        rows = await tile_rows.entry_ids(conn, first, count)
    else:
        rows = await tile_rows.hashes(conn, run[0].hash_level, first, count)
    if len(rows.data) != sum(t.size for t in run):
        raise InternalError(f"{run[0].path} and on: the store gave {len(rows.data)} bytes "
                            f"of {sum(t.size for t in run)}: run `bureau rebuild`")
    return rows.data


async def sync_tiles(conn: db.Connection, mirror: MirrorDir, since: int, size: int
                     ) -> list[Tile]:
    """Write every tile the tree of ``size`` leaves has that the tree of ``since`` did
    not have as it is; the full tiles this completed (their partial tiles can go once
    the checkpoint says ``size``)."""
    completed = []
    for run in _runs(list(tiles_of(size, since=since))):
        data, at, writes = await _read(conn, run), 0, mirror.batch()
        for tile in run:
            chunk = data[at:at + tile.size]
            at += tile.size
            if tile.full:
                writes.write_new(tile.path, chunk)
                completed.append(tile)
            else:
                writes.write(tile.path, chunk)
        await writes.done()
    return completed


async def prune_partials(mirror: MirrorDir, completed: list[Tile]) -> None:
    """The partial tiles of tiles now full (tlog-tiles: a log MAY delete them once the
    full tile is there; a reader holding an older checkpoint falls back to it)."""
    def prune() -> None:
        for tile in completed:
            if tile.width == TILE_WIDTH:
                mirror.remove_tree(tile.path + ".p")

    await asyncio.to_thread(prune)


async def sync_edge(conn: db.Connection, mirror: MirrorDir, size: int, mirrored: int) -> None:
    """The partial tiles of the tree of ``size`` leaves (an epoch's: tlog-tiles serves
    the partial tiles of every checkpoint a log produced), but those whose full tile the
    mirrored tree of ``mirrored`` leaves has (a reader takes the start of that)."""
    writes = mirror.batch()
    for tile in right_edge(size):
        if width_in(tile.level, tile.index, mirrored) < TILE_WIDTH:
            writes.write(tile.path, await _read(conn, [tile]))
    await writes.done()
