"""What the reporting proxy adds to a call, measured as it is deployed: the proxy in a
process of its own (``bureau-reporter proxy``, its spool in a temporary directory, the
bureau URL pointing nowhere, so facts pile up in the spool: delivery is not what is
measured), the agent in another (bench/proxy_bench_agent.py), and the callers — this
script — in a third. Every figure through the proxy is measured in the same run as the
same calls straight to the agent, in alternating rounds (the order flips each round),
so a neighbour's load weighs on both; the load average is printed at the start and end.
Beside the proxy, in the same rounds: a **bare aiohttp forwarder** (the agent's script
with ``--forward-to``: forwarding and nothing else, on the same loop), what any proxy
written on aiohttp costs before its own work; and, with ``--compare-with TREE``, the
proxy of another source tree (another revision: ``git worktree add TREE REV``).

1. One call at a time (``--calls`` per round and side): plain HTTP with an RFC 9421
   signed caller (signed before the clock starts: the caller's cost) and unsigned; A2A
   ``SendMessage`` answered with a completed task; A2A ``SendStreamingMessage`` (time
   to the first event: it must not wait for the stream's end, 20 ms later); MCP
   ``tools/call`` (arguments checked against the tool's ``inputSchema``, the result
   against its ``outputSchema``). Added latency at p50 and p99 (targets < 1 ms, < 5 ms),
   beside the disk's own time in the same rounds: one held record's commit alone (SQLite,
   WAL, ``synchronous=FULL``) in the spool's directory, the floor of a call answered
   only once its fact is on disk.
2. ``--concurrency`` calls at once: calls/s, p50, p99 straight and through the proxy,
   signed and unsigned; the proxy's throughput as a share of straight (target >= 0.5)
   and its p99 as a multiple of straight (target <= 2); CPU milliseconds per call of
   the proxy's process, the agent's and the callers', and the share they allow; then
   the proxy's own stages timed alone, CPU a call.
3. The OTLP receiver (``bureau-reporter otlp``, its own process): spans/s from one
   OTLP/HTTP exporter turned into spooled facts (bench/otlp_receiver_row.py).

Every fact is checked at the end: the spool holds exactly one per call that makes one.

    python bench/proxy_bench.py [--calls 1000] [--rounds 3] [--concurrency 32]
        [--concurrent-calls 2000] [--compare-with TREE] [--spans 50000]
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
from bench.proxy_bench_anchors import Disk, stage_costs
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


async def started(argv: list[str], pattern: bytes, log: Path,
                  env: dict[str, str] | None = None) -> tuple[asyncio.subprocess.Process, str]:
    """Start a process; wait for its startup line; the URL it names."""
    with log.open("ab") as err:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=err, env=env)
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


# --------------------------------------------------------------------------- callers


@dataclass
class Kind:
    """One kind of call: where it goes below the base URL, and what it sends."""

    name: str
    path: str
    body: str
    signed: bool = False
    stream: bool = False  # time to the first event


@dataclass
class Tally:
    """A row's samples over every round: latencies (ms), and per round calls/s and the
    CPU ms per call of the proxy and the agent."""

    ms: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    cpu: list[tuple[float, float, float]] = field(default_factory=list)


def p50_p99(ms: list[float]) -> str:
    return f"{statistics.median(ms):6.2f} / {percentile(ms, 0.99):6.2f} ms"


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
                concurrency: int) -> tuple[list[float], float, float]:
    """``n`` calls, ``concurrency`` at once: latencies (ms), seconds in all, and the
    callers' CPU seconds (this process's, signing before the clock left out)."""
    todo = iter(requests(kind, url, n))
    ms: list[float] = []

    async def worker() -> None:
        for target, headers in todo:
            ms.append(await one(session, kind, target, headers))

    begun, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ms, time.perf_counter() - begun, time.process_time() - cpu


@dataclass
class Proxied:
    """One proxy under test: its label, process id, URL and spool; the calls through it
    that make a fact."""

    label: str
    pid: int
    url: str
    spool: Path | None  # None: the bare forwarder, which makes no fact
    made: int = 0


@dataclass
class Setup:
    session: aiohttp.ClientSession
    agent: tuple[int, str]  # pid, URL
    proxies: list[Proxied]
    disk: Disk


async def measured(setup: Setup, kind: Kind, via: Proxied | None, n: int, concurrency: int,
                   tally: Tally) -> None:
    """``n`` calls straight to the agent (``via`` None) or through a proxy."""
    watched = via or setup.proxies[0]
    cpu = cpu_seconds(watched.pid), cpu_seconds(setup.agent[0])
    url = setup.agent[1] if via is None else via.url
    ms, seconds, callers = await calls(setup.session, kind, url, n, concurrency)
    tally.ms += ms
    tally.rates.append(n / seconds)
    tally.cpu.append(((cpu_seconds(watched.pid) - cpu[0]) * 1000 / n,
                      (cpu_seconds(setup.agent[0]) - cpu[1]) * 1000 / n,
                      callers * 1000 / n))
    if via is not None:
        via.made += n


async def alternate(rounds: int, sides: list[Callable[[], Awaitable[None]]]) -> None:
    """Each round runs every side once; the order flips from round to round."""
    for r in range(rounds):
        for side in sides if r % 2 == 0 else sides[::-1]:
            await side()


def sides(setup: Setup, kind: Kind, n: int, concurrency: int,
          tallies: list[Tally]) -> list[Callable[[], Awaitable[None]]]:
    """Straight (``tallies[0]``), then through each proxy."""
    def side(via: Proxied | None, tally: Tally) -> Callable[[], Awaitable[None]]:
        return lambda: measured(setup, kind, via, n, concurrency, tally)

    return [side(via, t) for via, t in zip([None, *setup.proxies], tallies, strict=True)]


# --------------------------------------------------------------------------- rows

ONE_AT_A_TIME = [
    Kind("plain HTTP, signed caller", "/plain", '{"q": 1}', signed=True),
    Kind("plain HTTP, unsigned", "/plain", '{"q": 1}'),
    Kind("A2A SendMessage", "/a2a", _SEND),
    Kind("A2A stream, time to first event", "/a2a", _STREAM, stream=True),
    Kind("MCP tools/call", "/mcp", _TOOLS_CALL),
]


async def latency_rows(setup: Setup, n: int, rounds: int) -> None:
    print(f"\none call at a time, {n} calls a side a round, {rounds} rounds alternating "
          "(p50 / p99 over every round; added = through - straight)")
    for kind in ONE_AT_A_TIME:
        tallies = [Tally() for _ in range(1 + len(setup.proxies))]
        disk = Tally()

        async def probe(t: Tally = disk) -> None:
            setup.disk.probe(max(10, n // 4), t.ms)

        await alternate(rounds, [*sides(setup, kind, n, 1, tallies), probe])
        p50, p99 = statistics.median(tallies[0].ms), percentile(tallies[0].ms, 0.99)
        print(f"{kind.name:<34} straight {p50:6.2f} / {p99:6.2f} ms   "
              f"(the disk in these rounds: a held record's commit alone {p50_p99(disk.ms)})")
        for via, tally in zip(setup.proxies, tallies[1:], strict=True):
            through = statistics.median(tally.ms), percentile(tally.ms, 0.99)
            print(f"  {'through ' + via.label:<32} {through[0]:6.2f} / {through[1]:6.2f} ms"
                  f"   added {through[0] - p50:+6.2f} / {through[1] - p99:+6.2f} ms   "
                  f"proxy CPU {statistics.median(c[0] for c in tally.cpu):.2f} ms/call")


def median_cpu(tally: Tally, which: int) -> float:
    """Median over the rounds of one process's CPU ms a call (0 proxy, 1 agent, 2 callers)."""
    return statistics.median(c[which] for c in tally.cpu)


async def concurrency_rows(setup: Setup, n: int, rounds: int, concurrency: int) -> None:
    print(f"\n{concurrency} calls at once, {n} calls a side a round, {rounds} rounds "
          "alternating (calls/s: median of rounds; share: of the same round's straight).\n"
          "Each process is one event loop, so at most one core each: straight, the busier "
          "of callers and agent\nbounds the rate; through, also the proxy. CPU ceiling: "
          "the share the CPU a call allows, max(callers, agent) / proxy.")
    for kind in (Kind("signed callers", "/plain", '{"q": 1}', signed=True),
                 Kind("unsigned", "/plain", '{"q": 1}')):
        tallies = [Tally() for _ in range(1 + len(setup.proxies))]
        await alternate(rounds, sides(setup, kind, n, concurrency, tallies))
        base = tallies[0]
        base_p99 = percentile(base.ms, 0.99)
        print(f"{kind.name + ', straight':<34} {statistics.median(base.rates):7.0f} calls/s"
              f"   p50 {statistics.median(base.ms):6.2f} ms   p99 {base_p99:6.2f} ms"
              f"   CPU/call agent {median_cpu(base, 1):.2f} ms, "
              f"callers {median_cpu(base, 2):.2f} ms")
        busiest = max(median_cpu(base, 1), median_cpu(base, 2))
        for via, tally in zip(setup.proxies, tallies[1:], strict=True):
            shares = [r / b for r, b in zip(tally.rates, base.rates, strict=True)]
            p99 = percentile(tally.ms, 0.99)
            ceiling = busiest / max(median_cpu(tally, 0), 1e-6)
            print(f"  {'through ' + via.label:<32} {statistics.median(tally.rates):7.0f} "
                  f"calls/s   p50 {statistics.median(tally.ms):6.2f} ms   p99 {p99:6.2f} ms"
                  f"   share {statistics.median(shares):.2f} "
                  f"({min(shares):.2f}-{max(shares):.2f})   p99 x{p99 / base_p99:.2f}   "
                  f"CPU/call proxy {median_cpu(tally, 0):.2f} ms, "
                  f"agent {median_cpu(tally, 1):.2f} ms, callers {median_cpu(tally, 2):.2f} ms"
                  f"   CPU ceiling {ceiling:.2f}")


async def start_proxy(tmp: Path, agent_url: str, label: str,
                      source: Path | None) -> tuple[asyncio.subprocess.Process, Proxied]:
    """A proxy from this tree, or from the tree at ``source`` (another revision)."""
    home = Path(tempfile.mkdtemp(prefix="proxy-", dir=tmp))
    env = None if source is None else {**os.environ, "PYTHONPATH": str(source)}
    proc, url = await started(
        [sys.executable, "-m", "reporters.proxy.cli", "proxy", "--config",
         str(proxy_config(home, agent_url)), "--listen", "127.0.0.1:0", "--ops-listen", "off"],
        rb" on (http://\S+), ", home / "proxy.log", env)
    return proc, Proxied(label, proc.pid, url, home / "spool")


async def main(n: int, rounds: int, concurrency: tuple[int, int], compare: Path | None) -> None:
    print(f"at the start: {load_average()} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as name:
        tmp = Path(name)
        disk = Disk(tmp)
        agent, agent_url = await started(
            [sys.executable, str(HERE / "proxy_bench_agent.py")], rb"agent on (\S+)",
            tmp / "agent.log")
        procs = [await start_proxy(tmp, agent_url, "the proxy", None)]
        if compare is not None:
            procs.append(await start_proxy(tmp, agent_url, f"the proxy of {compare}", compare))
        bare, bare_url = await started(
            [sys.executable, str(HERE / "proxy_bench_agent.py"), "--forward-to", agent_url],
            rb"bare forwarder on (\S+)", tmp / "forwarder.log")
        procs.append((bare, Proxied("a bare aiohttp forwarder", bare.pid, bare_url, None)))
        try:
            async with aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=0)) as session:
                setup = Setup(session, (agent.pid, agent_url), [p for _, p in procs], disk)
                for via in setup.proxies:  # warm up; MCP's tools listed first, as a client does
                    await calls(session, Kind("tools", "/mcp", _TOOLS_LIST), via.url, 1, 1)
                    for kind in ONE_AT_A_TIME:
                        await measured(setup, kind, via, 50, 1, Tally())
                await latency_rows(setup, n, rounds)
                await concurrency_rows(setup, concurrency[1], rounds, concurrency[0])
                stage_costs(max(100, n), tmp)
        finally:
            for proc, _ in procs:
                await stopped(proc)
            await stopped(agent)
        print()
        for via in setup.proxies:
            if via.spool is None:
                continue
            on_disk = facts_on_disk(via.spool)
            print(f"facts on disk (held or spooled) after {via.label} stopped: {on_disk} "
                  f"of {via.made} calls that make one")
            assert on_disk == via.made, (on_disk, via.made)
    print(f"at the end: {load_average()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--concurrent-calls", type=int, default=2000,
                        help="calls a side a round at --concurrency at once")
    parser.add_argument("--compare-with", type=Path, metavar="TREE",
                        help="also run the proxy of another source tree (another revision: "
                             "git worktree add TREE REV), measured in the same rounds")
    parser.add_argument("--spans", type=int, default=50_000,
                        help="spans the OTLP receiver row exports (0: skip the row)")
    parser.add_argument("--batch", type=int, default=512,
                        help="spans per export request (the SDK's default batch)")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds, (args.concurrency, args.concurrent_calls),
                     args.compare_with))
    if args.spans:
        asyncio.run(otlp_receiver_row(args.spans, args.batch))
