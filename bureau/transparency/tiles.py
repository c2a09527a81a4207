"""Serving the tree as C2SP tlog-tiles (SPEC §9.1; docs/transparency.md, "Tiles").

A tile is served only when the latest published tree head covers all of its hashes: a
full tile once the published size reaches its end, a partial tile of width ``W`` once
its first ``W`` hashes are published (any such width, so that a reader holding an
older checkpoint still finds the partial tile it names). Anything else is absent.

A full tile never changes, so each process keeps the most recently read ones in
memory (:class:`FullTiles`): a hit costs no database round trip at all. A partial
tile is always read again (it may be widened or replaced by its full tile).
"""

from __future__ import annotations

from collections import OrderedDict

from bureau.errors import InternalError
from bureau.storage import db
from bureau.storage import tiles as tile_rows
from reporters.tlog.tiles import Tile, width_in

#: full tiles kept per process: 2,048 of ~8 KB each, about 17 MB
CACHED_TILES = 2048


class FullTiles:
    """The last :data:`CACHED_TILES` full tiles read, least recently used first out."""

    def __init__(self, capacity: int = CACHED_TILES) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[Tile, bytes] = OrderedDict()

    def get(self, tile: Tile) -> bytes | None:
        data = self._kept.get(tile)
        if data is not None:
            self._kept.move_to_end(tile)
        return data

    def put(self, tile: Tile, data: bytes) -> None:
        if not tile.full:
            return
        self._kept[tile] = data
        self._kept.move_to_end(tile)
        while len(self._kept) > self.capacity:
            self._kept.popitem(last=False)


async def read_tile(conn: db.Connection, tile: Tile) -> bytes | None:
    """The bytes of ``tile`` if the latest published tree holds it, else None."""
    if tile.is_entries:
        rows = await tile_rows.entry_ids(conn, tile.first, tile.width)
    else:
        rows = await tile_rows.hashes(conn, tile.hash_level, tile.first, tile.width)
    if rows.published is None or width_in(tile.level, tile.index, rows.published) < tile.width:
        return None
    if len(rows.data) != tile.size:
        raise InternalError(f"{tile.path}: the published tree has it, the store gave "
                            f"{len(rows.data)} bytes of {tile.size}: run `bureau rebuild`")
    return rows.data
