"""Helpers for the tiles, mirror and portable-proof tests: a ledger grown by batches of
enrollments, the tree recomputed from the entry ids as an oracle, and tiles read over
HTTP."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from reporters import wire
from reporters.tlog.merkle import Frontier, Node, entry_leaf_hash
from reporters.tlog.tiles import Tile, encode_entries
from tests.support import BureauUnderTest, enrollment
from tests.tiles.programs import Ran
from tests.transparency.service import entry_ids, publish


async def grow(bureau: BureauUnderTest, n: int) -> None:
    """``n`` more entries: new agents enrolling, up to 1,000 an HTTP batch."""
    while n > 0:
        lines = [wire.sign_payload(wire.generate_key(), "enrollment", enrollment())
                 for _ in range(min(n, 1000))]
        answers = await bureau.batch(lines)
        assert all(a.get("status") in ("accepted", "duplicate") for a in answers), answers[:3]
        n -= len(lines)


class Oracle:
    """The tree of a ledger recomputed from its entry ids, and the tiles it must have."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.nodes: dict[Node, bytes] = {}
        _, completed = Frontier.empty().extend(entry_leaf_hash(i) for i in ids)
        for level, idx, h in completed:
            self.nodes[(level, idx)] = h

    @classmethod
    async def of(cls, bureau: BureauUnderTest) -> Oracle:
        return cls(await entry_ids(bureau.database_url))

    def tile(self, tile: Tile) -> bytes:
        if tile.is_entries:
            return encode_entries([bytes.fromhex(i)
                                   for i in self.ids[tile.first:tile.first + tile.width]])
        return b"".join(self.nodes[(tile.hash_level, tile.first + k)]
                        for k in range(tile.width))


async def fetch(session: aiohttp.ClientSession, url: str
                ) -> tuple[int, bytes, dict[str, str]]:
    async with session.get(url) as resp:
        return resp.status, await resp.read(), dict(resp.headers)


async def grown(bureau: BureauUnderTest, n: int) -> int:
    """Grow by ``n`` entries and publish the head; the published size."""
    await grow(bureau, n)
    return (await publish(bureau)).size


async def bureau_check(*args: str) -> Ran:
    """``bureau-check ARGS`` in a process of its own."""
    import sys

    from tests.tiles.programs import run

    return await run(sys.executable, "-m", "reporters.check.cli", *args, timeout=120)


def last_json(out: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(out.splitlines()[-1])
    return doc
