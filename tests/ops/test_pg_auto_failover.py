"""ops/compose.yaml's profile ha, without Docker: ops/pg_auto_failover's monitor.sh and
node.sh, run as the image runs them (the ``postgres`` user, Debian's PostgreSQL 15 and
pg_autoctl, the environment the compose file gives each service), make a formation —
the monitor with a password for the nodes, the first node the primary with the
bureau's roles, the second cloned from it over TLS with the replication password — on
which the owner migrates and ``bureau_service`` connects as the least-privilege role,
through the multi-host URL the compose file gives ``bureau-ha``.

Hostnames and ports are loopback ones here (each container has its own 5432). On
loopback initdb's own ``trust`` rules apply, so the passwords are not put to the test
here: across containers the nodes' and the monitor's ``scram-sha-256`` rules do. Skipped,
naming what is missing, without pg_auto_failover or a ``postgres`` user that may write
PostgreSQL's socket directory (Debian's postgresql-common makes both)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import yaml

from tests.processes import free_port
from tests.scaling.autofailover import Formation, Node, Unavailable, find_tools
from tests.support import missing

pytestmark = [pytest.mark.slow, pytest.mark.thirdparty]

OPS = Path(__file__).resolve().parent.parent.parent / "ops"
SCRIPTS = OPS / "pg_auto_failover"
PASSWORDS = {"BUREAU_DB_MONITOR_PASSWORD": "monitor-pw", "BUREAU_DB_REPLICATION_PASSWORD":
             "replication-pw", "BUREAU_DB_OWNER_PASSWORD": "owner-pw",
             "BUREAU_DB_SERVICE_PASSWORD": "service-pw"}
SOCKETS = Path("/var/run/postgresql")


def _interpolated(value: str) -> str:
    for name, password in PASSWORDS.items():
        value = value.replace(f"${{{name}:-}}", password)
    assert "${" not in value, value
    return value


def _compose() -> dict[str, dict[str, object]]:
    services: dict[str, dict[str, object]] = yaml.safe_load(
        (OPS / "compose.yaml").read_text())["services"]
    return services


@pytest.fixture
def made() -> Iterator[tuple[Formation, dict[str, str]]]:
    try:
        tools = find_tools()
    except Unavailable as why:
        missing(str(why))
    if os.geteuid() != 0:
        pytest.skip("runs the scripts as the postgres user: needs root")
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        missing("no postgres user (Debian's postgresql-common makes it)")
    if not (SOCKETS.is_dir() and SOCKETS.stat().st_uid == pwd.getpwnam("postgres").pw_uid):
        missing(f"{SOCKETS} is not the postgres user's (Debian's postgresql-common)")
    root = Path(tempfile.mkdtemp(prefix="bureau-ha-scripts-"))
    root.chmod(0o755)
    shutil.chown(root, "postgres")
    # Copied, as the image copies them to /usr/local/bin: the checkout may be where the
    # postgres user cannot reach (under /root).
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for script in SCRIPTS.glob("*.sh"):
        shutil.copy2(script, bin_dir / script.name)
    ports = {name: free_port() for name in ("pg-monitor", "pg-node1", "pg-node2")}
    monitor = Node("monitor", ports["pg-monitor"], root / "monitor", root / "monitor.log")
    nodes = [Node(n, ports[f"pg-{n}"], root / n, root / f"{n}.log") for n in ("node1", "node2")]
    f = Formation(root, tools, "postgres", monitor, nodes,
                  PASSWORDS["BUREAU_DB_MONITOR_PASSWORD"])
    services = _compose()
    try:
        for name, node in (("pg-monitor", monitor), ("pg-node1", nodes[0]),
                           ("pg-node2", nodes[1])):
            service = services[name]
            given = dict(service["environment"])  # type: ignore[call-overload]
            env = {k: _interpolated(str(v)) for k, v in given.items()}
            env.update(PGDATA=str(node.pgdata), PGPORT=str(node.port),
                       MONITOR_HOSTNAME="127.0.0.1", MONITOR_PORT=str(monitor.port),
                       NODE_HOSTNAME="127.0.0.1", HOME=str(root),
                       XDG_CONFIG_HOME=str(root / name / "config"),
                       XDG_DATA_HOME=str(root / name / "data"),
                       XDG_RUNTIME_DIR=str(root / name / "run"),
                       PATH=f"{tools.bindir}:{bin_dir}:/usr/bin:/bin", LANG="C.UTF-8")
            for sub in ("config", "data", "run"):
                (root / name / sub).mkdir(parents=True)
                shutil.chown(root / name / sub, "postgres")
            shutil.chown(root / name, "postgres")
            [script] = service["command"]  # type: ignore[misc]
            with node.log.open("ab") as out:
                node.proc = subprocess.Popen(
                    [str(bin_dir / str(script))], stdout=out, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, env=env, user="postgres", cwd=root,
                    start_new_session=True)
            # As compose's depends_on: the next one once this one answers over TCP.
            _until_ready(node, tools.bindir)
        yield f, ports
    finally:
        f.stop()
        shutil.rmtree(root, ignore_errors=True)


def _until_ready(node: Node, bindir: Path, timeout: float = 180) -> None:
    """Until ``node``'s server accepts connections over TCP (``pg_isready``, asked
    again while it answers "no response"); ``timeout`` bounds a hang only."""
    deadline = time.monotonic() + timeout
    while subprocess.run([str(bindir / "pg_isready"), "--host", "127.0.0.1", "--port",
                          str(node.port)], capture_output=True, check=False).returncode:
        assert node.running, node.log.read_text()[-3000:]
        assert time.monotonic() < deadline, node.log.read_text()[-3000:]
        time.sleep(0.2)


async def test_the_scripts_make_a_formation_the_bureau_runs_on(
        made: tuple[Formation, dict[str, str]]) -> None:
    f, ports = made
    node1 = f.nodes[0]
    await f.wait_primary(node1, with_secondary=True)
    services = _compose()

    def url(service: str) -> str:
        given = _interpolated(str(dict(services[service]["environment"])  # type: ignore[call-overload]
                                  ["BUREAU_DATABASE_URL"]))
        for name in ("pg-node1", "pg-node2"):
            given = given.replace(f"{name}:5432", f"127.0.0.1:{ports[name]}")
        return given

    migrated = subprocess.run(
        [sys.executable, str(OPS / "migrate.py")],
        env={**os.environ, "BUREAU_DATABASE_URL": url("migrate-ha")}, capture_output=True,
        text=True, timeout=300, check=False)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    conn = await asyncpg.connect(url("bureau-ha"))
    try:
        assert await conn.fetchval("SELECT current_user") == "bureau_service"
        assert await conn.fetchval("SELECT pg_has_role('bureau_app', 'member')")
        assert await conn.fetchval("SELECT inet_server_port()") == node1.port  # the primary
        assert await conn.fetchval("SHOW ssl") == "on"
        assert await conn.fetchval("SHOW synchronous_standby_names") != ""
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("DELETE FROM entries")  # the ledger is append-only for it
    finally:
        await conn.close()
