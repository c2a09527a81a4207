"""bureau-reporter: the reporting proxy, the prober and the key tools of a reporter (docs/proxy.md).

    bureau-reporter proxy --config proxy.toml
    bureau-reporter proxy --key gw.key --bureau http://127.0.0.1:8080 --spool ./spool \\
        --route /alpha=ed25519:…@http://127.0.0.1:9001 --promise ed25519:…=p95-under-2s:2000

    bureau-reporter resend --key gw.key --bureau http://127.0.0.1:8080 --spool ./spool \\
        [--since 2026-11-30T00:00:00Z]

    bureau-reporter probe --config probe.toml          (docs/probing.md)

    bureau-reporter otlp --config otlp.toml            (docs/proxy.md, the OTLP receiver)

    bureau-reporter keygen gw.key                      (prints the new key's id)
    bureau-reporter keyid gw.key

Flags given override the file's values; --route and --promise add to its lists.
resend sends again the facts a proxy kept as delivered (--keep-delivered-days),
after the bureau was restored from a backup that lost them (docs/runbook.md); run it
while the proxy is stopped (it needs the spool). keygen and keyid make and read the
reporter's key file with the client install alone.

SIGTERM or SIGINT stops it cleanly: no new calls, calls in flight finish, held facts are
released into the spool and the spool is delivered, each for at most --drain-seconds;
one log line then says what was delivered and what is left on disk.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reporters import Delivery, Reporter, generate_key, key_id, load_key, save_key
from reporters._internal import extras, wording
from reporters._internal.errors import BureauClientError
from reporters.daemon.config import ConfigError, overlay_flags, read_file
from reporters.models import parse_timestamp
from reporters.otlp.cli import add_command as add_otlp_command
from reporters.prober.cli import add_command as add_probe_command
from reporters.proxy.config import from_mapping

if TYPE_CHECKING:  # the proxy itself needs the proxy extra: imported when it runs
    from reporters.proxy.app import Proxy
    from reporters.proxy.config import ProxyConfig

#: The client's extras each subcommand needs (docs/proxy.md, reporters/README.md):
#: what a user without them is told to install. Every command imports its optional
#: packages only when it runs, so ``--help`` of each, ``keygen`` and ``keyid`` work with
#: the client alone.
COMMAND_EXTRAS: dict[str, tuple[str, ...]] = {
    "proxy": ("proxy",), "resend": (), "probe": ("proxy",), "otlp": ("proxy", "otlp"),
    "keygen": (), "keyid": ()}

log = logging.getLogger("reporters.proxy")


def _route_flag(text: str) -> dict[str, Any]:
    prefix, eq, rest = text.partition("=")
    agent, at, upstream = rest.partition("@")
    if not (eq and at):
        raise ConfigError(f"--route {text!r}: PREFIX=AGENT_KEY_ID@UPSTREAM_URL is needed")
    return {"prefix": prefix, "agent": agent, "upstream": upstream}


def _promise_flag(text: str, agents: dict[str, Any]) -> None:
    agent, eq, rest = text.partition("=")
    promise, colon, max_ms = rest.rpartition(":")
    if not (eq and colon and max_ms.isdigit()):
        raise ConfigError(f"--promise {text!r}: AGENT_KEY_ID=PROMISE_ID:MAX_MS is needed")
    agents.setdefault(agent, {"promises": []})["promises"].append(
        {"promise": promise, "max_ms": int(max_ms)})


def build_config(args: argparse.Namespace) -> dict[str, Any]:
    """The file (if any) with the flags laid over it."""
    raw: dict[str, Any] = read_file(Path(args.config)) if args.config else {}
    overlay_flags(raw, args, {
        "key": "key_file", "bureau": "bureau_url", "spool": "spool_dir", "proxy_id": "proxy_id",
        "listen": "listen", "ops_listen": "ops_listen", "drain_seconds": "drain_seconds",
        "keep_delivered_days": "keep_delivered_days", "settle_seconds": "settle_seconds",
        "quiet_seconds": "quiet_seconds"})
    raw["routes"] = list(raw.get("routes", [])) + [_route_flag(r) for r in args.route]
    agents = {k: {"promises": list(v.get("promises", []))}
              for k, v in raw.get("agents", {}).items()}
    for p in args.promise:
        _promise_flag(p, agents)
    raw["agents"] = agents
    return raw


async def serve(proxy: Proxy, config: ProxyConfig) -> None:
    """Run the proxy and its ops listener until SIGTERM or SIGINT, then stop cleanly:
    stop accepting, give calls in flight ``drain_seconds`` to finish, then
    :meth:`Proxy.close` (release held facts, deliver for ``drain_seconds``)."""
    from aiohttp import web

    from reporters.daemon import ops

    stop, received = ops.stop_on_signals()
    runner = proxy.runner(access_log=None, shutdown_timeout=config.drain_seconds)
    await runner.setup()  # starts the proxy: opens the spool, takes back held facts
    ops_runner: web.AppRunner | None = None
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        ops_at = "no ops listener"
        if config.ops_port is not None:
            ops_runner = web.AppRunner(proxy.ops_app(), access_log=None)
            await ops_runner.setup()
            ops_site = web.TCPSite(ops_runner, config.ops_host, config.ops_port)
            await ops_site.start()
            ops_at = f"ops on http://{ops.bound(ops_runner)}"
        print(f"bureau-reporter proxy {proxy.proxy_id} as reporter {proxy.reporter.key_id}, "
              f"{len(config.routes)} route(s), on http://{ops.bound(runner)}, {ops_at}, "
              f"spool {config.spool_dir}", flush=True)
        await stop.wait()
        log.info("%s: stopping; calls in flight and delivery get %g s each",
                 received[0], config.drain_seconds)
    finally:
        await runner.cleanup()  # no new calls; in-flight ones finish; then Proxy.close
        if ops_runner is not None:
            await ops_runner.cleanup()


def run_fast(main: Coroutine[Any, Any, None]) -> None:
    """``asyncio.run``, on uvloop where it is installed (the proxy extra brings it, but
    for Windows): most of the proxy's time a call is the event loop's and aiohttp's, and
    uvloop takes 10-20 % off it (bench/proxy_bench.py)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)


def cmd_proxy(args: argparse.Namespace) -> int:
    from reporters.proxy.app import Proxy

    base = Path(args.config).parent if args.config else Path(".")
    try:
        config = from_mapping(build_config(args), base)
        key = load_key(config.key_file)
        proxy = Proxy(config, key)
    except (ConfigError, OSError, ValueError, BureauClientError) as exc:
        print(f"bureau-reporter proxy: {exc}", file=sys.stderr)
        return 2
    try:
        run_fast(serve(proxy, config))
    except (OSError, BureauClientError) as exc:  # a port taken, the spool in use
        print(f"bureau-reporter proxy: {exc}", file=sys.stderr)
        return 2
    return 0


async def resend(key_file: Path, bureau_url: str, spool: Path, since: float | None,
                 timeout: float) -> int:
    """Spool the kept facts again and deliver them; 0 once the bureau answered for all."""
    answers: dict[str, int] = {"accepted": 0, "duplicate": 0, "rejected": 0}

    def count(d: Delivery) -> None:
        for name in answers:
            answers[name] += getattr(d, name)

    # Kept for good here: pruning them is the proxy's business, by its own retention.
    async with Reporter(load_key(key_file), bureau_url, spool, on_delivery=count,
                        keep_delivered=float("inf")) as reporter:
        n = await reporter.resend_delivered(since)
        try:
            await asyncio.wait_for(reporter.flush(), timeout)
        except TimeoutError:
            print(f"bureau-reporter resend: {reporter.pending} of {n} not answered within "
                  f"{timeout:g} s; they stay in the spool for the next run", file=sys.stderr)
            return 1
    print(f"bureau-reporter resend: {wording.count(n, 'fact')} sent again: "
          f"{answers['accepted']} accepted "
          f"(the bureau had lost them), {answers['duplicate']} duplicate, "
          f"{answers['rejected']} rejected")
    return 0


def cmd_resend(args: argparse.Namespace) -> int:
    since = None
    if args.since is not None:
        try:
            if not args.since.endswith("Z"):
                raise ValueError("not UTC")
            since = parse_timestamp(args.since).timestamp()
        except ValueError:
            print(f"bureau-reporter resend: --since {args.since!r}: an RFC 3339 UTC time "
                  "like 2026-11-30T00:00:00Z is needed", file=sys.stderr)
            return 2
    try:
        return asyncio.run(resend(Path(args.key), args.bureau, Path(args.spool), since,
                                  args.timeout))
    except (OSError, BureauClientError) as exc:
        print(f"bureau-reporter resend: {exc}", file=sys.stderr)
        return 2


def cmd_keygen(args: argparse.Namespace) -> int:
    """A new Ed25519 key file (PKCS#8 PEM, mode 0600); its key id on standard output."""
    key = generate_key()
    try:
        save_key(key, args.path)
    except FileExistsError:
        print(f"bureau-reporter keygen: {args.path} exists; not overwriting it",
              file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"bureau-reporter keygen: {exc}", file=sys.stderr)
        return 2
    print(key_id(key))
    return 0


def cmd_keyid(args: argparse.Namespace) -> int:
    try:
        print(key_id(load_key(args.path)))
    except (OSError, BureauClientError) as exc:
        print(f"bureau-reporter keyid: {exc}", file=sys.stderr)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bureau-reporter", description=wording.plain(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    proxy = sub.add_parser("proxy", help="run the reporting reverse proxy")
    proxy.add_argument("--config", help="a JSON or TOML config file (.toml: TOML)")
    proxy.add_argument("--key", help="the reporter's key file (PKCS#8 PEM)")
    proxy.add_argument("--bureau", help="the bureau's base URL")
    proxy.add_argument("--spool", help="the spool directory (facts wait here, durably)")
    proxy.add_argument("--proxy-id", help="interaction ids are PROXY_ID:N")
    proxy.add_argument("--listen", help="HOST:PORT to listen on (default 127.0.0.1:8081)")
    proxy.add_argument("--ops-listen",
                       help="HOST:PORT of the ops listener: /healthz, /readyz, /metrics "
                            "(default 127.0.0.1:9465; 'off' for none)")
    proxy.add_argument("--drain-seconds", type=float,
                       help="at a stop: time for calls in flight to finish, then for "
                            "delivering the spool (default 10)")
    proxy.add_argument("--route", action="append", default=[],
                       help="PREFIX=AGENT_KEY_ID@UPSTREAM_URL (repeatable)")
    proxy.add_argument("--promise", action="append", default=[],
                       help="AGENT_KEY_ID=PROMISE_ID:MAX_MS (repeatable)")
    proxy.add_argument("--settle-seconds", type=float,
                       help="window for a retry or a switch to count (default 30)")
    proxy.add_argument("--quiet-seconds", type=float,
                       help="silence after a failed call that means ABANDONED (default 300)")
    proxy.add_argument("--keep-delivered-days", type=float,
                       help="keep delivered facts this long, for `resend` after a bureau "
                            "restore (default 0: not kept)")
    proxy.set_defaults(func=cmd_proxy)
    again = sub.add_parser("resend", help="send kept facts again after a bureau restore")
    again.add_argument("--key", required=True, help="the reporter's key file (PKCS#8 PEM)")
    again.add_argument("--bureau", required=True, help="the bureau's base URL")
    again.add_argument("--spool", required=True, help="the proxy's spool directory")
    again.add_argument("--since", help="only facts delivered at or after this RFC 3339 "
                                       "UTC time (default: every fact kept)")
    again.add_argument("--timeout", type=float, default=300.0,
                       help="seconds to wait for the bureau's answers (default 300)")
    again.set_defaults(func=cmd_resend)
    add_probe_command(sub)
    add_otlp_command(sub)
    keygen = sub.add_parser("keygen", help="write a new Ed25519 key file, print its key id")
    keygen.add_argument("path", help="where to write the PKCS#8 PEM key (never overwritten)")
    keygen.set_defaults(func=cmd_keygen)
    keyid = sub.add_parser("keyid", help="print the key id of a key file")
    keyid.add_argument("path", help="a PKCS#8 PEM Ed25519 key file")
    keyid.set_defaults(func=cmd_keyid)
    return parser


def missing_extra(command: str, exc: ImportError) -> str:
    """What to tell a user whose install lacks a package ``command`` needs."""
    extra = extras.extra_of(exc.name or "")
    wanted = (*COMMAND_EXTRAS.get(command, ()), *([extra] if extra else []))
    what = f"the {extra} extra" if extra else "an extra"
    return (f"bureau-reporter {command} needs {what} of the client ({exc}): "
            f"{extras.install_hint(*wanted)}")


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        result: int = args.func(args)
    except ImportError as exc:  # an optional package the command needs is not installed
        print(missing_extra(args.command, exc), file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":
    sys.exit(main())
