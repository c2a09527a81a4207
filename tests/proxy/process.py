"""``bureau-reporter proxy`` as a real process, for tests that signal or kill it."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

_STARTED = re.compile(rb"on (http://\S+), ops on (http://\S+), spool ")


class ProxyProcess:
    """One run of the command; ``start`` again for the next run on the same spool.
    Both listeners bind port 0; the startup line says where they ended up."""

    def __init__(self, log: Path, *args: str) -> None:
        self.log = log
        self.args = args
        self.proc: asyncio.subprocess.Process | None = None
        self.url = self.ops_url = ""

    async def start(self, *more: str, timeout: float = 30) -> None:
        with self.log.open("ab") as err:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "reporters.proxy.cli", "proxy", *self.args,
                "--listen", "127.0.0.1:0", "--ops-listen", "127.0.0.1:0", *more,
                stdout=asyncio.subprocess.PIPE, stderr=err, cwd=os.getcwd())
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        found = _STARTED.search(line)
        assert found, (line, self.log.read_text()[-3000:])
        self.url, self.ops_url = found[1].decode(), found[2].decode()

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
