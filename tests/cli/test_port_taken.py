"""A port is one bureau's (SPEC §10 r3; issue 20 finding 9). On revision-2 main, ``make
run`` then ``make demo`` served two bureaus on 8080 at once: the workers' SO_REUSEPORT
let a second ``serve`` bind the port, and requests alternated between two ledgers. Now
``serve`` checks its public and operator ports before it creates anything and refuses,
in one line, a port another program holds; its own workers still share theirs
(tests/ledger/test_processes.py runs ``--workers``)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from reporters import wire
from tests.processes import bureau_env, free_port, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another program listens on, with SO_REUSEPORT as a bureau worker does."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _env(home: Path) -> dict[str, str]:
    # An embedded database under a fresh home: the refusal must come before it is made.
    env = bureau_env("", home, wire.signing_key_id(wire.generate_key()))
    env.pop("BUREAU_DATABASE_URL")
    return env


@pytest.mark.parametrize("which", ["--port", "--ops-port"])
@pytest.mark.parametrize("reuse", [False, True], ids=["plain", "asking-to-reuse"])
def test_a_taken_port_is_refused_before_anything_is_made(
        held_port: int, tmp_path: Path, which: str, reuse: bool) -> None:
    home = tmp_path / "home"
    other = "--ops-port" if which == "--port" else "--port"
    args = ["serve", which, str(held_port), other, str(free_port()), "--workers", "1",
            *(["--reuse-port"] if reuse else [])]
    done = run_cli(_env(home), *args)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {held_port} on 127.0.0.1 is already in use" in lines[0]
    assert "Traceback" not in done.stderr
    assert not home.exists() or not any(home.iterdir()), list(home.iterdir())


def test_a_worker_of_another_serve_is_not_one_of_ours(held_port: int, tmp_path: Path) -> None:
    """The parent-pid handshake: a BUREAU_WORKER_OF naming someone else's pid is refused."""
    env = _env(tmp_path / "home")
    env["BUREAU_WORKER_OF"] = "1"  # not the pid of the serve's parent
    done = run_cli(env, "serve", "--port", str(held_port), "--ops-port", str(free_port()),
                   "--workers", "1", "--reuse-port")
    assert done.returncode == 2 and "already in use" in done.stderr, done.stderr
