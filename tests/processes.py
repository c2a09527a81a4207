"""Real ``bureau`` processes for tests that need several of them, or need to kill one."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

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
                 extra_args: tuple[str, ...] = ()) -> None:
        self.env = env
        self.extra_args = extra_args
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    async def start(self, timeout: float = 30) -> None:
        with self.log.open("ab") as fh:
            self.proc = subprocess.Popen(
                [*BUREAU, "serve", "--port", str(self.port), *self.extra_args], env=self.env,
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


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BUREAU, *args], env=env, capture_output=True, text=True,
                          timeout=300)
