"""``bureau mirror DIR`` killed with SIGKILL on progress, then run again: no file is ever
seen half-written, the full tiles a killed run wrote are never rewritten, a killed run's
temporary files go with the next run, and the mirror comes out as a mirror made in one
pass. And ``bureau serve --mirror DIR`` keeps a mirror current as epochs are sealed."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from bureau.http.keys import PUBLISHER
from bureau.mirror.documents import Site
from bureau.mirror.sync import Mirror
from reporters import layout, wire
from tests.processes import BUREAU, ServeProcess, bureau_env
from tests.support import BureauUnderTest, kid, until
from tests.tiles.support import Oracle, grow
from tests.views.support import EPOCH_SECONDS, next_epoch

pytestmark = pytest.mark.slow

#: HTML pages carry the time they were written: compared apart
PAGES = ("index.html", "agents")


def _files(root: Path) -> dict[str, bytes]:
    """What a reader of the mirror finds (nothing whose name starts with a dot: the
    mirror's own files and its temporary ones, which no web server serves)."""
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts) \
                and not str(rel).startswith(PAGES) and "page.html" not in rel.parts:
            out[str(rel)] = path.read_bytes()
    return out


def _whole(root: Path, oracle: Oracle) -> None:
    """Whatever a reader finds is whole: each tile the tree's, each document JSON."""
    from reporters.tlog.tiles import parse_path

    for path, data in _files(root).items():
        tile = parse_path(path)
        if tile is not None:
            assert data == oracle.tile(tile), path
        elif path != layout.CHECKPOINT and not path.endswith(".note"):
            json.loads(data)


def _progress(proc: subprocess.Popen[bytes], root: Path, under: str, at_least: int) -> bool:
    """The run has written ``at_least`` files under ``under`` (or has ended)."""
    if proc.poll() is not None:
        return True
    return (root / under).exists() and sum(1 for _ in (root / under).rglob("*")) >= at_least


async def test_a_killed_mirror_resumes_and_rewrites_no_full_tile(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    await grow(bureau, 3000)  # 3,000 agents: ~20,000 files to write
    await next_epoch(bureau)
    await bureau.app[PUBLISHER].tick()
    oracle = await Oracle.of(bureau)
    env = bureau_env(bureau.database_url, tmp_path / "home", kid(bureau.admin))
    root = tmp_path / "mirror"
    kills, inodes = 0, {}
    for round_, (under, at_least) in enumerate((("tile", 4), ("v1/agents", 2000), ("", 0))):
        proc = subprocess.Popen([*BUREAU, "mirror", str(root)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if under:
            await until(f"round {round_}'s progress",
                        functools.partial(_progress, proc, root, under, at_least), every=0.002,
                        timeout=120)
            proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=300)
        if under:
            kills += proc.returncode == -signal.SIGKILL
            _whole(root, oracle)
            # full tiles only: not partial ones, nor the killed run's temporary files
            # (the next run removes those)
            full = [p for p in (root / "tile").rglob("*") if p.is_file()
                    and ".p" not in p.parts[-2] and not p.name.startswith(".")]
            inodes.update({p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in full})
        else:
            assert proc.returncode == 0, out.decode()
    assert kills >= 1, "no run was killed mid-way: make the ledger larger"
    _whole(root, oracle)
    for path, before in inodes.items():  # a full tile is written once
        assert (path.stat().st_ino, path.stat().st_mtime_ns) == before, path
    assert [p for p in root.rglob(".*.tmp")] == []  # the killed runs' temporary files
    assert list((root / ".mirror/writing").iterdir()) == []
    fresh = tmp_path / "fresh"  # a mirror made in one pass holds the same files
    conn = await asyncpg.connect(bureau.database_url)
    try:
        await Mirror(fresh, Site(bureau.log_key.origin, EPOCH_SECONDS, None, None)).sync(conn)
    finally:
        await conn.close()
    assert _files(root).keys() == _files(fresh).keys()
    assert _files(root) == _files(fresh)


async def test_serve_keeps_the_mirror_current(database_url: str, tmp_path: Path) -> None:
    admin = wire.generate_key()
    root = tmp_path / "mirror"
    env = bureau_env(database_url, tmp_path / "home", kid(admin), BUREAU_EPOCH_SECONDS="2",
                     BUREAU_SEAL_INTERVAL="0.2", BUREAU_CHECKPOINT_INTERVAL="0.5")
    server = ServeProcess(env, tmp_path / "serve.log", extra_args=("--mirror", str(root)))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            agent = wire.generate_key()
            body = wire.sign_payload(agent, "enrollment", {
                "name": "mirrored", "anchor": {"kind": "domain", "value": "m.example"},
                "operator": "M Ltd", "promises": []})
            async with session.post(server.url + "/v1/evidence", json=body) as resp:
                assert resp.status == 201, await resp.text()

            async def mirrored_report() -> bytes | None:
                path = root / layout.agent_read(kid(agent), "report")
                return path.read_bytes() if (root / layout.LATEST_CHECKPOINT).exists() \
                    and path.exists() else None

            report = await until("the mirror to hold the sealed report", mirrored_report,
                                 timeout=120)
            async with session.get(f"{server.url}/v1/agents/{kid(agent)}/report") as resp:
                assert resp.status == 200 and await resp.read() == report
            async with session.get(server.url + "/checkpoint") as resp:
                note = await resp.text()
            mirrored = int((root / layout.CHECKPOINT).read_text().split("\n")[1])
            assert 0 < mirrored <= int(note.split("\n")[1])
            async with session.get(server.ops_url + "/metrics") as resp:
                metrics = await resp.text()
            assert "bureau_mirror_files_written_total" in metrics
            assert 'bureau_leading{role="mirror"} 1.0' in metrics
    finally:
        server.stop()
