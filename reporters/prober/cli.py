"""``bureau-reporter probe``: send agents tasks with known answers, report probe results
(docs/probing.md). Registered on ``bureau-reporter``'s parser by :func:`add_command`.

    bureau-reporter probe --config probe.toml [--limit N]

SIGTERM or SIGINT stops it: no new task is sent, the tasks in flight get
``--drain-seconds`` to be answered (one still unanswered then is left: nothing is
reported for it), and the spool is delivered for at most ``--drain-seconds`` more; one
log line then says what was done and what is left on disk.
With ``--limit N`` it stops by itself once every route has been sent N tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from reporters import load_key
from reporters._internal import wording
from reporters._internal.errors import BureauClientError
from reporters.daemon import ops
from reporters.daemon.config import ConfigError, overlay_flags, read_file
from reporters.prober.config import ProbeConfig, from_mapping

if TYPE_CHECKING:  # the proxy extra's (prometheus-client): imported when it runs
    from reporters.prober.runner import Prober

log = logging.getLogger("reporters.prober")

#: Bytes of a seed the prober makes.
SEED_BYTES = 32
#: The fewest bytes a seed may have: a shorter one could be guessed.
MIN_SEED_BYTES = 16


def read_or_make_seed(path: Path) -> bytes:
    """The secret seed in ``path`` (hexadecimal text); a new random one, written with
    mode 0600 and fsynced, when the file does not exist."""
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        seed = os.urandom(SEED_BYTES)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, seed.hex().encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return seed
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise ConfigError(f"seed_file {path}: hexadecimal text is needed") from None
    if len(seed) < MIN_SEED_BYTES:
        raise ConfigError(f"seed_file {path}: at least {MIN_SEED_BYTES} bytes "
                          f"({2 * MIN_SEED_BYTES} hex digits) are needed")
    return seed


def build_config(args: argparse.Namespace) -> dict[str, Any]:
    """The file with the flags laid over it."""
    raw: dict[str, Any] = read_file(Path(args.config))
    overlay_flags(raw, args, {
        "key": "key_file", "bureau": "bureau_url", "spool": "spool_dir", "seed_file": "seed_file",
        "prober_id": "prober_id", "ops_listen": "ops_listen", "audit_log": "audit_log",
        "drain_seconds": "drain_seconds"})
    return raw


async def serve(prober: Prober, config: ProbeConfig) -> None:
    """Run the prober and its ops listener until SIGTERM/SIGINT or ``--limit``."""
    stop, received = ops.stop_on_signals()
    ops_runner: web.AppRunner | None = None
    ops_at = "no ops listener"
    try:
        if config.ops_port is not None:
            ops_runner = web.AppRunner(ops.ops_app(prober), access_log=None)
            await ops_runner.setup()
            await web.TCPSite(ops_runner, config.ops_host, config.ops_port).start()
            ops_at = f"ops on http://{ops.bound(ops_runner)}"
        starting = asyncio.create_task(prober.start())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():  # stopped while waiting for the bureau
            starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        if not stop.is_set():
            print(f"bureau-reporter probe {prober.prober_id} as reporter "
                  f"{prober.reporter.key_id}, {len(config.routes)} route(s), epochs of "
                  f"{prober.epoch_seconds} s, {ops_at}, spool {config.spool_dir}", flush=True)
            running = asyncio.create_task(prober.run_routes(stop))
            await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not running.done():
                log.info("%s: stopping; tasks in flight and delivery get %g s each",
                         received[0], config.drain_seconds)
                await asyncio.wait({running}, timeout=config.drain_seconds)
                running.cancel()  # a task still in flight is left, as a crash would leave it
            with contextlib.suppress(asyncio.CancelledError):
                await running
        stopping.cancel()
    finally:
        await prober.close()
        if ops_runner is not None:
            await ops_runner.cleanup()


def cmd_probe(args: argparse.Namespace) -> int:
    from reporters.prober.runner import Pace, Prober

    try:
        config = from_mapping(build_config(args), Path(args.config).parent)
        if args.limit is not None and args.limit < 1:
            raise ConfigError("--limit: at least 1")
        key = load_key(config.key_file)
        seed = read_or_make_seed(config.seed_path)
        prober = Prober(config, key, seed, Pace(limit=args.limit))
    except (ConfigError, OSError, ValueError, BureauClientError) as exc:
        print(f"bureau-reporter probe: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(prober, config))
    except (OSError, ValueError, BureauClientError) as exc:  # a port taken, the spool in use
        print(f"bureau-reporter probe: {exc}", file=sys.stderr)
        return 2
    return 0


def add_command(sub: Any) -> None:
    """Add ``probe`` to ``bureau-reporter``'s subcommands (``sub``: its subparsers)."""
    probe = sub.add_parser("probe", help="send agents tasks with known answers; report probes",
                           description=wording.plain(__doc__),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    probe.add_argument("--config", required=True,
                       help="the JSON or TOML config file (.toml: TOML): routes, templates")
    probe.add_argument("--key", help="the reporter's key file (PKCS#8 PEM)")
    probe.add_argument("--bureau", help="the bureau's base URL")
    probe.add_argument("--spool", help="the spool directory (probes wait here, durably)")
    probe.add_argument("--seed-file", help="the secret seed's file (default: probe.seed in "
                                           "the spool directory, made at the first start)")
    probe.add_argument("--prober-id", help="interaction ids are PROBER_ID:N")
    probe.add_argument("--ops-listen", help="HOST:PORT of the ops listener: /healthz, "
                                            "/readyz, /metrics (default 127.0.0.1:9466; "
                                            "'off' for none)")
    probe.add_argument("--audit-log", help="one JSON line per probe (default audit.jsonl in "
                                           "the spool directory; 'off' for none)")
    probe.add_argument("--drain-seconds", type=float,
                       help="at a stop: time for delivering the spool (default 10)")
    probe.add_argument("--limit", type=int,
                       help="stop once every route has been sent this many tasks")
    probe.set_defaults(func=cmd_probe)
