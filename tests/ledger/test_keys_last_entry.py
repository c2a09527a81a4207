"""An epoch whose last entry is a ``keys`` entry (issue 21's edge, issue 35): its reports
are signed by the key in force at that entry — the old one — so only a process holding
the old key may build them. Before, a process with the new key stopped at that epoch
for good (no later epoch's reports were ever built), and a process with the old key
built nothing once its key was rotated away. Now the new key passes it over and builds
every later epoch, and the old key still builds the epochs that are its own."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from bureau.http.keys import SEALER
from reporters import Admin, wire
from tests.ledger.test_ledger_keys import _verify
from tests.support import kid, start_bureau
from tests.views.support import World


async def _built(database_url: str) -> list[int]:
    conn = await asyncpg.connect(database_url)
    try:
        return [r["epoch"] for r in await conn.fetch("SELECT epoch FROM checkpoints"
                                                     " ORDER BY epoch")]
    finally:
        await conn.close()


async def test_an_epoch_ending_in_a_keys_entry_is_built_by_the_old_key_and_blocks_nothing(
        database_url: str, tmp_path: Path) -> None:
    old_key, new_key, admin = wire.generate_key(), wire.generate_key(), wire.generate_key()
    async with start_bureau(database_url, tmp_path / "old", signing_key=old_key,
                            admin_key=admin) as old:
        world = await World.make(old)
        agent = await world.agent("a")
        await world.fact(agent)
        async with Admin(admin, old.url) as client:  # the last entry of this epoch
            await client.set_keys(kid(new_key), [kid(admin)])
        async with start_bureau(database_url, tmp_path / "new", signing_key=new_key,
                                admin_key=admin) as new:
            seconds = new.config.epoch_seconds
            new.clock.advance(seconds)
            old.clock.advance(seconds)
            await World(new, world.reporter, counter=100).fact(agent)  # the next epoch
            new.clock.advance(seconds)
            assert await new.app[SEALER].seal_once(force=True)  # before: [] for good
            [later] = await _built(database_url)
            # the old key's own epoch: built by the process that still holds it
            [first] = await old.app[SEALER].seal_once()  # before: [] (key rotated away)
            assert first < later and await _built(database_url) == [first, later]
    assert await _verify(database_url) > 0  # each signed by the key in force where it stands
