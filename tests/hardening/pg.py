"""A private PostgreSQL server that a test may stop and start: the session's shared
server must never go down under other tests.

It uses the pgserver wheel's binaries (``pgserver/pginstall/bin``), on a fixed loopback
TCP port so the database URL stays the same across restarts. PostgreSQL refuses to run as
root; when the tests run as root, the server runs as the ``pgserver`` system user that
the pgserver wheel creates for the same reason.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.processes import free_port


def _bin_dir() -> Path:
    import pgserver._commands

    return Path(pgserver._commands.POSTGRES_BIN_PATH)


class PrivatePostgres:
    """``initdb`` in a temporary directory, then ``start``/``stop`` at will."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="bureau-hardening-pg-"))
        self.pgdata = self.root / "pgdata"
        self.port = free_port()
        self.user: str | None = None
        if os.geteuid() == 0:
            import pgserver.utils

            self.user = "pgserver"
            pgserver.utils.ensure_user_exists(self.user)
            pw = pwd.getpwnam(self.user)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.root.chmod(0o755)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, exe: str, *args: str, timeout: float = 60) -> None:
        kwargs: dict[str, Any] = {"user": self.user} if self.user else {}
        subprocess.run([str(self.bin / exe), *args], check=True, timeout=timeout,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.root,
                       **kwargs)

    def init(self) -> None:
        self._run("initdb", "-D", str(self.pgdata), "--auth=trust", "-U", "postgres",
                  "--encoding=utf8")

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
        self._run("pg_ctl", "-D", str(self.pgdata), "-w", "-l", str(self.root / "pg.log"),
                  "-o", opts, "start")

    def stop(self, mode: str = "fast") -> None:
        """``fast`` disconnects every session and shuts down cleanly; ``immediate`` is
        a crash (recovery runs at the next start)."""
        self._run("pg_ctl", "-D", str(self.pgdata), "-w", "-m", mode, "stop")

    def is_running(self) -> bool:
        return (self.pgdata / "postmaster.pid").exists()

    def destroy(self) -> None:
        if self.is_running():
            with contextlib.suppress(subprocess.SubprocessError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
