"""Tiles (C2SP tlog-tiles) as pure code: paths, widths, entry bundles, and proofs
computed from tiles against proofs computed from the stored nodes, with every tile
checked against the root and every changed byte caught."""

from __future__ import annotations

import functools
import math
import random
import secrets

import pytest

from reporters.tlog import proofs
from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import Frontier, Node, leaf_hash
from reporters.tlog.tilereader import TileNodes, right_edge, tiles_needed, verify_tiles
from reporters.tlog.tiles import (
    ENTRIES,
    TILE_WIDTH,
    Tile,
    decode_entries,
    encode_entries,
    entry_leaf_hashes,
    format_index,
    parse_path,
    tiles_of,
    width_in,
)
from tests.transparency import reference as ref


@pytest.mark.parametrize(("n", "text"), [
    (0, "000"), (7, "007"), (999, "999"), (1000, "x001/000"), (1234067, "x001/x234/067"),
    (10**9, "x001/x000/x000/000")])
def test_index_groups_of_three(n: int, text: str) -> None:
    assert format_index(n) == text
    assert parse_path(f"tile/0/{text}") == Tile(0, n, TILE_WIDTH)


def test_paths_round_trip() -> None:
    for tile in (Tile(0, 0, 256), Tile(3, 1234067, 17), Tile(ENTRIES, 5, 255),
                 Tile(63, 0, 1), Tile(ENTRIES, 1000, 256),
                 Tile(0, 2**55 - 2, 256), Tile(5, 2**55 - 1, 255)):
        assert parse_path(tile.path) == tile
    assert Tile(2, 1234067, 8).path == "tile/2/x001/x234/067.p/8"
    assert Tile(ENTRIES, 3, 256).path == "tile/entries/003"


@pytest.mark.parametrize("path", [
    "tile/00/000", "tile/01/000", "tile/64/000", "tile/0/0000", "tile/0/00", "tile/0/x000/001",
    "tile/0/x1/001", "tile/0/001/x002", "tile/0/x001", "tile/0/001.p/0", "tile/0/001.p/256",
    "tile/0/001.p/05", "tile/0/001.p/", "tile/entry/001", "tile/-1/001", "tile/0/001/",
    "/tile/0/001", "tile/0/001.p/1/", "tile/0/001\n", "tile/0/٠٠١", "tile/8/0/001",
    # indices past 2**63 - 1 (PostgreSQL's bigint refused them: a 500, before)
    "tile/0/x036/x028/x797/x018/x963/967", "tile/entries/x036/x028/x797/x018/x963/968",
    "tile/5/x036/x028/x797/x018/x963/968.p/1", "tile/0/x999/x999/x999/x999/x999/x999/999"])
def test_anything_but_a_tile_path_is_refused(path: str) -> None:
    assert parse_path(path) is None


def test_widths_follow_the_spec_example() -> None:
    """tlog-tiles: a tree of 70,000 has 273 full level-0 tiles and one of width 112, one
    full level-1 tile and one of width 17, and a level-2 tile of width 1."""
    tiles = [t for t in tiles_of(70_000) if not t.is_entries]
    assert sum(1 for t in tiles if t.level == 0 and t.full) == 273
    assert Tile(0, 273, 112) in tiles and Tile(1, 0, 256) in tiles
    assert Tile(1, 1, 17) in tiles and Tile(2, 0, 1) in tiles
    assert len(tiles) == 273 + 1 + 1 + 1 + 1
    assert [t for t in tiles_of(256) if not t.is_entries] == [Tile(0, 0, 256), Tile(1, 0, 1)]
    assert width_in(0, 273, 70_000) == 112 and width_in(0, 274, 70_000) == 0


def test_tiles_since_are_the_new_ones() -> None:
    assert list(tiles_of(600, since=300)) == [
        Tile(ENTRIES, 1, 256), Tile(ENTRIES, 2, 88), Tile(0, 1, 256), Tile(0, 2, 88),
        Tile(1, 0, 2)]
    assert list(tiles_of(300, since=300)) == []


def test_entry_bundles_round_trip_and_hash_to_the_leaves() -> None:
    ids = [secrets.token_bytes(32) for _ in range(5)]
    tile = Tile(ENTRIES, 0, 5)
    data = encode_entries(ids)
    assert data[:2] == b"\x00\x20" and len(data) == tile.size == 5 * 34
    assert decode_entries(data, tile) == ids
    assert entry_leaf_hashes(data, tile) == b"".join(leaf_hash(i) for i in ids)
    for bad in (data[:-1], data + b"\x00", data[:-34], b"\x00\x21" + data[2:]):
        with pytest.raises(TlogError):
            decode_entries(bad, tile)


# --------------------------------------------------------------------------- proofs


class Tree:
    """A tree of random leaves, its stored nodes, and its tiles as a server has them."""

    def __init__(self, size: int, seed: int = 1) -> None:
        rnd = random.Random(seed)
        self.leaves = [rnd.randbytes(32) for _ in range(size)]
        self.nodes: dict[Node, bytes] = {}
        self.frontier, completed = Frontier.empty().extend(leaf_hash(x) for x in self.leaves)
        for level, idx, h in completed:
            self.nodes[(level, idx)] = h
        self.size = size
        self.root = self.frontier.root()

    def tile(self, tile: Tile) -> bytes:
        level = 8 * tile.level
        return b"".join(self.nodes[(level, tile.first + k)] for k in range(tile.width))

    def fetch(self, tiles: set[Tile]) -> dict[Tile, bytes]:
        return {t: self.tile(t) for t in tiles}


@functools.cache
def tree(size: int) -> Tree:
    return Tree(size)


SIZES = [1, 2, 255, 256, 257, 511, 65_535, 65_536, 65_537, 70_000]


def _bound(size: int) -> int:
    return 2 * math.ceil(math.log(size, 256)) + 2 if size > 1 else 2


@pytest.mark.parametrize("size", SIZES)
def test_inclusion_from_tiles_is_the_stored_nodes_proof(size: int) -> None:
    t = tree(size)
    rnd = random.Random(size)
    for index in {0, size - 1, size // 2, rnd.randrange(size), rnd.randrange(size)}:
        plan = proofs.inclusion_plan(index, size)
        needed = tiles_needed(plan.nodes, size)
        assert len(needed) <= _bound(size), (index, sorted(needed))
        fetched = t.fetch(needed)
        verify_tiles(size, t.root, fetched)
        got = plan.hashes(TileNodes(size, fetched))
        assert got == plan.hashes(t.nodes)
        assert got == ref.path(index, t.leaves)


@pytest.mark.parametrize("size", SIZES[1:])
def test_consistency_from_tiles_is_the_stored_nodes_proof(size: int) -> None:
    t = tree(size)
    for old in {1, size // 3, size - 1, 256, 255}:
        if not 0 < old < size:
            continue
        plan = proofs.consistency_plan(old, size)
        needed = tiles_needed(plan.nodes, size)
        assert len(needed) <= _bound(size), (old, sorted(needed))
        fetched = t.fetch(needed)
        verify_tiles(size, t.root, fetched)
        assert plan.hashes(TileNodes(size, fetched)) == ref.proof(old, t.leaves)


@pytest.mark.parametrize("size", [257, 65_537, 70_000])
def test_every_changed_byte_of_every_tile_is_caught(size: int) -> None:
    t = tree(size)
    plan = proofs.inclusion_plan(size // 2, size)
    fetched = t.fetch(tiles_needed(plan.nodes, size) | set(right_edge(size)))
    rnd = random.Random(7)
    for tile in fetched:
        bad = dict(fetched)
        data = bytearray(bad[tile])
        data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
        bad[tile] = bytes(data)
        with pytest.raises(TlogError, match="BAD_PROOF"):
            verify_tiles(size, t.root, bad)
        bad[tile] = bytes(data[:-32])  # a truncated tile
        with pytest.raises(TlogError, match="BAD_PROOF"):
            verify_tiles(size, t.root, bad)


def test_tiles_of_another_size_do_not_verify() -> None:
    """Tiles that are right for a smaller tree are not accepted for the larger one."""
    small, big = tree(65_535), tree(65_536)
    plan = proofs.inclusion_plan(5, small.size)
    fetched = small.fetch(tiles_needed(plan.nodes, small.size))
    with pytest.raises(TlogError):
        verify_tiles(small.size, big.root, fetched)
