"""``bureau serve --workers N``: the processes one serve runs beside itself — N - 1
workers on the same ports (SO_REUSEPORT) and database, the node's sequencer that every
process hands its units to (bureau.intake.sequencer), and the metrics directory they
share — each stopped with the serve, and dying with it even when it is killed."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bureau.config import Config, child_environment
from bureau.intake.sequencer import SOCKET_ENV as SEQUENCER_SOCKET

#: set (to PROMETHEUS_MULTIPROC_DIR) in the environment of the ``serve`` process that
#: made that directory, which removes it when it stops
_METRICS_RUN_DIR = "BUREAU_METRICS_RUN_DIR"

#: set by ``serve --workers N`` in its workers' environment: the pid of the ``serve``
#: whose ports they share (SPEC §10 r3: only one serve's own workers share a port)
_WORKER_OF = "BUREAU_WORKER_OF"


def metrics_run_dir(args: argparse.Namespace) -> str | None:
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


class SequencerProcess:
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


def _die_with_parent() -> None:
    """In a worker: receive SIGTERM when the parent dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def is_worker() -> bool:
    """Is this process a worker its parent ``serve`` started (and checked the ports for)?"""
    return os.environ.get(_WORKER_OF) == str(os.getppid())


def start_workers(args: argparse.Namespace, config: Config,
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


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to every worker, then wait for each (10 s, then SIGKILL)."""
    for proc in workers:
        proc.terminate()
    for proc in workers:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
