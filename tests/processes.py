"""Real ``bureau`` processes for tests that need several of them, or need to kill one."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import aiohttp

BUREAU = [sys.executable, "-m", "bureau.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def bureau_env(database_url: str, home: Path, admin_kid: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(BUREAU_DATABASE_URL=database_url, BUREAU_HOME=str(home),
               BUREAU_ADMIN_KEYS=admin_kid, **extra)
    return env


class ServeProcess:
    """``bureau serve`` on a fixed port, which survives restarts."""

    def __init__(self, env: dict[str, str], log: Path, port: int | None = None,
                 extra_args: tuple[str, ...] = (), workers: int | None = 1) -> None:
        self.env = env
        self.extra_args = extra_args
        #: One process unless the test asks for more (None: ``serve``'s default, one per
        #: core): a test that scrapes ``/metrics``, kills the server or restarts it on
        #: the same port needs the one process it started (a worker outliving a killed
        #: parent for a moment would still hold the port).
        self.workers_args = () if workers is None else ("--workers", str(workers))
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        #: the operator listener (/metrics): a free port of its own, never the default
        #: 9464 another bureau on this machine may hold
        self.ops_port = free_port()
        self.ops_url = f"http://127.0.0.1:{self.ops_port}"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    async def start(self, timeout: float = 30) -> None:
        with self.log.open("ab") as fh:
            self.proc = subprocess.Popen(
                [*BUREAU, "serve", "--port", str(self.port), "--ops-port", str(self.ops_port),
                 *self.workers_args, *self.extra_args], env=self.env,
                stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                assert self.proc.poll() is None, self.log.read_text()[-3000:]
                try:
                    async with session.get(self.url + "/readyz") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise TimeoutError(f"bureau did not become ready: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL: no cleanup, no flush, exactly like a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


async def post_batch(session: aiohttp.ClientSession, url: str, lines: list[bytes], *,
                     timeout: float) -> list[dict[str, Any]]:
    """POST ``lines`` (signed envelopes) to ``url``'s batch endpoint; its answer a line
    each. Any status but 200 raises ``ConnectionError``: to a test that kills servers, a
    server going away mid-request is one more thing that happens."""
    async with session.post(url + "/v1/evidence/batch", data=b"\n".join(lines) + b"\n",
                            headers={"Content-Type": "application/x-ndjson"},
                            timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
        if resp.status != 200:
            raise ConnectionError(f"status {resp.status}")
        return [json.loads(x) for x in (await resp.text()).splitlines()]


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BUREAU, *args], env=env, capture_output=True, text=True,
                          timeout=300)


class Killable(Protocol):
    """What :class:`ProgressKiller` strikes: a :class:`ServeProcess`, or anything killed
    at once and brought back (or replaced: a database's failover) by ``start``."""

    def kill(self) -> None: ...

    async def start(self, timeout: float = 30) -> None: ...


class ProgressKiller:
    """Kills ``server`` with SIGKILL at chosen points of a client's progress, never after
    a fixed time: a crash test must crash as often on a fast machine as on a slow one.

    The client calls :meth:`reached` after each unit of work it got acknowledged (a
    batch, a fact...). When ``n`` is one of ``targets``, the kill is started in the
    background and strikes a random fraction of one unit's time later (the time the
    last unit took, as measured here, capped by ``max_delay``), so that on any machine
    it usually lands while the next unit is in flight: mid-request or mid-commit. The
    client is held at its following call until that kill and the restart are done, so
    however fast the client runs, every target gets its kill
    (``kills == len(targets)``).
    """

    def __init__(self, server: Killable, targets: Iterable[int], rnd: random.Random,
                 *, max_delay: float = 0.2, restart_timeout: float = 60,
                 log: Callable[[str], None] = lambda _: None) -> None:
        self.server = server
        self.targets = set(targets)
        self.rnd = rnd
        self.max_delay = max_delay
        self.restart_timeout = restart_timeout
        self.log = log
        self.kills = 0
        self._pending: asyncio.Task[None] | None = None
        self._last = time.monotonic()

    async def reached(self, n: int) -> None:
        await self.settled()
        now = time.monotonic()
        unit, self._last = now - self._last, now
        if n in self.targets:
            delay = self.rnd.uniform(0.0, min(self.max_delay, 1.5 * unit))
            self._pending = asyncio.create_task(self._strike(n, delay))
            await asyncio.sleep(0)  # let it start its countdown before the client goes on

    async def settled(self) -> None:
        """Wait for a kill in flight, and the restart after it."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            await pending

    async def _strike(self, n: int, delay: float) -> None:
        await asyncio.sleep(delay)
        self.server.kill()
        self.kills += 1
        self.log(f"kill -9 #{self.kills} (after {n} acknowledged)")
        await self.server.start(timeout=self.restart_timeout)
        self._last = time.monotonic()  # the restart is not a unit of the client's work
