"""The bureau's tiles read by an independent implementation: the Go checksum database's
``golang.org/x/mod/sumdb/tlog`` and ``sumdb/note`` (tests/tiles/gotlog/main.go), over
real HTTP. Go verifies the checkpoint note, recomputes the tree from the entry bundles,
compares every tile in full, and proves inclusion and consistency through its own tile
reader against the bureau's signed checkpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import BureauUnderTest
from tests.tiles.programs import build_gotlog, run
from tests.tiles.support import grown
from tests.transparency.service import get_text

pytestmark = pytest.mark.thirdparty


@pytest.fixture(scope="session")
def gotlog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield build_gotlog(tmp_path_factory.mktemp("gotlog"))


async def test_go_reads_the_bureau_tiles_and_proves_against_its_checkpoint(
        bureau: BureauUnderTest, gotlog: Path, tmp_path: Path) -> None:
    olds = []
    for n in (20, 300, 500):  # heads of several shapes: partial, one full tile, more
        await grown(bureau, n)
        _, _, note = await get_text(bureau, "/checkpoint")
        olds.append(tmp_path / f"old-{len(olds)}.note")
        olds[-1].write_text(note)
    size = await grown(bureau, 17)
    assert size > 800
    argv = [str(gotlog), "-url", bureau.url, "-vkey", bureau.log_key.vkey, "-sample", "37",
            "-every-width"]
    for old in olds:
        argv += ["-old", str(old)]
    ran = await run(*argv)
    assert ran.status == 0, ran.out
    assert f"size {size}" in ran.out
    # Go lists every partial width of a level's last tile, not only the current one's:
    # the bureau serves them all (any width its published tree covers)
    go_tiles = sum((size >> 8 * level) // 256 + (size >> 8 * level) % 256
                   for level in range(3) if size >> 8 * level)
    assert f"every one of the {go_tiles} hash tiles is the tile Go computes" in ran.out, \
        ran.out
    assert ran.out.count("is a prefix of size") == 3
    assert "FAIL" not in ran.out


async def test_go_refuses_another_bureaus_key(bureau: BureauUnderTest, gotlog: Path) -> None:
    """The check can fail: a vkey of the same name but another key."""
    from reporters import wire
    from reporters.tlog.checkpoint import log_signer

    other = log_signer(bureau.log_key.origin, wire.generate_key()).verifier.vkey
    ran = await run(str(gotlog), "-url", bureau.url, "-vkey", other)
    assert ran.status == 1 and "FAIL note" in ran.out, ran.out
