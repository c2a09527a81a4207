"""``bureau-reporter`` commands as real processes, for tests that signal or kill them:
``proxy`` here, ``probe`` in tests/prober/process.py."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path


class ReporterProcess:
    """One run of ``bureau-reporter COMMAND``; ``start`` again for the next run on the
    same spool. Listeners bind port 0; the startup line says where they ended up."""

    command = ""
    #: the startup line, its groups the listeners' URLs
    started = re.compile(rb"")
    listeners: tuple[str, ...] = ()

    def __init__(self, log: Path, *args: str) -> None:
        self.log = log
        self.args = args
        self.proc: asyncio.subprocess.Process | None = None
        self.urls: tuple[str, ...] = ()

    async def start(self, *more: str, timeout: float = 30) -> None:
        listen = [arg for flag in self.listeners for arg in (flag, "127.0.0.1:0")]
        with self.log.open("ab") as err:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "reporters.proxy.cli", self.command, *self.args,
                *listen, *more, stdout=asyncio.subprocess.PIPE, stderr=err, cwd=os.getcwd())
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        found = self.started.search(line)
        assert found, (line, self.log.read_text()[-3000:])
        self.urls = tuple(g.decode() for g in found.groups())

    def kill(self) -> None:
        """SIGKILL, now: no handler runs, nothing is flushed or closed."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)

    async def wait(self, timeout: float = 60) -> int:
        assert self.proc is not None
        code = await asyncio.wait_for(self.proc.wait(), timeout)
        self.proc = None
        return code

    async def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 60) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return await self.wait(timeout)

    def logged(self) -> str:
        return self.log.read_text()


class ProxyProcess(ReporterProcess):
    command = "proxy"
    started = re.compile(rb"on (http://\S+), ops on (http://\S+), spool ")
    listeners = ("--listen", "--ops-listen")

    @property
    def url(self) -> str:
        return self.urls[0]

    @property
    def ops_url(self) -> str:
        return self.urls[1]
