"""What the reporting proxy adds to a call, measured as it is deployed: the proxy in a
process of its own (``bureau-reporter proxy``, its spool in a temporary directory, the
bureau URL pointing nowhere, so facts pile up in the spool: delivery is not what is
measured), the agent in another (bench/proxy_bench_agent.py), and the callers — this
script — in a third. Every figure through the proxy is measured in the same run as the
same calls straight to the agent, in alternating rounds (the order flips each round),
so a neighbour's load weighs on both; the load average is printed at the start and end.

1. The disk: a 1 KB write and ``fdatasync`` in the spool's directory, one at a time —
   the floor of a call answered only once its fact is on disk.
2. One call at a time (``--calls`` per round and side): plain HTTP with an RFC 9421
   signed caller (signed before the clock starts: the caller's cost) and unsigned; A2A
   ``SendMessage`` answered with a completed task; A2A ``SendStreamingMessage`` (time
   to the first event: it must not wait for the stream's end, 20 ms later); MCP
   ``tools/call`` (arguments checked against the tool's ``inputSchema``, the result
   against its ``outputSchema``). Added latency at p50 and p99 (targets < 1 ms, < 5 ms).
3. ``--concurrency`` calls at once: calls/s, p50, p99 straight and through the proxy,
   signed and unsigned; the proxy's throughput as a share of straight (target >= 0.5)
   and its p99 as a multiple of straight (target <= 2); CPU milliseconds per call of
   the proxy's process and the agent's.
4. The OTLP receiver (``bureau-reporter otlp``, its own process): spans/s from one
   OTLP/HTTP exporter turned into spooled facts (bench/otlp_receiver_row.py).

Every fact is checked at the end: the spool holds exactly one per call that makes one.

    python bench/proxy_bench.py [--calls 1000] [--rounds 3] [--concurrency 32]
                                [--spans 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.otlp_receiver_row import cpu_seconds, otlp_receiver_row
from reporters import generate_key, key_id, save_key
from reporters.httpsig import sign_request_headers

HERE = Path(__file__).resolve().parent
_SEND = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
    "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "q"}]}}})
_STREAM = _SEND.replace("SendMessage", "SendStreamingMessage")
_TOOLS_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
_TOOLS_CALL = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "add", "arguments": {"a": 40, "b": 2}}})
_JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def percentile(ms: list[float], q: float) -> float:
    ordered = sorted(ms)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


# --------------------------------------------------------------------------- processes


async def started(argv: list[str], pattern: bytes, log: Path) -> tuple[
        asyncio.subprocess.Process, str]:
    """Start a process; wait for its startup line; the URL it names."""
    with log.open("ab") as err:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=err)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    found = re.search(pattern, line)
    assert found, (line, log.read_text()[-2000:])
    return proc, found.group(1).decode()


async def stopped(proc: asyncio.subprocess.Process) -> None:
    proc.send_signal(signal.SIGTERM)
    await asyncio.wait_for(proc.wait(), 120)


def proxy_config(tmp: Path, agent_url: str) -> Path:
    save_key(generate_key(), tmp / "proxy.key")
    routes = [("/plain", "/plain", "http"), ("/a2a", "/a2a", "a2a"), ("/mcp", "/mcp", "mcp")]
    config = {
        "bureau_url": "http://127.0.0.1:9", "key_file": "proxy.key", "spool_dir": "spool",
        "settle_seconds": 600, "quiet_seconds": 600, "drain_seconds": 0.5,
        "routes": [{"prefix": prefix, "agent": key_id(generate_key()),
                    "upstream": agent_url + path, "protocol": protocol}
                   for prefix, path, protocol in routes]}
    path = tmp / "proxy.json"
    path.write_text(json.dumps(config))
    return path


def facts_on_disk(spool: Path) -> int:
    db = sqlite3.connect(spool / "spool.sqlite3")
    try:
        return sum(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                   for table in ("held", "spool"))
    finally:
        db.close()


# --------------------------------------------------------------------------- the disk


def fsync_floor(directory: Path, n: int = 300) -> tuple[float, float]:
    """p50/p99 ms of a 1 KB write + fdatasync in ``directory``, one at a time."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.ftruncate(fd, 1 << 20)
        os.fsync(fd)
        ms = []
        for i in range(n):
            begun = time.perf_counter()
            os.pwrite(fd, b"x" * 1024, (i * 1024) % (1 << 20))
            os.fdatasync(fd)
            ms.append((time.perf_counter() - begun) * 1000)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(ms), percentile(ms, 0.99)


# --------------------------------------------------------------------------- callers


@dataclass
class Kind:
    """One kind of call: where it goes below the base URL, and what it sends."""

    name: str
    path: str
    body: str
    signed: bool = False
    stream: bool = False  # time to the first event
    facts: bool = True  # a call through the proxy makes one fact


@dataclass
class Tally:
    """A row's samples over every round: latencies (ms), and per round calls/s and the
    CPU ms per call of the proxy and the agent."""

    ms: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    cpu: list[tuple[float, float]] = field(default_factory=list)


def requests(kind: Kind, url: str, n: int) -> list[tuple[str, dict[str, str]]]:
    """``n`` requests of ``kind``, signed (if signed) before the clock starts."""
    caller = generate_key()
    out = []
    for i in range(n):
        target = f"{url}{kind.path}" + (f"/task-{i}" if kind.path == "/plain" else "")
        headers = dict(_JSON)
        if kind.signed:
            headers.update(sign_request_headers(caller, "POST", target))
        out.append((target, headers))
    return out


async def one(session: aiohttp.ClientSession, kind: Kind, target: str,
              headers: dict[str, str]) -> float:
    begun = time.perf_counter()
    async with session.post(target, data=kind.body, headers=headers) as resp:
        assert resp.status == 200, (resp.status, await resp.text())
        if kind.stream:
            while not (await resp.content.readline()).startswith(b"data:"):
                pass
            took = time.perf_counter() - begun
            await resp.read()
            return took * 1000
        await resp.read()
    return (time.perf_counter() - begun) * 1000


async def calls(session: aiohttp.ClientSession, kind: Kind, url: str, n: int,
                concurrency: int) -> tuple[list[float], float]:
    """``n`` calls, ``concurrency`` at once: latencies (ms) and seconds in all."""
    todo = iter(requests(kind, url, n))
    ms: list[float] = []

    async def worker() -> None:
        for target, headers in todo:
            ms.append(await one(session, kind, target, headers))

    begun = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ms, time.perf_counter() - begun


@dataclass
class Setup:
    session: aiohttp.ClientSession
    agent: tuple[int, str]  # pid, URL
    proxy: tuple[int, str]
    made: int = 0  # calls through the proxy that make a fact


async def measured(setup: Setup, kind: Kind, through: bool, n: int, concurrency: int,
                   tally: Tally) -> None:
    url = (setup.proxy if through else setup.agent)[1]
    cpu = cpu_seconds(setup.proxy[0]), cpu_seconds(setup.agent[0])
    ms, seconds = await calls(setup.session, kind, url, n, concurrency)
    tally.ms += ms
    tally.rates.append(n / seconds)
    tally.cpu.append(((cpu_seconds(setup.proxy[0]) - cpu[0]) * 1000 / n,
                      (cpu_seconds(setup.agent[0]) - cpu[1]) * 1000 / n))
    if through and kind.facts:
        setup.made += n


async def alternate(rounds: int, sides: list[Callable[[], Awaitable[None]]]) -> None:
    """Each round runs every side once; the order flips from round to round."""
    for r in range(rounds):
        for side in sides if r % 2 == 0 else sides[::-1]:
            await side()


# --------------------------------------------------------------------------- rows

ONE_AT_A_TIME = [
    Kind("plain HTTP, signed caller", "/plain", '{"q": 1}', signed=True),
    Kind("plain HTTP, unsigned", "/plain", '{"q": 1}'),
    Kind("A2A SendMessage", "/a2a", _SEND),
    Kind("A2A stream, time to first event", "/a2a", _STREAM, stream=True),
    Kind("MCP tools/call", "/mcp", _TOOLS_CALL),
]


async def latency_rows(setup: Setup, n: int, rounds: int) -> list[tuple[str, float, float]]:
    print(f"\none call at a time, {n} calls a side a round, {rounds} rounds alternating "
          "(p50 / p99 over every round; added = through - straight)")
    added = []
    for kind in ONE_AT_A_TIME:
        straight, through = Tally(), Tally()
        await alternate(rounds, [
            lambda k=kind, t=straight: measured(setup, k, False, n, 1, t),
            lambda k=kind, t=through: measured(setup, k, True, n, 1, t)])
        p = [(statistics.median(t.ms), percentile(t.ms, 0.99)) for t in (straight, through)]
        gain = p[1][0] - p[0][0], p[1][1] - p[0][1]
        added.append((kind.name, *gain))
        print(f"{kind.name:<34} straight {p[0][0]:6.2f} / {p[0][1]:6.2f} ms   "
              f"through {p[1][0]:6.2f} / {p[1][1]:6.2f} ms   "
              f"added {gain[0]:+6.2f} / {gain[1]:+6.2f} ms   "
              f"proxy CPU {statistics.median(c[0] for c in through.cpu):.2f} ms/call")
    return added


async def concurrency_rows(setup: Setup, n: int, rounds: int, concurrency: int) -> None:
    plain = Kind("straight", "/plain", '{"q": 1}', signed=True)
    rows = {"straight to the agent": (Tally(), plain, False),
            "through the proxy, signed": (Tally(), plain, True),
            "through the proxy, unsigned": (Tally(), Kind("unsigned", "/plain", '{"q": 1}'),
                                            True)}
    print(f"\n{concurrency} calls at once, {n} calls a row a round, {rounds} rounds "
          "alternating (calls/s: median of rounds; share: of the same round's straight)")
    await alternate(rounds, [
        lambda t=tally, k=kind, th=through: measured(setup, k, th, n, concurrency, t)
        for tally, kind, through in rows.values()])
    base = rows["straight to the agent"][0]
    base_p99 = percentile(base.ms, 0.99)
    for name, (tally, _, through) in rows.items():
        shares = [r / b for r, b in zip(tally.rates, base.rates, strict=True)]
        p99 = percentile(tally.ms, 0.99)
        cpu = statistics.median(c[0] for c in tally.cpu), statistics.median(
            c[1] for c in tally.cpu)
        print(f"{name:<30} {statistics.median(tally.rates):7.0f} calls/s   "
              f"p50 {statistics.median(tally.ms):6.2f} ms   p99 {p99:6.2f} ms"
              + (f"   share {statistics.median(shares):.2f} "
                 f"({min(shares):.2f}-{max(shares):.2f})   p99 x{p99 / base_p99:.2f}"
                 f"   CPU/call proxy {cpu[0]:.2f} ms, agent {cpu[1]:.2f} ms"
                 if through else f"   CPU/call agent {cpu[1]:.2f} ms"))


async def main(n: int, rounds: int, concurrency: int) -> None:
    print(f"at the start: {load_average()} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as name:
        tmp = Path(name)
        floor = fsync_floor(tmp)
        print(f"the disk: 1 KB write + fdatasync in the spool's directory, one at a time: "
              f"p50 {floor[0]:.2f} ms, p99 {floor[1]:.2f} ms")
        agent, agent_url = await started(
            [sys.executable, str(HERE / "proxy_bench_agent.py")], rb"agent on (\S+)",
            tmp / "agent.log")
        proxy, proxy_url = await started(
            [sys.executable, "-m", "reporters.proxy.cli", "proxy", "--config",
             str(proxy_config(tmp, agent_url)), "--listen", "127.0.0.1:0",
             "--ops-listen", "off"], rb" on (http://\S+), ", tmp / "proxy.log")
        try:
            async with aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=0)) as session:
                setup = Setup(session, (agent.pid, agent_url), (proxy.pid, proxy_url))
                # Warm up; MCP's tools are listed first, as a client does.
                await calls(session, Kind("tools", "/mcp", _TOOLS_LIST, facts=False),
                            proxy_url, 1, 1)
                for kind in ONE_AT_A_TIME:
                    await measured(setup, kind, True, 50, 1, Tally())
                await latency_rows(setup, n, rounds)
                await concurrency_rows(setup, n, rounds, concurrency)
        finally:
            await stopped(proxy)
            await stopped(agent)
        on_disk = facts_on_disk(tmp / "spool")
        print(f"\nfacts on disk (held or spooled) after the stop: {on_disk} "
              f"of {setup.made} calls that make one")
        assert on_disk == setup.made, (on_disk, setup.made)
    print(f"at the end: {load_average()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--spans", type=int, default=50_000,
                        help="spans the OTLP receiver row exports (0: skip the row)")
    parser.add_argument("--batch", type=int, default=512,
                        help="spans per export request (the SDK's default batch)")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds, args.concurrency))
    if args.spans:
        asyncio.run(otlp_receiver_row(args.spans, args.batch))
