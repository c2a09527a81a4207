"""What a bureau outage costs a LiteLLM call (issue 32; docs/litellm.md, "When the
bureau is away"). Target: a call's latency with the bureau stopped and the plugin's
spool full within 1 ms (p50) of the same call with the bureau up.

One real LiteLLM proxy with the plugin loaded (``litellm --config``, one worker, models
answering with LiteLLM's ``mock_response``), its bureau a real ``bureau serve`` on the
embedded PostgreSQL, called with the ``openai`` client one call at a time, in blocks:

* **up** — the bureau running and the spool drained: every fact is delivered while the
  calls go on;
* **stopped, full** — the bureau stopped, then the spool filled to ``max_spooled``
  (``--fill``) by calls made before the clock starts: every fact is dropped and counted.

The blocks alternate (``--cycles`` of each, the bureau restarted on the same port
between them), so that both states are measured in the same process, under the same
load: two proxies differ from each other by more than the 1 ms asked about. A second
proxy without the plugin, called alternately with the first, is printed for scale.

Two calls: one the deployment answers, and one whose fallback fails too (primary and
backup both refuse with a 429: the path where LiteLLM awaits the plugin's failure and
fallback-failed hooks inline, and where a call used to hang while the bureau was away).
At the end every fact kept is in the bureau's ledger, or the bench exits 1.

    python bench/litellm_bench.py [--calls 300] [--cycles 10] [--fill 30]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai
from intake_bench import bench_bureau

from reporters import generate_key, key_id, save_key
from reporters.integrations.litellm import ATTEMPT_HOOK
from tests.integrations import litellm_proxy as lp
from tests.integrations.support import MESSAGES, worker_facts
from tests.processes import ServeProcess
from tests.proxy.support import ledger_facts

AGENT = key_id(generate_key())
MODELS = [lp.model("good", mock_response="42"),
          *(lp.model(name, mock_response="litellm.RateLimitError")
            for name in ("primary", "backup"))]
ROUTER = {"fallbacks": [{"primary": ["backup"]}]}
#: model group -> what its call is
KINDS = {"good": "answered", "primary": "fallback fails too"}
#: model group -> the facts its call makes: one per attempt (no retries here); without
#: LiteLLM's per-attempt hook (before 1.100), the proxy logs no failure of the backup
FACTS = {"good": 1, "primary": 2 if ATTEMPT_HOOK else 1}
STATES = ("up", "stopped, full")


async def call(llm: openai.AsyncOpenAI, group: str) -> float:
    started = time.perf_counter()
    with contextlib.suppress(openai.RateLimitError):  # the fallback failed too
        await llm.chat.completions.create(model=group, messages=MESSAGES)
    return time.perf_counter() - started


def client(proxy: lp.RunningLiteLLM) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=proxy.url + "/v1", api_key=lp.MASTER_KEY,
                              max_retries=0, timeout=60)


async def wait(what: str, check: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.05)


class Bench:
    def __init__(self, args: argparse.Namespace, server: ServeProcess,
                 plugin: lp.RunningLiteLLM, bare: lp.RunningLiteLLM) -> None:
        self.args, self.server, self.spool = args, server, plugin.spool_dir
        self.plugin, self.bare = client(plugin), client(bare)
        self.latencies: dict[tuple[str, str], list[float]] = {
            (state, group): [] for state in (*STATES, "no plugin") for group in KINDS}
        #: each call with the plugin minus the plugin-less call made beside it
        self.paired: dict[tuple[str, str], list[float]] = {
            (state, group): [] for state in STATES for group in KINDS}
        #: facts the bureau should end with: every attempt but the dropped ones
        self.kept = 0

    async def block(self, state: str, n: int) -> None:
        for i in range(n):
            for group in KINDS:
                pair = [(state, self.plugin), ("no plugin", self.bare)]
                took = {name: await call(llm, group) for name, llm in pair[i % 2:] + pair[:i % 2]}
                for name, seconds in took.items():
                    self.latencies[name, group].append(seconds)
                self.paired[state, group].append(took[state] - took["no plugin"])
        if state == "up":
            self.kept += n * sum(FACTS.values())

    async def stop_and_fill(self) -> None:
        """The bureau stopped, and the spool filled to max_spooled (and one more)."""
        self.server.stop()
        left = len(worker_facts(self.spool))  # facts of the "up" block not yet delivered
        while len(worker_facts(self.spool)) < self.args.fill:
            await call(self.plugin, "good")
        await call(self.plugin, "good")  # dropped
        await wait("the spool to be full", lambda: len(worker_facts(self.spool)) == self.args.fill)
        self.kept += self.args.fill - left

    async def restart_and_drain(self) -> None:
        if self.server.proc is None or self.server.proc.poll() is not None:
            await self.server.start()  # on the same port
        await wait("the spool to drain", lambda: not worker_facts(self.spool))


async def measure(args: argparse.Namespace) -> None:
    key = generate_key()
    async with bench_bureau(key, workers=1) as (server, database_url):
        with tempfile.TemporaryDirectory(prefix="litellm-bench-") as tmp:
            home = Path(tmp)
            for where in ("plugin", "bare"):
                (home / where).mkdir()
            save_key(key, home / "plugin" / "r.key")
            config = {"bureau_url": server.url, "key_file": "r.key", "spool_dir": "spool",
                      "max_spooled": args.fill,
                      "deployments": {"good": AGENT, "primary": AGENT, "backup": AGENT}}
            async with contextlib.AsyncExitStack() as stack:
                # started at once: each takes tens of seconds on a loaded machine
                plugin, bare = await asyncio.gather(
                    stack.enter_async_context(lp.running_litellm(
                        home / "plugin", MODELS, config, router=ROUTER)),
                    stack.enter_async_context(lp.running_litellm(
                        home / "bare", MODELS, None, router=ROUTER)))
                bench = Bench(args, server, plugin, bare)
                await run(args, bench)
                landed = len(await ledger_facts(database_url, key_id(key)))
            report(args, bench, landed)


async def run(args: argparse.Namespace, bench: Bench) -> None:
    for _ in range(args.warmup):
        for group in KINDS:
            await call(bench.plugin, group)
            await call(bench.bare, group)
    bench.kept += args.warmup * sum(FACTS.values())
    per_block = max(1, args.calls // args.cycles)
    for _ in range(args.cycles):
        await bench.restart_and_drain()
        await bench.block("up", per_block)
        await bench.stop_and_fill()
        await bench.block("stopped, full", per_block)
    await bench.restart_and_drain()  # the "up" blocks' facts, all delivered
    await bench.plugin.close()
    await bench.bare.close()


def report(args: argparse.Namespace, bench: Bench, landed: int) -> None:
    per_block = max(1, args.calls // args.cycles)
    print(f"LiteLLM proxy with the plugin, 1 worker, openai client, one call at a time: "
          f"{args.cycles} blocks of {per_block} calls of each kind per state, alternating "
          f"(max_spooled {args.fill}); load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for group, kind in KINDS.items():
        print(f"\n{kind}:")
        p50s = {}
        for name in (*STATES, "no plugin"):
            ms = sorted(x * 1000 for x in bench.latencies[name, group])
            p50s[name] = statistics.median(ms)
            p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
            label = name if name != "no plugin" else "no plugin (another process, for scale)"
            print(f"  {label:<40} p50 {p50s[name]:7.2f} ms   p99 {p99:7.2f} ms")
        print(f"  stopped, full - up: p50 {p50s['stopped, full'] - p50s['up']:+.2f} ms "
              f"(target: within 1 ms)")
        # the load on a shared machine moves between blocks: each call is also set against
        # the plugin-less call made just beside it, and the states compared on that
        paired = {state: statistics.median(bench.paired[state, group]) * 1000
                  for state in STATES}
        print(f"  beside the plugin-less call made next to it: up {paired['up']:+.2f} ms, "
              f"stopped, full {paired['stopped, full']:+.2f} ms (p50): stopped, full - up "
              f"{paired['stopped, full'] - paired['up']:+.2f} ms")
    print(f"\nfacts: {landed} of {bench.kept} in the bureau's ledger (every attempt made "
          f"while the spool had room; those made while it was full were dropped and counted)")
    if landed != bench.kept:
        sys.exit("not every fact kept reached the bureau")
    print("every fact kept is in the bureau's ledger")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--calls", type=int, default=300,
                    help="calls of each kind in each state, over all cycles")
    ap.add_argument("--cycles", type=int, default=10, help="blocks of each state")
    ap.add_argument("--fill", type=int, default=30, help="the plugin's max_spooled")
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    try:
        lp.litellm_command()
    except lp.NoLiteLLM as why:
        sys.exit(f"cannot run: {why}")
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
