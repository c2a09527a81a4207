"""``bureau-reporter otlp``: the OTLP receiver (docs/proxy.md, "The OTLP receiver").
Registered on ``bureau-reporter``'s parser by :func:`add_command`.

    bureau-reporter otlp --config otlp.toml

SIGTERM or SIGINT stops it: no new export is taken, the spool is delivered for at most
``--drain-seconds``, and what is left stays on disk for the next start.

This module imports nothing of OpenTelemetry until the command runs, so
``bureau-reporter proxy`` works without the ``otlp`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

from reporters import load_key
from reporters._internal import extras
from reporters._internal.errors import BureauClientError
from reporters.daemon import ops
from reporters.daemon.config import ConfigError, overlay_flags, read_file

log = logging.getLogger("reporters.otlp")

EXTRA_HINT = "the OTLP receiver needs the otlp extra: " + extras.install_hint("proxy", "otlp")


def build_config(args: argparse.Namespace) -> dict[str, Any]:
    """The file with the flags laid over it."""
    raw: dict[str, Any] = read_file(Path(args.config))
    overlay_flags(raw, args, {
        "key": "key_file", "bureau": "bureau_url", "spool": "spool_dir", "listen": "listen",
        "ops_listen": "ops_listen", "drain_seconds": "drain_seconds"})
    return raw


#: how long the decoding thread may hold the GIL while the event loop waits for it (5 ms
#: by default): a large export decoded in the thread then delays an honest 1-span export
#: by at most about this much per hand-over (reporters.otlp.work; bench/bounds_bench.py)
SWITCH_INTERVAL = 0.0005


async def serve(receiver: Any, config: Any) -> None:
    """Run the receiver and its ops listener until SIGTERM or SIGINT."""
    sys.setswitchinterval(SWITCH_INTERVAL)  # this process is the receiver's alone
    stop, received = ops.stop_on_signals()
    runner = receiver.runner(access_log=None, shutdown_timeout=config.drain_seconds)
    await runner.setup()  # opens the spool
    ops_runner: web.AppRunner | None = None
    try:
        await web.TCPSite(runner, config.host, config.port).start()
        ops_at = "no ops listener"
        if config.ops_port is not None:
            ops_runner = web.AppRunner(receiver.ops_app(), access_log=None)
            await ops_runner.setup()
            await web.TCPSite(ops_runner, config.ops_host, config.ops_port).start()
            ops_at = f"ops on http://{ops.bound(ops_runner)}"
        print(f"bureau-reporter otlp as reporter {receiver.reporter.key_id}, OTLP/HTTP on "
              f"http://{ops.bound(runner)}/v1/traces, {ops_at}, spool {config.spool_dir}",
              flush=True)
        await stop.wait()
        log.info("%s: stopping; delivery gets %g s", received[0], config.drain_seconds)
    finally:
        await runner.cleanup()
        if ops_runner is not None:
            await ops_runner.cleanup()


def cmd_otlp(args: argparse.Namespace) -> int:
    try:
        from reporters.otlp import Receiver, from_mapping
    except ImportError as exc:
        print(f"bureau-reporter otlp: {exc}; {EXTRA_HINT}", file=sys.stderr)
        return 2
    try:
        config = from_mapping(build_config(args), Path(args.config).parent)
        receiver = Receiver(config, load_key(config.key_file))
    except (ConfigError, OSError, ValueError, BureauClientError) as exc:
        print(f"bureau-reporter otlp: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(receiver, config))
    except (OSError, BureauClientError) as exc:  # a port taken, the spool in use
        print(f"bureau-reporter otlp: {exc}", file=sys.stderr)
        return 2
    return 0


#: the command's --help text: the docstring's content, plain (no reST markup)
DESCRIPTION = """bureau-reporter otlp: the OTLP receiver (docs/proxy.md, "The OTLP receiver").

    bureau-reporter otlp --config otlp.toml

SIGTERM or SIGINT stops it: no new export is taken, the spool is delivered for at most
--drain-seconds, and what is left stays on disk for the next start."""


def add_command(sub: Any) -> None:
    """Add ``otlp`` to ``bureau-reporter``'s subcommands (``sub``: its subparsers)."""
    otlp = sub.add_parser("otlp", help="receive OTLP/HTTP traces; report agent spans as facts",
                          description=DESCRIPTION,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    otlp.add_argument("--config", required=True,
                      help="the JSON or TOML config file (.toml: TOML): the agents' tables")
    otlp.add_argument("--key", help="the reporter's key file (PKCS#8 PEM)")
    otlp.add_argument("--bureau", help="the bureau's base URL")
    otlp.add_argument("--spool", help="the spool directory (facts wait here, durably)")
    otlp.add_argument("--listen", help="HOST:PORT for OTLP/HTTP (default 127.0.0.1:4318)")
    otlp.add_argument("--ops-listen", help="HOST:PORT of the ops listener: /healthz, "
                                           "/readyz, /metrics (default 127.0.0.1:9467; "
                                           "'off' for none)")
    otlp.add_argument("--drain-seconds", type=float,
                      help="at a stop: time for delivering the spool (default 10)")
    otlp.set_defaults(func=cmd_otlp)
