"""``bureau serve --workers`` (SPEC §10 r2): one process per usable core by default, at
most 8; the flag still overrides it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bureau.cli import build_parser
from bureau.config import default_serve_workers, usable_cores
from reporters import wire
from tests.processes import ServeProcess, bureau_env


def test_the_default_is_one_process_per_core_at_most_eight() -> None:
    args = build_parser().parse_args(["serve"])
    assert args.workers == min(8, usable_cores()) == default_serve_workers()


def test_the_flag_overrides_the_default() -> None:
    assert build_parser().parse_args(["serve", "--workers", "1"]).workers == 1
    assert build_parser().parse_args(["serve", "--workers", "13"]).workers == 13
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--workers", "0"])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
@pytest.mark.slow
def test_cores_are_those_the_process_may_run_on() -> None:
    """A process held to one core (as by ``taskset`` or a container's CPU set) serves
    with one process, however many the machine has."""
    one = min(os.sched_getaffinity(0))
    out = subprocess.run(
        [sys.executable, "-c", "from bureau.config import default_serve_workers as d; "
         "print(d())"], capture_output=True, text=True, check=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {one}))
    assert out.stdout.strip() == "1"


def _serve_descendants(root: int, *, sequencer: bool = False) -> dict[int, int]:
    """pid -> parent pid of every ``serve`` worker descending from ``root`` (Linux); with
    ``sequencer``, of the sequencer processes instead (``serve --sequence``)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if b"serve" in cmdline and (b"--sequence" in cmdline) == sequencer:
            parents[int(stat.parent.name)] = int(fields[1])
    found: dict[int, int] = {}
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier}
        found.update({pid: parents[pid] for pid in frontier})
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc to list processes")
async def test_serve_without_the_flag_starts_the_default(database_url: str,
                                                          tmp_path: Path) -> None:
    """``bureau serve`` with no ``--workers`` starts one process per core: each prints
    its listeners once it serves."""
    log = tmp_path / "serve.log"
    server = ServeProcess(bureau_env(database_url, tmp_path / "home",
                                     wire.signing_key_id(wire.generate_key())), log,
                          workers=None, extra_args=("--report-workers", "1"))
    await server.start()
    try:
        expected = default_serve_workers()
        deadline = time.monotonic() + 60
        while log.read_text().count("operator listener (/metrics) on") < expected:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            assert server.proc is not None and server.proc.poll() is None
            await asyncio.sleep(0.1)
        text = log.read_text()
        assert text.count("operator listener (/metrics) on") == expected
        assert (f"with {expected} processes" in text) == (expected > 1)
        # the workers are the first process's children, and start none of their own (a
        # worker taking the default itself would start workers in turn)
        assert server.proc is not None
        serving = _serve_descendants(server.proc.pid)
        assert len(serving) == expected - 1, serving
        assert all(parent == server.proc.pid for parent in serving.values()), serving
        # and with several processes, one sequencer of theirs (bureau.intake.sequencer)
        sequencers = _serve_descendants(server.proc.pid, sequencer=True)
        assert len(sequencers) == (expected > 1), sequencers
        assert all(parent == server.proc.pid for parent in sequencers.values()), sequencers
    finally:
        server.stop()
