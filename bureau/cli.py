"""The ``bureau`` command: run the service, make and sign keys, check and rebuild the
ledger, read reports, simulate (docs/operations.md#command-line)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import nacl.signing
from aiohttp import web

from bureau import __version__, keyfiles, ledger_line, ports
from bureau.config import Config, child_environment, default_serve_workers
from bureau.errors import InternalError
from bureau.http.access_log import FORMATS as ACCESS_LOG_FORMATS
from bureau.http.access_log import runner_options
from bureau.http.params import KEY_ID
from bureau.intake.sequencer import SOCKET_ENV as SEQUENCER_SOCKET
from bureau.ledger_keys import KeyPeriod
from bureau.report_text import render_report, report_json
from bureau.storage import db, overview
from bureau.verify import BadEntry, BadSettlement, BadTree, terminal_progress, verify_database
from reporters import wire
from reporters._internal import wording
from reporters.models import PAYLOAD_MODELS

log = logging.getLogger("bureau")


def database_url(config: Config) -> str:
    """The configured database, or the embedded one under BUREAU_HOME."""
    if config.database_url:
        return config.database_url
    return db.embedded_database_url(config.home.resolve())


class NoBureau(InternalError):
    """A command that only reads was run where there is no bureau to read (``str()`` is
    the one line that says so)."""


def existing_database_url(config: Config) -> str:
    """For commands that only read: the configured database, or the embedded one of an
    existing bureau home — never a new one. Raises :class:`NoBureau` (creating nothing,
    starting nothing) when there is neither."""
    if config.database_url:
        return config.database_url
    home = config.home.resolve()
    if not db.has_embedded_database(home):
        raise NoBureau(f"no bureau here: {home} holds no bureau database and "
                       "BUREAU_DATABASE_URL is not set (set BUREAU_HOME to a bureau's home, "
                       "or BUREAU_DATABASE_URL to its database)")
    return db.embedded_database_url(home)


ReadOnly = Callable[[argparse.Namespace, str], Coroutine[Any, Any, int]]


def read_only(run: ReadOnly, *, announce: bool = True) -> Callable[[argparse.Namespace], int]:
    """A command that only reads the ledger: where there is no bureau, or its database
    cannot be reached, it says so in one line and exits 2 — no traceback, nothing made.
    With ``announce``, its first line (on standard error) says which ledger it reads."""
    def command(args: argparse.Namespace) -> int:
        name = f"bureau {args.command}"
        try:
            config = Config.from_env()
            url = existing_database_url(config)
            if not announce:
                return asyncio.run(run(args, url))
            return asyncio.run(_named(run, args, url, ledger_line.where(config)))
        except NoBureau as exc:
            print(f"{name}: {exc}", file=sys.stderr)
        except db.QUERY_ERRORS as exc:
            print(f"{name}: cannot read the bureau's database: {exc}".replace("\n", " "),
                  file=sys.stderr)
        return 2
    command.__doc__ = run.__doc__
    return command


async def _named(run: ReadOnly, args: argparse.Namespace, url: str, place: str) -> int:
    """``run``, after one line on standard error that says which ledger it reads."""
    conn = await db.connect(url)
    try:
        line = (await ledger_line.summary(conn, place)).line()
    finally:
        await conn.close()
    print(line, file=sys.stderr, flush=True)
    return await run(args, url)


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
    from bureau.intake.genesis import StartRefused, check_signers

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


#: How long a thread may hold the GIL while another waits for it (Python's default is
#: 5 ms). The group committer runs on a thread of its own and holds the ledger lock
#: while it waits for the GIL after each answer from PostgreSQL; with 0.5 ms, intake
#: was faster in every pair of runs measured (docs/benchmarks.md, issue 15).
SWITCH_INTERVAL = 0.0005


#: set (to PROMETHEUS_MULTIPROC_DIR) in the environment of the ``serve`` process that
#: made that directory, which removes it when it stops
_METRICS_RUN_DIR = "BUREAU_METRICS_RUN_DIR"


def _metrics_run_dir(args: argparse.Namespace) -> str | None:
    """With ``--workers N``: the processes' shared metrics directory, made for this run.

    prometheus_client reads ``PROMETHEUS_MULTIPROC_DIR`` once, when it is imported, long
    before the arguments are parsed: so the command sets it and starts itself over
    (``exec``, same pid), and the new interpreter, and every worker it starts, writes
    its metrics there. A directory the operator set is used as it is, emptied of the
    last run's files first. Returns the directory this process must remove at exit.
    """
    from bureau import metrics

    path = metrics.multiprocess_dir()
    if path is None:
        made = tempfile.mkdtemp(prefix="bureau-metrics-")
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, "-m", "bureau.cli", *args.argv],
                  dict(os.environ, PROMETHEUS_MULTIPROC_DIR=made, **{_METRICS_RUN_DIR: made}))
    owned = os.environ.pop(_METRICS_RUN_DIR, None)  # the workers do not own it
    if owned != path:
        for stale in Path(path).glob("*.db"):
            stale.unlink()
    return owned


def cmd_serve(args: argparse.Namespace) -> int:
    run_dir = _metrics_run_dir(args) if args.workers > 1 else None
    try:
        return _serve_until_stopped(args)
    finally:
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)


def _serve_until_stopped(args: argparse.Namespace) -> int:
    from bureau.intake.genesis import StartRefused

    sys.setswitchinterval(SWITCH_INTERVAL)
    config = Config.from_env()
    if args.max_pending is not None:
        config = replace(config, max_pending=args.max_pending)
    if args.report_workers is not None:
        config = replace(config, report_workers=args.report_workers)
    if args.mirror is not None:
        config = replace(config, mirror_dir=args.mirror.resolve())
    if not _is_worker():  # a worker shares its parent's ports, which the parent checked
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
    sequencer = _SequencerProcess(args, config) if args.workers > 1 else None
    workers = _start_workers(args, config, url) if args.workers > 1 else []
    # A sequencer's socket is this serve's own, or its parent's for one of its workers:
    # never one named by an environment some other serve left behind.
    socket_path = (str(sequencer.socket) if sequencer is not None
                   else os.environ.get(SEQUENCER_SOCKET) if _is_worker() else None)
    try:
        asyncio.run(_serve(args, config, url, signing_key, reuse_port=args.workers > 1
                           or args.reuse_port, processes=args.workers,
                           sequencer=None if socket_path is None else Path(socket_path)))
    except StartRefused as refused:  # the ledger's settings rule (bureau.intake.genesis)
        print(f"bureau serve: refusing to start: {refused.detail}", file=sys.stderr)
        return 2
    except OSError as exc:  # a port taken, an address not ours
        print(f"bureau serve: cannot listen: {exc}", file=sys.stderr)
        return 2
    finally:
        try:
            for proc in workers:
                proc.terminate()
            for proc in workers:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        finally:
            if sequencer is not None:  # last: the workers' last requests go through it
                sequencer.stop()
    return 0


class _SequencerProcess:
    """The node's sequencer (bureau.intake.sequencer): a process of its own, fed by
    every process of this serve over a Unix socket in a private run directory, and
    started again whenever it exits until the serve stops (meanwhile the workers commit
    by themselves, under the head lock)."""

    def __init__(self, args: argparse.Namespace, config: Config) -> None:
        self.run_dir = Path(tempfile.mkdtemp(prefix="bureau-run-"))  # 0700
        self.socket = self.run_dir / "sequencer.sock"
        os.environ[SEQUENCER_SOCKET] = str(self.socket)  # this process and its workers
        # Each worker holds up to max_pending envelopes in flight: the one queue they
        # all feed holds as many as they do together.
        self._cmd = [sys.executable, "-m", "bureau.cli", "serve", "--workers", "1",
                     "--sequence", str(self.socket),
                     "--max-pending", str(config.max_pending * args.workers)]
        self._env = child_environment(config, **{_WORKER_OF: str(os.getpid())})
        self._lock = threading.Lock()
        self._stopping = False
        self._proc: subprocess.Popen[bytes] | None = None
        # PR_SET_PDEATHSIG fires when the *thread* that started a child ends: this one
        # lives as long as the serve does.
        self._thread = threading.Thread(target=self._supervise, name="sequencer",
                                        daemon=True)
        self._thread.start()

    def _supervise(self) -> None:
        while True:
            with self._lock:
                if self._stopping:
                    return
                proc = self._proc = subprocess.Popen(self._cmd, env=self._env,
                                                     preexec_fn=_die_with_parent)
            code = proc.wait()
            with self._lock:
                if self._stopping:
                    return
            print(f"bureau serve: the sequencer exited ({code}); starting it again",
                  file=sys.stderr, flush=True)
            time.sleep(0.2)

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        self._thread.join(5)
        shutil.rmtree(self.run_dir, ignore_errors=True)


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


async def _serve(args: argparse.Namespace, config: Config, url: str,
                 signing_key: nacl.signing.SigningKey, *, reuse_port: bool,
                 processes: int, sequencer: Path | None) -> None:
    """The service on ``--host``/``--port`` and the operator listener on
    ``--ops-host``/``--ops-port`` (SPEC §9: ``/metrics`` only there), until SIGTERM or
    SIGINT. With ``--workers N`` every process opens both with SO_REUSEPORT."""
    from bureau.http.app import create_app, create_ops_app

    app = create_app(config, url, signing_key, sequencer=sequencer)
    runner = web.AppRunner(app, **runner_options(args.access_log))  # type: ignore[arg-type]
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
    started = await _entries(url)
    try:
        await web.TCPSite(runner, args.host, args.port, reuse_port=reuse_port).start()
        await ops_runner.setup()
        try:
            await web.TCPSite(ops_runner, args.ops_host, args.ops_port,
                              reuse_port=reuse_port).start()
            print(f"serving on http://{_bound(runner)}"
                  + (f" with {processes} processes" if processes > 1 else "")
                  + f", operator listener (/metrics) on http://{_bound(ops_runner)}",
                  flush=True)
            await stop.wait()
        finally:
            await ops_runner.cleanup()
    finally:
        await runner.cleanup()
    if processes > 1 or not reuse_port:  # the one process, or the first of several
        print(await _stop_line(url, config, received[0] if received else "a stop", started),
              flush=True)


async def _entries(url: str) -> int:
    conn = await db.connect(url)
    try:
        return await overview.entries(conn)
    finally:
        await conn.close()


async def _stop_line(url: str, config: Config, why: str, started: int) -> str:
    """What ``serve`` says as it stops: what it did, and what is left for the next start
    (the entries that wait for their epoch's seal)."""
    conn = await db.connect(url)
    try:
        now = await ledger_line.summary(conn, ledger_line.where(config))
        waiting = await overview.waiting_for_seal(conn)
    finally:
        await conn.close()
    left = ("nothing waits for a seal" if not waiting else
            f"{wording.count(waiting, 'entry')} {'waits' if waiting == 1 else 'wait'} for "
            "the seal of its epoch, at the next start")
    return (f"bureau serve: stopped on {why}: {wording.count(now.entries - started, 'entry')} "
            f"appended while it ran, {wording.count(now.entries, 'entry')} in the ledger at "
            f"{now.place}; {left}")


def _die_with_parent() -> None:
    """In a worker: receive SIGTERM when the parent dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


#: set by ``serve --workers N`` in its workers' environment: the pid of the ``serve``
#: whose ports they share (SPEC §10 r3: only one serve's own workers share a port)
_WORKER_OF = "BUREAU_WORKER_OF"


def _is_worker() -> bool:
    """Is this process a worker its parent ``serve`` started (and checked the ports for)?"""
    return os.environ.get(_WORKER_OF) == str(os.getppid())


def _start_workers(args: argparse.Namespace, config: Config,
                   url: str) -> list[subprocess.Popen[bytes]]:
    """Extra ``bureau serve`` processes on the same port (SO_REUSEPORT) and database.

    Each process has its own interpreter, so parsing and verifying use every core; the
    ledger's row lock keeps their appends one chain.
    """
    assert config.signing_key_path is not None
    env = child_environment(config, BUREAU_DATABASE_URL=url, **{_WORKER_OF: str(os.getpid())},
                            BUREAU_ADMIN_KEYS=",".join(sorted(config.admin_keys)),
                            BUREAU_SIGNING_KEY=str(config.signing_key_path.resolve()),
                            BUREAU_HOME=str(config.home.resolve()))
    cmd = [sys.executable, "-m", "bureau.cli", "serve", "--host", args.host,
           "--port", str(args.port), "--ops-host", args.ops_host,
           "--ops-port", str(args.ops_port), "--reuse-port", "--workers", "1",
           *(["--max-pending", str(args.max_pending)] if args.max_pending is not None else []),
           "--report-workers", str(config.report_workers), "--access-log", args.access_log]
    return [subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent)
            for _ in range(args.workers - 1)]


def cmd_keygen(args: argparse.Namespace) -> int:
    key = wire.generate_key()
    try:
        keyfiles.write_key(Path(args.path), key)
    except FileExistsError:
        print(f"bureau keygen: {args.path} exists; not overwriting it", file=sys.stderr)
        return 1
    print(wire.signing_key_id(key))
    return 0


def cmd_sign(args: argparse.Namespace) -> int:
    """Sign a payload file as a DSSE envelope; the payload bytes are signed as they are."""
    key = keyfiles.read_key(Path(args.key))
    body = sys.stdin.buffer.read() if args.payload == "-" else Path(args.payload).read_bytes()
    envelope = wire.sign_envelope(key, wire.payload_type(args.type), body.strip())
    print(json.dumps(envelope))
    return 0


def cmd_now(args: argparse.Namespace) -> int:
    """The time now in UTC, RFC 3339 with ``Z``: what a walk-through's payloads need,
    without GNU date's ``%6N``."""
    from reporters._internal.payloads import issued_timestamp, now_timestamp

    print(now_timestamp() if args.seconds else issued_timestamp())
    return 0


def cmd_keyid(args: argparse.Namespace) -> int:
    print(wire.signing_key_id(keyfiles.read_key(Path(args.path))))
    return 0


async def _verify(args: argparse.Namespace, url: str) -> int:
    """Re-read the whole ledger and check every entry (bureau.verify)."""
    conn = await db.connect(url)
    try:
        count = await verify_database(conn, terminal_progress)
    except BadEntry as bad:
        return _verify_failed(args, f"FAILED at entry seq {bad.seq}: {bad.reason}",
                              {"ok": False, "seq": bad.seq, "reason": bad.reason})
    except (BadTree, BadSettlement) as bad:
        return _verify_failed(args, f"FAILED: {bad.reason}",
                              {"ok": False, "seq": None, "reason": bad.reason})
    finally:
        await conn.close()
    if args.json:
        print(json.dumps({"ok": True, "entries": count}))
    else:
        print(f"bureau verify: ok, {wording.count(count, 'entry')}, every id, link, signature "
              "and indexed column checked, every tree node and signed tree head recomputed, "
              "every settlement added up")
    return 0


def _verify_failed(args: argparse.Namespace, text: str, doc: dict[str, Any]) -> int:
    """A failed verification: one line on stderr, or with ``--json`` the document on
    stdout (a script reads one place); exit 1 either way."""
    if args.json:
        print(json.dumps(doc))
    else:
        print(f"bureau verify: {text}", file=sys.stderr)
    return 1


cmd_verify = read_only(_verify)


def _rebuild_progress(step: str) -> None:
    """Each step of a rebuild as it starts, on stderr when it is a terminal (a rebuild
    takes as long as the first seal of every epoch)."""
    if sys.stderr.isatty():
        print(f"bureau rebuild: {step}", file=sys.stderr, flush=True)


async def _rebuild(url: str, signing_path: Path) -> int:
    from bureau.intake import genesis
    from bureau.transparency.heads import LogKey
    from bureau.views.rebuild import rebuild
    from reporters.tlog.checkpoint import default_origin

    key = keyfiles.read_key(signing_path)
    conn = await db.connect(url)
    try:
        await db.migrate(conn)
        settings = await genesis.read(conn)  # the log's origin is the ledger's
        origin = settings.origin if settings else default_origin(bytes(key.verify_key))
        result = await rebuild(conn, key, LogKey.of(origin, key), _rebuild_progress)
    finally:
        await conn.close()
    print(f"bureau rebuild: {wording.count(result.entries, 'entry')} replayed, "
          f"{wording.count(result.reports, 'report')} and "
          f"{wording.count(result.epochs, 'checkpoint')} signed")
    if result.unfinished:
        print(f"bureau rebuild: epochs {', '.join(map(str, result.unfinished))} were still "
              "being built by the service: derived, not compared (nothing finished to "
              "compare with)")
    if result.kept:
        print(f"bureau rebuild: epochs {', '.join(map(str, result.kept))} were signed by an "
              "earlier bureau key: their reports and checkpoints were kept, not re-signed")
    if not result.identical:
        for line in result.differences:
            print(f"bureau rebuild: DIFFERENT: {line}", file=sys.stderr)
        return 1
    print("bureau rebuild: identical: every derived row and every signed byte")
    return 0


async def _rebuild_checked(args: argparse.Namespace, url: str) -> int:
    """Re-derive every view from the entries, once the bureau's signing key is found."""
    config = Config.from_env()
    signing = config.signing_key_path or config.home / "signing.key"
    if not signing.exists():
        print(f"bureau rebuild: no signing key at {signing} (set BUREAU_SIGNING_KEY): "
              "reports are signed with the bureau's own key", file=sys.stderr)
        return 2
    return await _rebuild(url, signing)


cmd_rebuild = read_only(_rebuild_checked)


async def _report(args: argparse.Namespace, url: str) -> int:
    """Print an agent's signed report."""
    from bureau.intake import genesis
    from bureau.storage.reports import report_envelope

    agent, epoch = args.agent, args.epoch

    conn = await db.connect(url)
    try:
        envelope = await report_envelope(conn, agent, epoch)
        settings = await genesis.read(conn)
    finally:
        await conn.close()
    return _print_report(args, envelope, settings.epoch_seconds if settings else 0)


def _print_report(args: argparse.Namespace, envelope: bytes | None, epoch_seconds: int) -> int:
    """The report as text or ``--json``; exit 1 saying so when there is none."""
    if envelope is None or not epoch_seconds:
        where = "at the latest sealed epoch" if args.epoch is None else f"at epoch {args.epoch}"
        print(f"bureau report: no report for {args.agent} {where}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report_json(envelope, epoch_seconds), indent=2))
    else:
        print(render_report(envelope, epoch_seconds))
    return 0


_report_ledger = read_only(_report)


def cmd_report(args: argparse.Namespace) -> int:
    """Print an agent's signed report: from the ledger here, or from a running bureau
    (``--url``) like any client."""
    if args.url is None:
        return _report_ledger(args)
    from bureau import remote

    try:
        info, envelope = asyncio.run(remote.signed_report(args.url, args.agent, args.epoch))
    except remote.RemoteError as exc:
        print(f"bureau report: {exc}", file=sys.stderr)
        return 2
    print(remote.bureau_line(args.url, info), file=sys.stderr, flush=True)
    return _print_report(args, envelope, int(info["epoch_seconds"]))


async def _local_status(args: argparse.Namespace, url: str) -> int:
    """Where the bureau of this ledger stands (bureau.status)."""
    from bureau import status

    conn = await db.connect(url)
    try:
        doc = await status.local(conn, Config.from_env())
    finally:
        await conn.close()
    doc["spools"] = await status.spools(args.spool)
    print(json.dumps(doc, indent=2) if args.json else status.render(doc))
    return 0


_status_ledger = read_only(_local_status, announce=False)


def cmd_status(args: argparse.Namespace) -> int:
    if args.url is None:
        return _status_ledger(args)
    from bureau import remote, status

    try:
        doc = asyncio.run(status.remote(args.url))
        doc["spools"] = asyncio.run(status.spools(args.spool))
    except remote.RemoteError as exc:
        print(f"bureau status: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(doc, indent=2) if args.json else status.render(doc))
    return 0


def _key_id(text: str) -> str:
    if re.fullmatch(KEY_ID, text) is None:
        raise argparse.ArgumentTypeError("not a key id (ed25519: and 43 base64url characters)")
    return text


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("a port is 0 to 65535 (0: any free port)")
    return value


def _epoch(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("an epoch is 0 or more")
    return value


class _HelpFormatter(argparse.HelpFormatter):
    """Help that shows every default a flag has, unless its text already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (action.default in (None, False, argparse.SUPPRESS) or "default" in text
                or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """Every ``bureau`` parser, subcommands included: the same help formatter."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


_EPILOG = """environment: BUREAU_HOME (default ./.bureau), BUREAU_DATABASE_URL (default: an embedded
PostgreSQL under BUREAU_HOME), BUREAU_EPOCH_SECONDS (default 21600; 30 for a quick demo),
BUREAU_PUBLIC_URL, BUREAU_ADMIN_KEYS, BUREAU_SIGNING_KEY and more: docs/operations.md.
"bureau COMMAND --help" describes one command."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bureau", epilog=_EPILOG,
                     description="The Agent Reputation Bureau: run the service, make and "
                     "sign keys, check and\nrebuild the ledger, read reports, simulate.")
    parser.formatter_class = lambda prog: argparse.RawDescriptionHelpFormatter(prog)
    parser.add_argument("--version", action="version", version=f"bureau {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    serve = sub.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=_port, default=8080, help="port to listen on")
    serve.add_argument("--ops-host", default="127.0.0.1",
                       help="address of the operator listener: /metrics, /healthz, /readyz "
                       "(default 127.0.0.1)")
    serve.add_argument("--ops-port", type=_port, default=9464,
                       help="port of the operator listener (default 9464; 0: any free port, "
                       "printed at start)")
    serve.add_argument("--workers", type=_positive, default=default_serve_workers(),
                       help="processes serving the same port (default one per core, at "
                       f"most 8: {default_serve_workers()} here)")
    # Internal: how ``--workers N`` starts its workers (SO_REUSEPORT on the parent's
    # ports). Anyone else's port check still runs: a second serve cannot join a port.
    serve.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)
    # Internal: the node's sequencer, which ``--workers N`` starts (bureau.intake.sequencer).
    serve.add_argument("--sequence", metavar="SOCKET", default=None, help=argparse.SUPPRESS)
    serve.add_argument("--max-pending", type=_positive, default=None,
                       help="envelopes waiting for the ledger before intake answers 503 "
                       "UNAVAILABLE (default 20000)")
    serve.add_argument("--report-workers", type=_positive, default=None,
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
    keygen = sub.add_parser("keygen", help="write a new Ed25519 key file, print its key id")
    keygen.add_argument("path", help="where to write the PKCS#8 PEM key")
    keygen.set_defaults(func=cmd_keygen)
    keyid = sub.add_parser("keyid", help="print the key id of a key file")
    keyid.add_argument("path", help="a PKCS#8 PEM Ed25519 key file")
    keyid.set_defaults(func=cmd_keyid)
    sign = sub.add_parser("sign", help="sign a JSON payload file as a DSSE envelope")
    sign.add_argument("--key", required=True, help="the signer's key file")
    sign.add_argument("--type", required=True, choices=sorted(PAYLOAD_MODELS),
                      metavar="TYPE", help="the payload's type, one of: "
                      + ", ".join(sorted(PAYLOAD_MODELS)))
    sign.add_argument("payload", help="payload file, or - for standard input")
    sign.set_defaults(func=cmd_sign)
    verify = sub.add_parser("verify", help="recompute every id, link and signature, and check "
                            "every indexed column against the entry")
    verify.add_argument("--json", action="store_true",
                        help='print {"ok", "entries"} or {"ok": false, "seq", "reason"} as '
                        "JSON on standard output")
    verify.set_defaults(func=cmd_verify)
    rebuild = sub.add_parser("rebuild", help="re-derive every view and report from the "
                             "entries; exit 0 when every byte came out identical")
    rebuild.set_defaults(func=cmd_rebuild)
    report = sub.add_parser("report", help="print an agent's signed report, readably")
    report.add_argument("agent", type=_key_id, help="the agent's key id")
    report.add_argument("--epoch", type=_epoch, default=None,
                        help="a sealed epoch (default: the latest)")
    report.add_argument("--url", default=None,
                        help="read a running bureau at this base URL over HTTP, checking the "
                        "report's signature (default: the ledger under BUREAU_HOME)")
    report.add_argument("--json", action="store_true",
                        help='print {"envelope", "report", "epoch_start"} as JSON: the '
                        "signed envelope, its decoded payload, the epoch's UTC start")
    report.set_defaults(func=cmd_report)
    status = sub.add_parser("status", help="where the bureau stands: ledger, size, seals, "
                            "policy, key, witnesses, replicas, leaders")
    status.add_argument("--url", default=None,
                        help="a running bureau's base URL, read over HTTP (default: the "
                        "ledger under BUREAU_HOME)")
    status.add_argument("--spool", action="append", default=[], metavar="OPS_URL",
                        help="a proxy's or prober's ops listener, whose /metrics gives its "
                        "spool's depth (repeatable)")
    status.add_argument("--json", action="store_true", help="one JSON document")
    status.set_defaults(func=cmd_status)
    now = sub.add_parser("now", help="print the time now as payloads write it: an issued_at "
                         "to the microsecond, or with --seconds an observed_at")
    now.add_argument("--seconds", action="store_true", help="whole seconds (observed_at)")
    now.set_defaults(func=cmd_now)
    from bureau.admin_cli import add_command as add_admin
    from bureau.simulate.cli import add_command as add_simulate

    add_admin(sub)  # `bureau admin`: docs/operations.md#admin-commands

    add_simulate(sub)  # `bureau simulate`: docs/simulation.md
    from bureau.interop.cli import add_command as add_erc8004

    add_erc8004(sub, read_only, _epoch)  # `bureau erc8004 export`: docs/interop.md
    from bureau.mirror.cli import add_command as add_mirror

    add_mirror(sub, read_only)  # `bureau mirror DIR`: docs/operations.md
    for action in sub._choices_actions:  # each command's --help opens with its summary
        command = sub.choices[action.dest]
        command.description = command.description or action.help
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        result: int = args.func(args)
        sys.stdout.flush()  # here, not at exit, so a closed pipe is caught below
    except BrokenPipeError:  # `bureau report … | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a pipe's writer killed by SIGPIPE
    return result


if __name__ == "__main__":
    sys.exit(main())
