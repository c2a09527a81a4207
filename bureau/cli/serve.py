"""``bureau serve``: the service on its port and the operator listener on its own, until
SIGTERM or SIGINT — after the checks a start makes (the ports free, the ledger's keys),
with ``--workers N``'s other processes beside it (bureau.cli.supervisor). ``serve
--sequence`` (internal) is the node's sequencer process that ``--workers N`` starts."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import nacl.signing
from aiohttp import web

from bureau import keyfiles, ledger_line, ports
from bureau.cli import supervisor
from bureau.cli.parser import port, positive
from bureau.cli.reading import database_url
from bureau.config import Config, default_serve_workers
from bureau.http.access_log import FORMATS as ACCESS_LOG_FORMATS
from bureau.http.listener import service_runner
from bureau.intake.genesis import StartRefused
from bureau.intake.sequencer import SOCKET_ENV as SEQUENCER_SOCKET
from bureau.ledger_keys import KeyPeriod
from bureau.storage import db, overview
from reporters import wire
from reporters._internal import wording

#: How long a thread may hold the GIL while another waits for it (Python's default is
#: 5 ms). The group committer runs on a thread of its own and holds the ledger lock
#: while it waits for the GIL after each answer from PostgreSQL; with 0.5 ms, intake
#: was faster in every pair of runs measured (docs/benchmarks.md, issue 15).
SWITCH_INTERVAL = 0.0005


def add_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=port, default=8080, help="port to listen on")
    serve.add_argument("--ops-host", default="127.0.0.1",
                       help="address of the operator listener: /metrics, /healthz, /readyz "
                       "(default 127.0.0.1)")
    serve.add_argument("--ops-port", type=port, default=9464,
                       help="port of the operator listener (default 9464; 0: any free port, "
                       "printed at start)")
    serve.add_argument("--workers", type=positive, default=default_serve_workers(),
                       help="processes serving the same port (default one per core, at "
                       f"most 8: {default_serve_workers()} here)")
    # Internal: how ``--workers N`` starts its workers (SO_REUSEPORT on the parent's
    # ports). Anyone else's port check still runs: a second serve cannot join a port.
    serve.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)
    # Internal: the node's sequencer, which ``--workers N`` starts (bureau.intake.sequencer).
    serve.add_argument("--sequence", metavar="SOCKET", default=None, help=argparse.SUPPRESS)
    serve.add_argument("--max-pending", type=positive, default=None,
                       help="envelopes waiting for the ledger before intake answers 503 "
                       "UNAVAILABLE (default 20000)")
    serve.add_argument("--report-workers", type=positive, default=None,
                       help="processes that derive and sign reports at each seal "
                       "(default BUREAU_REPORT_WORKERS, else one per core up to 4; "
                       "1 = in the serving process)")
    serve.add_argument("--access-log", choices=ACCESS_LOG_FORMATS, default="off",
                       help="one line per request on standard output: text, or one JSON "
                       "object a line (docs/operations.md#access-log)")
    serve.add_argument("--mirror", type=Path, metavar="DIR", default=None,
                       help="keep a static mirror of every public read in DIR, current "
                       "after each seal and tree head (docs/operations.md#a-static-mirror)")
    serve.set_defaults(func=cmd_serve)


@dataclass(frozen=True)
class Service:
    """What one serving process serves: its configuration (the ledger's settings once
    its genesis entry is read), its database, the bureau's signing key, and the node's
    sequencer it hands its units to (None: it commits them itself)."""

    config: Config
    database_url: str
    signing_key: nacl.signing.SigningKey
    sequencer: Path | None


@dataclass(frozen=True)
class Listeners:
    """Where one serving process listens: the service on ``host``/``port``, the operator
    listener on ``ops_host``/``ops_port`` (SPEC §9: ``/metrics`` only there); with
    ``--workers N`` (``processes``) every process opens both with SO_REUSEPORT."""

    host: str
    port: int
    ops_host: str
    ops_port: int
    access_log: str
    reuse_port: bool
    processes: int

    @classmethod
    def of(cls, args: argparse.Namespace) -> Listeners:
        return cls(args.host, args.port, args.ops_host, args.ops_port, args.access_log,
                   reuse_port=args.workers > 1 or args.reuse_port, processes=args.workers)


def cmd_serve(args: argparse.Namespace) -> int:
    run_dir = supervisor.metrics_run_dir(args) if args.workers > 1 else None
    try:
        return _serve_until_stopped(args)
    finally:
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)


def _configured(args: argparse.Namespace) -> Config:
    """The environment's configuration, with the flags that override it."""
    config = Config.from_env()
    if args.max_pending is not None:
        config = replace(config, max_pending=args.max_pending)
    if args.report_workers is not None:
        config = replace(config, report_workers=args.report_workers)
    if args.mirror is not None:
        config = replace(config, mirror_dir=args.mirror.resolve())
    return config


def _serve_until_stopped(args: argparse.Namespace) -> int:
    sys.setswitchinterval(SWITCH_INTERVAL)
    config = _configured(args)
    if not supervisor.is_worker():  # a worker shares its parent's ports, which it checked
        taken = ports.taken([(args.host, args.port), (args.ops_host, args.ops_port)])
        if taken is not None:
            print(f"bureau serve: refusing to start: {taken}", file=sys.stderr)
            return 2
    try:
        url = database_url(config)
        config, signing_key = _keys(config, url)
    except StartRefused as refused:
        print(f"bureau serve: refusing to start: {refused.detail}", file=sys.stderr)
        return 2
    except db.QUERY_ERRORS as exc:
        print(f"bureau serve: cannot reach the database: {exc}".replace("\n", " "),
              file=sys.stderr)
        return 2
    if args.sequence is not None:
        asyncio.run(_sequence(config, url, signing_key, Path(args.sequence)))
        return 0
    print(f"bureau key: {wire.signing_key_id(signing_key)}", flush=True)
    print(f"ledger at {ledger_line.where(config)}", flush=True)
    sequencer = supervisor.SequencerProcess(args, config) if args.workers > 1 else None
    workers = supervisor.start_workers(args, config, url) if args.workers > 1 else []
    # A sequencer's socket is this serve's own, or its parent's for one of its workers:
    # never one named by an environment some other serve left behind.
    socket_path = (str(sequencer.socket) if sequencer is not None
                   else os.environ.get(SEQUENCER_SOCKET) if supervisor.is_worker() else None)
    service = Service(config, url, signing_key,
                      None if socket_path is None else Path(socket_path))
    try:
        asyncio.run(_serve(service, Listeners.of(args)))
    except StartRefused as refused:  # the ledger's settings rule (bureau.intake.genesis)
        print(f"bureau serve: refusing to start: {refused.detail}", file=sys.stderr)
        return 2
    except OSError as exc:  # a port taken, an address not ours
        print(f"bureau serve: cannot listen: {exc}", file=sys.stderr)
        return 2
    finally:
        try:
            supervisor.stop_workers(workers)
        finally:
            if sequencer is not None:  # last: the workers' last requests go through it
                sequencer.stop()
    return 0


def _with_default_keys(config: Config) -> Config:
    """A new ledger's keys: the admin key and the signing key are created under
    BUREAU_HOME when not given."""
    if not config.admin_keys:
        path = config.home / "admin.key"
        key, created = keyfiles.load_or_create(path)
        kid = wire.signing_key_id(key)
        print(f"admin key {'created' if created else 'loaded'}: {path}  ({kid})", flush=True)
        config = replace(config, admin_keys=frozenset({kid}))
    else:
        print(f"admin keys: {', '.join(sorted(config.admin_keys))}", flush=True)
    if config.signing_key_path is None:
        config = replace(config, signing_key_path=config.home / "signing.key")
    return config


def _keys_of_ledger(config: Config, in_force: KeyPeriod,
                    ) -> tuple[Config, nacl.signing.SigningKey]:
    """An existing ledger's keys (SPEC §10 r3): nothing is created. The signing key is
    the node's key file, which must be the key in force; the admin set is the ledger's
    (``BUREAU_ADMIN_KEYS``, when set, must name that very set). Raises StartRefused."""
    from bureau.intake.genesis import check_signers

    path = config.signing_key_path or config.home / "signing.key"
    if not path.exists():
        raise StartRefused(
            f"this ledger exists (its key in force is {in_force.bureau}) and there is no "
            f"signing key at {path}: a node joining a ledger is given that key's file "
            "(BUREAU_SIGNING_KEY); it never makes keys of its own")
    signing_key = keyfiles.read_key(path)
    config = check_signers(replace(config, signing_key_path=path), in_force,
                           wire.signing_key_id(signing_key))
    print(f"admin keys (the ledger's): {', '.join(sorted(config.admin_keys))}", flush=True)
    return config, signing_key


def _keys(config: Config, url: str) -> tuple[Config, nacl.signing.SigningKey]:
    """The configuration with its admin set, and the signing key: made for a new ledger
    where not given, the existing ledger's otherwise."""
    from bureau.intake.genesis import signers_of

    in_force = asyncio.run(signers_of(url))
    if in_force is not None:
        return _keys_of_ledger(config, in_force)
    config = _with_default_keys(config)
    assert config.signing_key_path is not None
    signing_key, _ = keyfiles.load_or_create(config.signing_key_path)
    return config, signing_key


async def _sequence(config: Config, url: str, signing_key: nacl.signing.SigningKey,
                    path: Path) -> None:
    """The sequencer process: the ledger's settings, then its committer behind ``path``
    until SIGTERM."""
    from bureau.intake import genesis
    from bureau.intake.clock import utcnow
    from bureau.intake.committer import Committer
    from bureau.intake.sequencer import run_sequencer

    conn = await db.connect(url)
    try:
        await db.migrate(conn)
        settled = await genesis.establish(conn, config, signing_key.verify_key, utcnow())
    finally:
        await conn.close()
    stop = asyncio.Event()
    # Only the serve's own SIGTERM stops it, after its workers: a Ctrl-C reaches the
    # whole process group at once, and the workers' last requests still come here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await run_sequencer(Committer(url, settled, sequencer=True), path, stop)


def _bound(runner: web.AppRunner) -> str:
    """host:port a runner's first site listens on (the port an ``0`` asked for)."""
    host, port = runner.addresses[0][:2]
    return f"{host}:{port}"


async def _serve(service: Service, listeners: Listeners) -> None:
    """The service and the operator listener, until SIGTERM or SIGINT."""
    from bureau.http.app import create_app, create_ops_app

    app = create_app(service.config, service.database_url, service.signing_key,
                     sequencer=service.sequencer)
    runner = service_runner(app, service.config.header_seconds, listeners.access_log)
    ops_runner = web.AppRunner(create_ops_app(app), access_log=None)
    stop = asyncio.Event()
    received: list[str] = []
    loop = asyncio.get_running_loop()
    def stopping(signum: signal.Signals) -> None:
        received.append(signum.name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping, signum)
    await runner.setup()  # the cleanup contexts: pool, genesis, committer, sealer
    started = await _entries(service.database_url)
    try:
        await web.TCPSite(runner, listeners.host, listeners.port,
                          reuse_port=listeners.reuse_port).start()
        await ops_runner.setup()
        try:
            await web.TCPSite(ops_runner, listeners.ops_host, listeners.ops_port,
                              reuse_port=listeners.reuse_port).start()
            print(f"serving on http://{_bound(runner)}"
                  + (f" with {listeners.processes} processes" if listeners.processes > 1
                     else "")
                  + f", operator listener (/metrics) on http://{_bound(ops_runner)}",
                  flush=True)
            await stop.wait()
        finally:
            await ops_runner.cleanup()
    finally:
        await runner.cleanup()
    if listeners.processes > 1 or not listeners.reuse_port:  # the one, or the first
        why = received[0] if received else "a stop"
        print(await _stop_line(service, why, started), flush=True)


async def _entries(url: str) -> int:
    conn = await db.connect(url)
    try:
        return await overview.entries(conn)
    finally:
        await conn.close()


async def _stop_line(service: Service, why: str, started: int) -> str:
    """What ``serve`` says as it stops: what it did, and what is left for the next start
    (the entries that wait for their epoch's seal)."""
    conn = await db.connect(service.database_url)
    try:
        now = await ledger_line.summary(conn, ledger_line.where(service.config))
        waiting = await overview.waiting_for_seal(conn)
    finally:
        await conn.close()
    left = ("nothing waits for a seal" if not waiting else
            f"{wording.count(waiting, 'entry')} {'waits' if waiting == 1 else 'wait'} for "
            "the seal of its epoch, at the next start")
    return (f"bureau serve: stopped on {why}: {wording.count(now.entries - started, 'entry')} "
            f"appended while it ran, {wording.count(now.entries, 'entry')} in the ledger at "
            f"{now.place}; {left}")
