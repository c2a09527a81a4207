"""A pg_auto_failover formation on loopback: a monitor, a primary and a synchronous
secondary, made with Debian's ``pg_autoctl`` (package ``postgresql-15-auto-failover``)
and the PostgreSQL it was built for (``/usr/lib/postgresql/N/bin``).

Each node is one ``pg_autoctl run`` (the keeper) and the PostgreSQL it supervises, on a
free loopback port, with its data, configuration and socket in one temporary directory.
As root, everything runs as the ``pgserver`` user that the embedded server's wheel
creates (PostgreSQL and ``pg_autoctl`` refuse root), as tests/scaling/replication.py
does.

:func:`formation` raises :class:`Unavailable`, naming what is missing, when the tools
are not installed; tests turn that into a skip (or a failure under
``BUREAU_REQUIRE_OPS_TOOLS``). The harness waits on the monitor's own state (its
``pgautofailover.node`` table, woken by its ``state`` notifications), never on time.

The monitor is made to notice a dead node in about two seconds instead of its defaults'
twenty, and to wait two seconds, not thirty, for a primary it cannot reach to demote
itself (:data:`FAST_MONITOR`): a test waits less, and nothing else changes. An operator
keeps the defaults (docs/scaling.md says why and what a failover then takes).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

from tests.processes import free_port
from tests.scaling.replication import postgres_user

PACKAGE = "postgresql-15-auto-failover"
#: the database the formation serves (``pg_autoctl create postgres --dbname``)
DBNAME = "bureau"

#: The monitor's settings for a test: a node is unhealthy after one failed health check
#: (checked every second) and 2 s without a report from its keeper; a primary that
#: cannot be reached is given 2 s to demote itself before the secondary takes writes.
#: The defaults are 5 s checks, 2 retries, 20 s and 30 s.
FAST_MONITOR = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "2000",
    "pgautofailover.primary_demote_timeout": "2000",
    "pgautofailover.startup_grace_period": "1000",
}

#: states in which a node takes writes (wait_primary: alone, replication asynchronous)
WRITABLE = ("primary", "wait_primary")


class Unavailable(Exception):
    """pg_auto_failover cannot make a formation here; the message says what is missing."""


@dataclass(frozen=True)
class Tools:
    pg_autoctl: str
    bindir: Path  # the PostgreSQL whose lib holds pgautofailover.so


def find_tools() -> Tools:
    """``pg_autoctl`` and a PostgreSQL with the ``pgautofailover`` extension, or
    :class:`Unavailable` naming the Debian package that brings both."""
    pg_autoctl = shutil.which("pg_autoctl")
    for bindir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        path = Path(bindir)
        if (path / "pg_ctl").is_file() and (path.parent / "lib" / "pgautofailover.so").is_file():
            if pg_autoctl is None:
                break
            return Tools(pg_autoctl, path)
    missing = "pg_autoctl" if pg_autoctl is None else "the pgautofailover extension"
    raise Unavailable(f"{missing} is not installed (Debian's {PACKAGE}; `.ci/run` "
                      "installs it)")


@dataclass
class Node:
    """One ``pg_autoctl run`` and the PostgreSQL it supervises."""

    name: str
    port: int
    pgdata: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, database: str = DBNAME) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class Formation:
    """The monitor and the data nodes of the ``default`` formation."""

    root: Path
    tools: Tools
    user: str | None
    monitor: Node
    nodes: list[Node] = field(default_factory=list)
    #: autoctl_node's password on the monitor, where it has one (ops/pg_auto_failover)
    monitor_password: str | None = None

    # ------------------------------------------------------------------ pg_autoctl

    @property
    def env(self) -> dict[str, str]:
        """pg_autoctl keeps its configuration and state under XDG directories; the
        sockets go to one directory of ours (``PG_REGRESS_SOCK_DIR`` is how pg_autoctl
        is told where PostgreSQL puts them, ``PGHOST`` where to find them)."""
        run = str(self.root / "run")
        return {"PATH": f"{self.tools.bindir}:/usr/bin:/bin", "HOME": str(self.root),
                "XDG_CONFIG_HOME": str(self.root / "config"),
                "XDG_DATA_HOME": str(self.root / "data"), "XDG_RUNTIME_DIR": run,
                "PG_REGRESS_SOCK_DIR": run, "PGHOST": run, "LANG": "C.UTF-8"}

    def autoctl(self, *args: str, timeout: float = 180) -> str:
        """Run one ``pg_autoctl`` command to its end; its standard output."""
        log = self.root / "pg_autoctl.out"
        with log.open("ab") as err:
            done = subprocess.run([self.tools.pg_autoctl, *args], stdout=subprocess.PIPE,
                                  stderr=err, stdin=subprocess.DEVNULL, env=self.env,
                                  user=self.user, cwd=self.root, timeout=timeout,
                                  check=False)
        if done.returncode != 0:
            raise Unavailable(f"pg_autoctl {' '.join(args[:2])} failed: "
                              f"{log.read_text(errors='replace')[-2000:]}")
        return done.stdout.decode()

    def run(self, node: Node) -> None:
        """Start (or start again) ``pg_autoctl run`` for ``node``, in a process group
        of its own (what :meth:`kill` strikes)."""
        assert not node.running, f"{node.name} is already running"
        with node.log.open("ab") as out:
            node.proc = subprocess.Popen(
                [self.tools.pg_autoctl, "run", "--pgdata", str(node.pgdata)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, user=self.user, cwd=self.root, start_new_session=True)

    def kill(self, node: Node) -> None:
        """``kill -9`` of the whole node at once, as when its machine dies: pg_autoctl's
        processes (its group) and PostgreSQL's (the postmaster and every backend, each
        of which is a session leader of its own, so not in that group)."""
        assert node.proc is not None
        victims = postgres_processes(node.pgdata)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.proc.pid, signal.SIGKILL)
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        node.proc.wait()

    def stop(self) -> None:
        """The end of the formation: every process of it killed (it is thrown away)."""
        for node in [*self.nodes, self.monitor]:
            if node.proc is not None and node.proc.poll() is None:
                self.kill(node)
            else:
                for pid in postgres_processes(node.pgdata):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)

    def uri(self) -> str:
        """The formation's URL as ``pg_autoctl show uri`` prints it (every data node,
        ``target_session_attrs=read-write``), with the user the bureau connects as."""
        shown = self.autoctl("show", "uri", "--pgdata", str(self.monitor.pgdata),
                             "--formation", "default").strip()
        scheme, rest = shown.split("://", 1)
        return f"{scheme}://postgres@{rest}"

    # ------------------------------------------------------------------ the monitor's state

    def monitor_url(self) -> str:
        if self.monitor_password is None:
            return f"postgresql://autoctl_node@127.0.0.1:{self.monitor.port}/pg_auto_failover"
        return (f"postgresql://autoctl_node:{self.monitor_password}@127.0.0.1:"
                f"{self.monitor.port}/pg_auto_failover?sslmode=require")

    async def states(self, conn: asyncpg.Connection) -> dict[str, tuple[str, str]]:
        """Each data node's (reported state, goal state), as the monitor has them."""
        rows = await conn.fetch("SELECT nodename, reportedstate::text AS reported,"
                                " goalstate::text AS goal FROM pgautofailover.node")
        return {r["nodename"]: (r["reported"], r["goal"]) for r in rows}

    async def wait_for(self, what: str,
                       done: Callable[[Mapping[str, tuple[str, str]]], bool],
                       timeout: float = 180) -> dict[str, tuple[str, str]]:
        """Until the monitor's state satisfies ``done``: re-read at each of its
        ``state`` notifications (and each second, in case one was missed). ``timeout``
        only bounds a hang; it is no part of what is tested."""
        conn = await asyncpg.connect(self.monitor_url())
        changed = asyncio.Event()
        try:
            await conn.add_listener("state", lambda *_: changed.set())
            deadline = time.monotonic() + timeout
            while True:
                changed.clear()
                states = await self.states(conn)
                if done(states):
                    return states
                if time.monotonic() > deadline:
                    raise TimeoutError(f"waited {timeout:g} s for {what}; the monitor "
                                       f"has {states}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), 1.0)
        finally:
            await conn.close()

    async def wait_primary(self, node: Node, *, with_secondary: bool,
                           timeout: float = 180) -> None:
        """Until ``node`` takes writes (and, with ``with_secondary``, the other node is
        its synchronous secondary), as reported by the keepers and assigned by the
        monitor."""
        others = [n.name for n in self.nodes if n is not node]

        def done(states: Mapping[str, tuple[str, str]]) -> bool:
            mine = states.get(node.name)
            if mine is None or mine[0] != mine[1]:
                return False
            if with_secondary:
                return mine[0] == "primary" and all(
                    states.get(o) == ("secondary", "secondary") for o in others)
            return mine[0] in WRITABLE

        await self.wait_for(f"{node.name} to be primary"
                            + (" with a secondary" if with_secondary else ""), done, timeout)

    async def primary(self) -> Node:
        conn = await asyncpg.connect(self.monitor_url())
        try:
            states = await self.states(conn)
        finally:
            await conn.close()
        for node in self.nodes:
            if states.get(node.name, ("", ""))[0] in WRITABLE:
                return node
        raise AssertionError(f"no primary: {states}")

    def secondary_of(self, primary: Node) -> Node:
        return next(n for n in self.nodes if n is not primary)


def postgres_processes(pgdata: Path) -> list[int]:
    """The postmaster of ``pgdata`` (from its pid file) and its children."""
    try:
        postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    pids = [postmaster]
    for stat in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # "pid (comm) state ppid ...": comm may hold spaces, so split after ")"
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == postmaster:
                pids.append(int(Path(stat).parent.name))
    return pids


def _append_settings(pgdata: Path, settings: Mapping[str, str]) -> None:
    """Settings after pg_autoctl's own include: the last value of a setting wins."""
    with (pgdata / "postgresql.conf").open("a") as conf:
        conf.write("\n# tests/scaling/autofailover.py\n")
        conf.writelines(f"{name} = {value}\n" for name, value in settings.items())


@contextmanager
def formation(*, monitor_settings: Mapping[str, str] = FAST_MONITOR,
              node_settings: Mapping[str, Any] | None = None) -> Iterator[Formation]:
    """A monitor and two data nodes: ``node1`` the primary, ``node2`` its synchronous
    secondary; thrown away when the block ends. Call from a thread or a synchronous
    fixture (the commands block), then wait with the async methods."""
    tools = find_tools()
    user = postgres_user()
    root = Path(tempfile.mkdtemp(prefix="bureau-failover-"))
    root.chmod(0o755)
    for sub in ("run", "config", "data"):
        (root / sub).mkdir()
    if user is not None:
        entry = pwd.getpwnam(user)
        for path in (root, root / "run", root / "config", root / "data"):
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def node(name: str) -> Node:
        return Node(name, free_port(), root / name, root / f"{name}.log")

    made = Formation(root, tools, user, node("monitor"), [node("node1"), node("node2")])
    pg_ctl = str(tools.bindir / "pg_ctl")
    try:
        made.autoctl("create", "monitor", "--pgdata", str(made.monitor.pgdata),
                     "--pgport", str(made.monitor.port), "--pgctl", pg_ctl,
                     "--hostname", "127.0.0.1", "--listen", "127.0.0.1",
                     "--auth", "trust", "--no-ssl")
        _append_settings(made.monitor.pgdata, monitor_settings)
        made.run(made.monitor)
        monitor = (f"postgres://autoctl_node@127.0.0.1:{made.monitor.port}/"
                   "pg_auto_failover?sslmode=disable")
        for n in made.nodes:
            # The second node's create waits until the monitor has a primary, and
            # clones it (pg_basebackup); each keeper then runs from its own config.
            made.autoctl("create", "postgres", "--pgdata", str(n.pgdata),
                         "--pgport", str(n.port), "--pgctl", pg_ctl,
                         "--pghost", str(root / "run"), "--listen", "127.0.0.1",
                         "--hostname", "127.0.0.1", "--name", n.name,
                         "--username", "postgres", "--dbname", DBNAME,
                         "--auth", "trust", "--no-ssl", "--monitor", monitor)
            if node_settings:
                _append_settings(n.pgdata, {k: str(v) for k, v in node_settings.items()})
            made.run(n)
        yield made
    finally:
        made.stop()
        shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------- a client's view


@dataclass
class Probed:
    """What a client posting a new envelope every 20 ms from the kill on saw."""

    seconds: float  # from the kill to the first envelope accepted
    accepted: str  # that entry's id
    #: the answers before it: (status, code, whether Retry-After was given) -> how many
    answers: collections.Counter[tuple[int, str, bool]]


async def first_accepted(session: aiohttp.ClientSession, url: str,
                         envelope: Callable[[int], dict[str, Any]], since: float,
                         pause: float = 0.02) -> Probed:
    """POST ``envelope(0)``, ``envelope(1)``, ... to the bureau at ``url`` (each a new
    one, every ``pause`` seconds) until one is accepted; how long after ``since`` (a
    ``time.monotonic()``, the kill) that was, and what came before."""
    answers: collections.Counter[tuple[int, str, bool]] = collections.Counter()
    for i in range(1_000_000):
        async with session.post(url + "/v1/evidence", json=envelope(i)) as resp:
            body = await resp.json()
            if resp.status == 201:
                return Probed(time.monotonic() - since, body["id"], answers)
            answers[(resp.status, body.get("code"), "Retry-After" in resp.headers)] += 1
        await asyncio.sleep(pause)
    raise AssertionError("no envelope was accepted")
