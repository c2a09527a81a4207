"""A real PostgreSQL primary and a real streaming replica of it, on loopback, made with
the embedded PostgreSQL's own binaries (the ``pgserver`` wheel's ``initdb``, ``pg_ctl``
and ``pg_basebackup``). As root, PostgreSQL runs as the user ``pgserver`` (the wheel
creates it), as the embedded server does.

:func:`replicated_pair` raises :class:`Unavailable` when these binaries cannot do it
here; the fixture turns that into a skip that says why.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from tests.processes import free_port

SYSTEM_USER = "pgserver"


class Unavailable(Exception):
    """The binaries cannot make a primary and a streaming replica here."""


def _bin_dir() -> Path:
    import pgserver

    path = Path(pgserver.__file__).parent / "pginstall" / "bin"
    for tool in ("initdb", "pg_ctl", "pg_basebackup"):
        if not (path / tool).is_file():
            raise Unavailable(f"the embedded PostgreSQL has no {tool} ({path})")
    return path


def postgres_user() -> str | None:
    """Who runs PostgreSQL: as root, the embedded server's user (initdb refuses root)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/bash", SYSTEM_USER], check=True,
                       capture_output=True)
    return SYSTEM_USER


@dataclass(frozen=True)
class Cluster:
    data: Path
    port: int

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"


@dataclass(frozen=True)
class Pair:
    primary: Cluster
    replica: Cluster


class _Tools:
    def __init__(self, root: Path) -> None:
        self.bin = _bin_dir()
        self.user = postgres_user()
        self.root = root

    def run(self, tool: str, *args: str, timeout: float = 120) -> None:
        log = self.root / f"{tool}.out"
        with log.open("ab") as out:
            done = subprocess.run([str(self.bin / tool), *args], stdout=out,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  user=self.user, timeout=timeout, check=False)
        if done.returncode != 0:
            raise Unavailable(f"{tool} {' '.join(args)} failed: "
                              f"{log.read_text(errors='replace')[-1500:]}")

    def start(self, cluster: Cluster) -> None:
        # pg_ctl -w: returns once the server accepts connections (a standby too).
        self.run("pg_ctl", "-D", str(cluster.data), "-w", "-t", "60",
                 "-l", str(cluster.data.parent / (cluster.data.name + ".log")),
                 "-o", f"-h 127.0.0.1 -p {cluster.port} -k {self.root}", "start")

    def stop(self, cluster: Cluster) -> None:
        if (cluster.data / "postmaster.pid").exists():
            with suppress(Unavailable):
                self.run("pg_ctl", "-D", str(cluster.data), "-m", "immediate", "-w", "stop",
                         timeout=60)


@contextmanager
def replicated_pair() -> Iterator[Pair]:
    """A primary and a streaming replica of it, on two free loopback ports, for as long
    as the block runs."""
    root = Path(tempfile.mkdtemp(prefix="bureau-replica-"))
    root.chmod(0o755)
    tools = _Tools(root)
    if tools.user is not None:
        entry = pwd.getpwnam(tools.user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    primary = Cluster(root / "primary", free_port())
    replica = Cluster(root / "replica", free_port())
    try:
        tools.run("initdb", "-D", str(primary.data), "-U", "postgres", "--auth=trust",
                  "--encoding=utf8")
        # wal_level=replica and max_wal_senders=10 are initdb's defaults, and its
        # trust rules cover replication connections from 127.0.0.1.
        tools.start(primary)
        tools.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U",
                  "postgres", "-D", str(replica.data), "-R", "-X", "stream",
                  "--checkpoint=fast")
        tools.start(replica)
        yield Pair(primary, replica)
    finally:
        tools.stop(replica)
        tools.stop(primary)
        shutil.rmtree(root, ignore_errors=True)


async def wait_replayed(primary_url: str, replica_url: str, timeout: float = 60) -> None:
    """Until the replica has replayed everything the primary had written when asked."""
    conn = await asyncpg.connect(primary_url)
    try:
        target = await conn.fetchval("SELECT pg_current_wal_lsn()")
    finally:
        await conn.close()
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = await asyncpg.connect(replica_url)
            try:
                if await conn.fetchval("SELECT pg_last_wal_replay_lsn() >= $1", target):
                    return
            finally:
                await conn.close()
        except asyncpg.InvalidCatalogNameError:
            pass  # the database itself is not replayed yet
        if time.monotonic() > deadline:
            raise TimeoutError("the replica did not catch up")
        await asyncio.sleep(0.02)
