"""The tree as C2SP tlog-tiles (SPEC §9.1): tile paths, widths and entry bundles.

A *tile* at level ``L`` and index ``N`` is the run of stored hashes at tree level
``8·L`` with indices ``[256·N, 256·N + W)``: the hashes of the perfect subtrees of
``256**L`` leaves each (level 0: the leaf hashes). A *full* tile holds 256 of them
(8,192 bytes) and never changes; the rightmost tile of a level is *partial* while the
tree is not a multiple of its span (``W`` from 1 to 255, served at a path ending in
``.p/<W>``). The tree of size ``s`` has, at level ``L``, ``s >> 8L`` hashes, so the
partial tile there is ``(s >> 8L) mod 256`` wide. An *entry bundle* is the same span at
level 0 holding the entries themselves: here each leaf's 32-byte entry id (never the
entry: the public sees no raw feed), each prefixed with its length as a big-endian
uint16, as tlog-tiles says; an entry hashes to the matching hash of the level-0 tile.

Paths: ``tile/<L>/<N>[.p/<W>]`` and ``tile/entries/<N>[.p/<W>]``, ``L`` from 0 to 63
and ``W`` from 1 to 255 in decimal without leading zeros, ``N`` in groups of three
digits, all but the last prefixed ``x`` (1234067 is ``x001/x234/067``): a file system
holds them as they are. :func:`parse_path` takes exactly these and nothing else.

Pure: no I/O. :mod:`reporters.tlog.tilereader` computes proofs from fetched tiles.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import HASH_SIZE, Node, leaf_hash, node_hash

#: Levels of the tree a tile spans, and hashes in a full tile.
TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT
#: The level of an entry bundle (the Go checksum database's "data" tiles use -1 too).
ENTRIES = -1
#: The levels a tile path may name (tlog-tiles: 0 to 63).
MAX_LEVEL = 63
#: The largest index: a log's sizes and indices are signed 64-bit integers (Go's tlog,
#: PostgreSQL's bigint), so no tile's hashes run past it.
MAX_INDEX = 2**63 - 1

_LENGTH = struct.Struct(">H")
_PATH = re.compile(
    r"tile/(?P<level>entries|0|[1-9][0-9]?)/(?P<groups>(?:x[0-9]{3}/)*)(?P<last>[0-9]{3})"
    r"(?:\.p/(?P<width>[1-9][0-9]{0,2}))?")


@dataclass(frozen=True, slots=True, order=True)
class Tile:
    """One tile (or, at level :data:`ENTRIES`, one entry bundle) of a tree."""

    level: int
    index: int
    width: int

    @property
    def full(self) -> bool:
        return self.width == TILE_WIDTH

    @property
    def is_entries(self) -> bool:
        return self.level == ENTRIES

    @property
    def path(self) -> str:
        """Where tlog-tiles serves it, relative to the log's prefix."""
        level = "entries" if self.is_entries else str(self.level)
        suffix = "" if self.full else f".p/{self.width}"
        return f"tile/{level}/{format_index(self.index)}{suffix}"

    @property
    def hash_level(self) -> int:
        """The tree level of the hashes the tile holds (0 for an entry bundle's)."""
        return 0 if self.is_entries else TILE_HEIGHT * self.level

    @property
    def first(self) -> int:
        """The index, at :attr:`hash_level`, of its first hash."""
        return self.index * TILE_WIDTH

    @property
    def size(self) -> int:
        """Its length in bytes (for an entry bundle of 32-byte entries)."""
        per = HASH_SIZE + _LENGTH.size if self.is_entries else HASH_SIZE
        return self.width * per

    def as_hash_tile(self) -> Tile:
        """The level-0 tile an entry bundle's entries hash to."""
        return Tile(0, self.index, self.width) if self.is_entries else self


def format_index(n: int) -> str:
    """``N`` of a tile path: groups of three digits, all but the last prefixed ``x``."""
    if n < 0:
        raise ValueError("a tile index is not negative")
    parts = [f"{n % 1000:03d}"]
    n //= 1000
    while n:
        parts.append(f"x{n % 1000:03d}")
        n //= 1000
    return "/".join(reversed(parts))


def parse_path(path: str) -> Tile | None:
    """The tile a path names (``tile/…``, no leading slash), or None when it is not a
    tile path exactly as tlog-tiles writes it (leading zeros, a width of 0 or 256 or
    more, a level above 63, an ``x`` on the last group or none on another), or whose
    hashes' indices run past :data:`MAX_INDEX`."""
    found = _PATH.fullmatch(path)
    if found is None:
        return None
    level_text, width_text = found["level"], found["width"]
    level = ENTRIES if level_text == "entries" else int(level_text)
    if level > MAX_LEVEL:
        return None
    width = TILE_WIDTH if width_text is None else int(width_text)
    if width_text is not None and width >= TILE_WIDTH:
        return None
    groups = [g[1:] for g in found["groups"].split("/") if g]
    index = int("".join([*groups, found["last"]]))
    if format_index(index) != "/".join([*(f"x{g}" for g in groups), found["last"]]):
        return None  # a leading group of 000: the index has a shorter spelling
    if index * TILE_WIDTH + width > MAX_INDEX:
        return None
    return Tile(level, index, width)


def hashes_at(level: int, size: int) -> int:
    """How many stored hashes tile level ``level`` has in a tree of ``size`` leaves."""
    return size >> (TILE_HEIGHT * level)


def width_in(level: int, index: int, size: int) -> int:
    """The width of tile (``level``, ``index``) in a tree of ``size`` leaves: 256 when
    full, 1 to 255 when partial, 0 when the tree has none of its hashes yet. An entry
    bundle is as wide as its level-0 tile."""
    count = hashes_at(max(level, 0), size) - index * TILE_WIDTH
    return max(0, min(TILE_WIDTH, count))


def tile_in(level: int, index: int, size: int) -> Tile | None:
    """Tile (``level``, ``index``) as the tree of ``size`` leaves has it, or None."""
    width = width_in(level, index, size)
    return Tile(level, index, width) if width else None


def holder(node: Node, size: int) -> Tile:
    """The tile of the tree of ``size`` leaves that holds the hashes a complete node is
    computed from: node (``l``, ``i``) is the perfect subtree over ``2**(l mod 8)``
    consecutive hashes of tile level ``l // 8``."""
    level, index = node
    tile_level, height = divmod(level, TILE_HEIGHT)
    first = index << height
    tile = tile_in(tile_level, first // TILE_WIDTH, size)
    if tile is None or first % TILE_WIDTH + (1 << height) > tile.width:
        raise ValueError(f"node {node} is not complete in a tree of size {size}")
    return tile


def node_from(tile: Tile, data: bytes, node: Node) -> bytes:
    """The hash of ``node`` from the bytes of the ``tile`` that holds it."""
    level, index = node
    height = level - tile.hash_level
    start = (index << height) - tile.first
    count = 1 << height
    if height < 0 or height >= TILE_HEIGHT or start < 0 or start + count > tile.width:
        raise ValueError(f"node {node} is not in {tile.path}")
    hashes = [data[i * HASH_SIZE:(i + 1) * HASH_SIZE] for i in range(start, start + count)]
    return perfect_root(hashes)


def perfect_root(hashes: Sequence[bytes]) -> bytes:
    """The hash of the perfect subtree over a power-of-two run of node hashes."""
    level = list(hashes)
    while len(level) > 1:
        level = [node_hash(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def tile_hashes(data: bytes, tile: Tile) -> list[bytes]:
    """The hashes of a hash tile's bytes, which must be exactly ``width`` hashes."""
    if len(data) != tile.width * HASH_SIZE:
        raise TlogError("BAD_PROOF", f"{tile.path} is {len(data)} bytes, not "
                                     f"{tile.width * HASH_SIZE} ({tile.width} hashes)")
    return [data[i:i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]


def tiles_of(size: int, *, since: int = 0) -> Iterator[Tile]:
    """Every tile and entry bundle the tree of ``size`` leaves has that the tree of
    ``since`` leaves did not have as they are: full tiles completed since, and the
    partial tiles at ``size`` (all of them with ``since`` 0). Lowest level first."""
    for level in range(ENTRIES, MAX_LEVEL + 1):
        count = hashes_at(max(level, 0), size)
        if count == 0:
            return
        before = hashes_at(max(level, 0), since)
        for index in range(before // TILE_WIDTH, count // TILE_WIDTH):
            yield Tile(level, index, TILE_WIDTH)
        if count % TILE_WIDTH and count > before:
            yield Tile(level, count // TILE_WIDTH, count % TILE_WIDTH)


# --------------------------------------------------------------------------- entries


def encode_entries(entries: Sequence[bytes]) -> bytes:
    """An entry bundle: each entry prefixed with its length (big-endian uint16)."""
    out = bytearray()
    for entry in entries:
        if len(entry) >= 1 << 16:
            raise ValueError("an entry of a bundle is shorter than 65,536 bytes")
        out += _LENGTH.pack(len(entry)) + entry
    return bytes(out)


def decode_entries(data: bytes, tile: Tile) -> list[bytes]:
    """The entries of a bundle: exactly ``width`` of them, each 32 bytes (an entry id),
    and nothing after the last."""
    entries: list[bytes] = []
    at = 0
    while at < len(data):
        if at + _LENGTH.size > len(data):
            raise TlogError("BAD_PROOF", f"{tile.path} ends inside a length prefix")
        (length,) = _LENGTH.unpack_from(data, at)
        at += _LENGTH.size
        if length != HASH_SIZE or at + length > len(data):
            raise TlogError("BAD_PROOF", f"{tile.path}: entry {len(entries)} is not a "
                                         f"{HASH_SIZE}-byte entry id")
        entries.append(data[at:at + length])
        at += length
    if len(entries) != tile.width:
        raise TlogError("BAD_PROOF", f"{tile.path} holds {len(entries)} entries, not "
                                     f"{tile.width}")
    return entries


def entry_leaf_hashes(data: bytes, tile: Tile) -> bytes:
    """The level-0 tile an entry bundle's entries hash to (RFC 6962 leaf hashes)."""
    return b"".join(leaf_hash(e) for e in decode_entries(data, tile))
