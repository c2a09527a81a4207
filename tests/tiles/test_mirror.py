"""The static mirror (SPEC §9.1 r4): ``bureau mirror DIR`` writes every public read as
the bureau serves it; with the bureau stopped, DIR behind a plain static web server
(Debian's nginx with ops/nginx/mirror.conf, and Python's http.server) is enough for
``bureau-check`` (report, inclusion, consistency, monitor) and for Go's sumdb/tlog; a
proof from it takes at most 2·⌈log₂₅₆ n⌉ + 2 tile fetches; and a hostile mirror (a tile
that does not hash to the checkpoint, a stale checkpoint, a truncated file) fails each
check in one line."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from bureau.http.keys import PUBLISHER
from bureau.mirror.documents import Site
from bureau.mirror.sync import Mirror
from reporters import layout
from reporters.tlog.tilereader import right_edge
from reporters.tlog.tiles import tiles_of
from tests.support import (
    BureauUnderTest,
    fresh_database,
    get,
    kid,
    missing,
    start_bureau,
)
from tests.tiles.programs import build_gotlog, run, static_server
from tests.tiles.support import bureau_check, grow, last_json
from tests.transparency.service import get_text
from tests.views.support import EPOCH_SECONDS, World, next_epoch

pytestmark = pytest.mark.thirdparty


@dataclass
class Mirrored:
    dir: Path
    vkey: str
    agent: str
    epochs: list[int]
    older_note: Path
    entry: tuple[str, int]  # an entry id and its seq
    size: int


async def _mirror(bureau: BureauUnderTest, root: Path) -> None:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        await Mirror(root, Site(bureau.log_key.origin, EPOCH_SECONDS, None, None)).sync(conn)
    finally:
        await conn.close()


async def _build(bureau: BureauUnderTest, root: Path, work: Path) -> Mirrored:
    world = await World.make(bureau)
    agent, other = await world.agent("alpha"), await world.agent("beta")
    for _ in range(3):
        await world.fact(agent, caller=other)
    await grow(bureau, 300)
    [first] = await next_epoch(bureau)
    await bureau.app[PUBLISHER].tick()
    _, _, note = await get_text(bureau, "/checkpoint")
    older = work / "older.note"
    older.write_text(note)
    await _mirror(bureau, root)  # a first pass, then one after the next seal
    await world.fact(agent, caller=other)
    await grow(bureau, 200)
    [second] = await next_epoch(bureau)
    await bureau.app[PUBLISHER].tick()
    await _mirror(bureau, root)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        entry = await conn.fetchrow("SELECT id, seq FROM entries WHERE seq = 250")
        size = await conn.fetchval("SELECT max(size) FROM tree_heads")
    finally:
        await conn.close()
    return Mirrored(root, bureau.log_key.vkey, kid(agent), [first, second], older,
                    (entry["id"], entry["seq"]), size)


@pytest.fixture(scope="module")
async def mirrored(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory
                   ) -> AsyncIterator[Mirrored]:
    """A mirror of a bureau with two sealed epochs and ~520 entries; the bureau is
    stopped before the tests read it."""
    work = tmp_path_factory.mktemp("mirrored")
    async with fresh_database(pg_server_url, "bureau_mirror_") as url:
        async with start_bureau(url, work / "home", epoch_seconds=EPOCH_SECONDS) as bureau:
            mirrored = await _build(bureau, work / "mirror", work)
            # every file the mirror holds is what the bureau serves at that path
            await _same_as_served(bureau, mirrored)
        yield mirrored


async def _same_as_served(bureau: BureauUnderTest, m: Mirrored) -> None:
    paths = [layout.CHECKPOINT, layout.BUREAU, layout.POLICY, layout.LATEST_CHECKPOINT,
             *(t.path for t in tiles_of(m.size))]
    for epoch in m.epochs:
        paths.append(layout.checkpoint(epoch))
    for path in paths:
        status, body = await get(bureau, "/" + path)
        assert status == 200 and (m.dir / path).read_bytes() == body, path
    for epoch in m.epochs:
        status, note = await get(bureau, f"/v1/checkpoints/{epoch}/note")
        assert (m.dir / layout.epoch_note(epoch)).read_bytes() == note
        for name in layout.AGENT_READS:
            status, body = await get(bureau, f"/v1/agents/{m.agent}/{name}?epoch={epoch}")
            assert status == 200
            assert (m.dir / layout.agent_read(m.agent, name, epoch)).read_bytes() == body, \
                (name, epoch)
    for name in layout.AGENT_READS:
        status, body = await get(bureau, f"/v1/agents/{m.agent}/{name}")
        assert (m.dir / layout.agent_read(m.agent, name)).read_bytes() == body, name
    assert (m.dir / layout.agent_page(m.agent)).read_text().startswith("<!doctype html>")
    assert (m.dir / layout.HOME).exists()


def _bound(size: int) -> int:
    return 2 * math.ceil(math.log(size, 256)) + 2


@pytest.fixture(scope="module", params=["nginx", "http.server"])
async def served(request: pytest.FixtureRequest, mirrored: Mirrored,
                 tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[str, Path]]:
    work = tmp_path_factory.mktemp(f"served-{request.param}")
    async with static_server(mirrored.dir, work, prefer=request.param) as server:
        if request.param == "nginx" and server.kind != "nginx":
            missing("nginx is not installed (Debian: apt-get install nginx)")
        yield server.url, work


async def test_bureau_check_reads_the_mirror_with_the_bureau_stopped(
        mirrored: Mirrored, served: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = served
    m = mirrored
    ran = await bureau_check("report", url, m.agent, "--vkey", m.vkey)
    assert ran.status == 0, ran.out
    assert "is the last leaf of that tree" in ran.out and "prefix of the latest" in ran.out
    ran = await bureau_check("report", url, m.agent, "--vkey", m.vkey, "--epoch",
                             str(m.epochs[0]), "--json")
    assert ran.status == 0 and last_json(ran.out)["epoch"] == m.epochs[0], ran.out
    entry, seq = m.entry
    ran = await bureau_check("inclusion", url, entry, "--seq", str(seq), "--vkey", m.vkey)
    assert ran.status == 0, ran.out
    ran = await bureau_check("inclusion", url, entry, "--vkey", m.vkey)
    # one line, then the line naming the key (as every bureau-check failure)
    assert ran.status == 2 and "--seq" in ran.out.splitlines()[0], ran.out
    ran = await bureau_check("consistency", url, str(m.older_note), "--vkey", m.vkey)
    assert ran.status == 0 and "is a prefix of the latest" in ran.out, ran.out
    state = tmp_path / "monitor.json"
    for expected in ("first head seen", "no new head"):
        ran = await bureau_check("monitor", url, "--state", str(state), "--once",
                                 "--vkey", m.vkey)
        assert ran.status == 0 and expected in ran.out, ran.out


async def test_a_proof_from_the_mirror_takes_few_tile_fetches(
        mirrored: Mirrored, tmp_path: Path) -> None:
    """Counted in nginx's access log, one proof at a time."""
    m = mirrored
    async with static_server(m.dir, tmp_path / "nginx") as server:
        if server.kind != "nginx":
            missing("nginx is not installed (Debian: apt-get install nginx): its access "
                    "log counts the fetches")
        entry, seq = m.entry
        for args in (("inclusion", server.url, entry, "--seq", str(seq)),
                     ("consistency", server.url, str(m.older_note))):
            before = len(server.requests())
            ran = await bureau_check(*args, "--vkey", m.vkey)
            assert ran.status == 0, ran.out
            tiles = [p for p in server.requests()[before:] if p.startswith("/tile/")]
            assert 0 < len(tiles) <= _bound(m.size), (args[0], tiles)


async def test_go_reads_the_mirror(mirrored: Mirrored, served: tuple[str, Path],
                                   tmp_path: Path) -> None:
    gotlog = build_gotlog(tmp_path)
    ran = await run(str(gotlog), "-url", served[0], "-vkey", mirrored.vkey, "-old",
                    str(mirrored.older_note))
    assert ran.status == 0 and "FAIL" not in ran.out, ran.out
    assert "is a prefix of size" in ran.out


@pytest.fixture
async def hostile(mirrored: Mirrored, tmp_path: Path) -> AsyncIterator[tuple[Path, str]]:
    """A copy of the mirror, served by http.server, for a test to damage."""
    copy = tmp_path / "copy"
    shutil.copytree(mirrored.dir, copy)
    async with static_server(copy, tmp_path / "server", prefer="http.server") as server:
        yield copy, server.url


async def test_a_tile_that_does_not_hash_to_the_checkpoint_fails(
        mirrored: Mirrored, hostile: tuple[Path, str], tmp_path: Path) -> None:
    copy, url = hostile
    tile = copy / "tile/0/000"
    data = bytearray(tile.read_bytes())
    data[100] ^= 1
    tile.write_bytes(bytes(data))
    entry, seq = mirrored.entry
    ran = await bureau_check("inclusion", url, entry, "--seq", "2", "--vkey", mirrored.vkey)
    assert ran.status == 1 and "tile/0/000 does not hash to the checkpoint" in \
        ran.out.splitlines()[0], ran.out
    gotlog = build_gotlog(tmp_path)
    ran = await run(str(gotlog), "-url", url, "-vkey", mirrored.vkey)
    assert ran.status == 1 and "FAIL" in ran.out, ran.out
    del seq, entry


async def test_a_stale_checkpoint_fails(mirrored: Mirrored, hostile: tuple[Path, str]) -> None:
    """The mirror's checkpoint replaced by an older one (signed by the bureau and all):
    the latest report's tree is larger than what it calls the latest."""
    copy, url = hostile
    (copy / "checkpoint").write_bytes(mirrored.older_note.read_bytes())
    ran = await bureau_check("report", url, mirrored.agent, "--vkey", mirrored.vkey)
    assert ran.status == 1 and "rewound" in ran.out.splitlines()[0], ran.out


@pytest.mark.parametrize("victim", ["report", "tile"])
async def test_a_truncated_file_fails(mirrored: Mirrored, hostile: tuple[Path, str],
                                      victim: str) -> None:
    copy, url = hostile
    path = (copy / layout.agent_read(mirrored.agent, "report", mirrored.epochs[-1])
            if victim == "report" else copy / right_edge(mirrored.size)[0].path)
    path.write_bytes(path.read_bytes()[:-20])
    ran = await bureau_check("report", url, mirrored.agent, "--vkey", mirrored.vkey)
    assert ran.status == 1 and "FAILED" in ran.out.splitlines()[0], ran.out


def test_the_mirror_keeps_its_own_files_apart(mirrored: Mirrored) -> None:
    """Nothing but the reads (and .mirror/) is in the directory: no temporary file; the
    latest reads are links to their epoch's files."""
    state = json.loads((mirrored.dir / ".mirror/state.json").read_text())
    assert set(state["logs"]) == {str(e) for e in mirrored.epochs}
    assert list(mirrored.dir.rglob(".*.tmp")) == []
    assert list((mirrored.dir / ".mirror/writing").iterdir()) == []
    latest = mirrored.dir / layout.agent_read(mirrored.agent, "report")
    assert latest.is_symlink() and latest.resolve() == (
        mirrored.dir / layout.agent_read(mirrored.agent, "report", mirrored.epochs[-1]))
