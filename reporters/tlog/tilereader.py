"""Proofs from tiles (C2SP tlog-tiles), each tile checked against a signed root.

A reader that holds a verified checkpoint (size ``n``, root ``r``) and wants a proof
asks :func:`tiles_needed` which tiles to fetch, fetches them (in parallel: they are
static files), then :func:`verify_tiles` checks **every** one of them against ``r``
before any hash is used:

* the partial tiles at the tree's right edge, one per level at most, hold exactly the
  hashes the nodes that tile ``[0, n)`` are made of, so the root recomputed from them
  must be ``r``;
* a full tile hashes (as the perfect subtree over its 256 hashes) to one hash of the
  tile above it, which is checked the same way, up to a partial tile of the right edge.

So :func:`tiles_needed` adds, to the tiles holding the proof's nodes, their parents
up to the right edge and the right edge itself: at most two tiles a level, so a proof
in a tree of ``n`` leaves needs at most ``2·⌈log₂₅₆ n⌉ + 2`` tiles. (Go's
``tlog.TileHashReader`` checks a tile only as far as the hashes it reads need; here a
tile is used only once all of it is bound to the root.)

Then :class:`TileNodes` is a :data:`~reporters.tlog.merkle.NodeLookup` over the checked
tiles, and a plan of :mod:`reporters.tlog.proofs` computes the proof from it. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import Node, fold_right, subtree_nodes
from reporters.tlog.tiles import (
    MAX_LEVEL,
    TILE_WIDTH,
    Tile,
    hashes_at,
    holder,
    node_from,
    perfect_root,
    tile_hashes,
    tile_in,
)


def right_edge(size: int) -> list[Tile]:
    """The partial tiles of the tree of ``size`` leaves, lowest level first."""
    edge = []
    for level in range(MAX_LEVEL + 1):
        count = hashes_at(level, size)
        if count == 0:
            break
        if count % TILE_WIDTH:
            edge.append(Tile(level, count // TILE_WIDTH, count % TILE_WIDTH))
    return edge


def parent(tile: Tile, size: int) -> Tile:
    """The tile holding the hash a full ``tile`` hashes to."""
    found = tile_in(tile.level + 1, tile.index // TILE_WIDTH, size)
    assert found is not None, "a full tile's hash is in the level above"
    return found


def tiles_needed(nodes: Iterable[Node], size: int) -> set[Tile]:
    """The tiles to fetch to compute the hashes of ``nodes`` (complete nodes of the
    tree of ``size`` leaves) and to check each tile against the tree's root."""
    needed = set(right_edge(size)) if size else set()
    todo = [holder(node, size) for node in nodes]
    while todo:
        tile = todo.pop()
        if tile in needed:
            continue
        needed.add(tile)
        if tile.full:
            todo.append(parent(tile, size))
    return needed


def verify_tiles(size: int, root: bytes, fetched: Mapping[Tile, bytes]) -> None:
    """Check every tile of ``fetched`` (a set :func:`tiles_needed` named) against the
    tree of ``size`` leaves with root ``root``; ``BAD_PROOF`` naming the first tile
    that does not hash to it."""
    for tile, data in fetched.items():
        tile_hashes(data, tile)  # each is exactly its width's bytes
    edge = right_edge(size)
    missing = [t.path for t in edge if t not in fetched]
    if missing:
        raise ValueError(f"the right edge's tiles {missing} were not fetched")
    if size:
        peaks = [node_from(holder(node, size), fetched[holder(node, size)], node)
                 for node in subtree_nodes(0, size)]
        if fold_right(peaks) != root:
            raise TlogError("BAD_PROOF", "the tiles at the tree's right edge ("
                            + ", ".join(t.path for t in edge) + ") do not hash to the "
                            f"checkpoint's root {root.hex()}")
    for tile in sorted((t for t in fetched if t.full), key=lambda t: -t.level):
        above = parent(tile, size)
        if above not in fetched:
            raise ValueError(f"{above.path}, above {tile.path}, was not fetched")
        expected = tile_hashes(fetched[above], above)[tile.index % TILE_WIDTH]
        if perfect_root(tile_hashes(fetched[tile], tile)) != expected:
            raise TlogError("BAD_PROOF", f"{tile.path} does not hash to the checkpoint: "
                                         f"its hash is not hash {tile.index % TILE_WIDTH} "
                                         f"of {above.path}")


class TileNodes:
    """Node hashes computed from tiles that :func:`verify_tiles` checked."""

    def __init__(self, size: int, fetched: Mapping[Tile, bytes]) -> None:
        self.size = size
        self.fetched = fetched

    def __call__(self, node: Node) -> bytes:
        tile = holder(node, self.size)
        return node_from(tile, self.fetched[tile], node)
