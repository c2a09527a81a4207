"""What a bureau outage costs a LiteLLM call (issue 32; docs/litellm.md, "When the
bureau is away"). Target: a call's latency with the bureau stopped and the plugin's
spool full within 1 ms (p50) of the same call with the bureau up.

Three real LiteLLM proxies run at once (``litellm --config``, one worker each, models
answering with LiteLLM's ``mock_response``), called with the ``openai`` client:

* **up** — the plugin loaded, its bureau a real ``bureau serve`` (embedded PostgreSQL)
  that takes every fact;
* **stopped, full** — the plugin loaded, its bureau URL a port nothing listens on, and
  its spool filled to ``max_spooled`` (``--fill``) before the clock starts: every fact
  is dropped and counted;
* **no plugin** — the anchor: the same proxy without the plugin.

Calls alternate between the three (the order rotating each round), one at a time, so
all three see the same load. Two calls: one the deployment answers, and one whose
fallback fails too (primary and backup both refuse with a 429: the path where LiteLLM
awaits the plugin's failure and fallback-failed hooks inline, and where a call used to
hang while the bureau was away). At the end the bench checks that "up" delivered one
fact per attempt and "stopped, full" kept no more than its spool holds.

    python bench/litellm_bench.py [--calls 300] [--fill 200]
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
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nacl.signing
import openai
from intake_bench import bench_bureau

from reporters import generate_key, key_id, save_key
from tests.integrations import litellm_proxy as lp
from tests.integrations.support import MESSAGES, worker_facts
from tests.processes import free_port
from tests.proxy.support import ledger_facts

AGENT = key_id(generate_key())
MODELS = [lp.model("good", mock_response="42"),
          *(lp.model(name, mock_response="litellm.RateLimitError")
            for name in ("primary", "backup"))]
ROUTER = {"fallbacks": [{"primary": ["backup"]}]}
KINDS = {"good": "answered", "primary": "fallback fails too"}


async def call(llm: openai.AsyncOpenAI, group: str) -> float:
    started = time.perf_counter()
    with contextlib.suppress(openai.RateLimitError):  # the fallback failed too
        await llm.chat.completions.create(model=group, messages=MESSAGES)
    return time.perf_counter() - started


@contextlib.asynccontextmanager
async def proxies(home: Path, bureau_url: str, fill: int, key: nacl.signing.SigningKey
                  ) -> AsyncIterator[dict[str, lp.RunningLiteLLM]]:
    """The three proxies; the plugins sign with ``key`` (registered at the bureau)."""
    def plugin(where: str, url: str, **more: object) -> dict[str, object]:
        save_key(key, home / where / "r.key")
        return {"bureau_url": url, "key_file": "r.key", "spool_dir": "spool",
                "deployments": {"good": AGENT, "primary": AGENT, "backup": AGENT}, **more}

    for where in ("up", "down", "bare"):
        (home / where).mkdir()
    dead = f"http://127.0.0.1:{free_port()}"
    async with contextlib.AsyncExitStack() as stack:
        # started at once: each takes tens of seconds on a loaded machine
        started = await asyncio.gather(
            stack.enter_async_context(lp.running_litellm(
                home / "up", MODELS, plugin("up", bureau_url), router=ROUTER)),
            stack.enter_async_context(lp.running_litellm(
                home / "down", MODELS, plugin("down", dead, max_spooled=fill),
                router=ROUTER)),
            stack.enter_async_context(lp.running_litellm(
                home / "bare", MODELS, None, router=ROUTER)))
        yield dict(zip(("up", "stopped, full", "no plugin"), started, strict=True))


def client(proxy: lp.RunningLiteLLM) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=proxy.url + "/v1", api_key=lp.MASTER_KEY,
                              max_retries=0, timeout=60)


async def measure(args: argparse.Namespace) -> None:
    key = generate_key()
    async with bench_bureau(key, workers=1) as (server, database_url):
        with tempfile.TemporaryDirectory(prefix="litellm-bench-") as tmp:
            home = Path(tmp)
            async with proxies(home, server.url, args.fill, key) as running:
                await run(args, running, database_url, key_id(key))


async def run(args: argparse.Namespace, running: dict[str, lp.RunningLiteLLM],
              database_url: str, reporter: str) -> None:
    clients = {name: client(proxy) for name, proxy in running.items()}
    down = running["stopped, full"]
    llm = clients["stopped, full"]
    for _ in range(args.fill):  # fill the spool (its bureau is not there)
        await call(llm, "good")
    await call(llm, "good")  # and one more, dropped
    deadline = time.monotonic() + 60
    while len(worker_facts(down.spool_dir)) < args.fill and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(worker_facts(down.spool_dir)) == args.fill, "the spool did not fill"
    for _ in range(args.warmup):
        for c in clients.values():
            for group in KINDS:
                await call(c, group)
    latencies: dict[tuple[str, str], list[float]] = {(n, g): [] for n in clients
                                                     for g in KINDS}
    names = list(clients)
    for i in range(args.calls):
        order = names[i % len(names):] + names[:i % len(names)]
        for group in KINDS:
            for name in order:
                latencies[name, group].append(await call(clients[name], group))
    for c in clients.values():
        await c.close()
    print(f"LiteLLM proxy, 1 worker each, openai client, one call at a time, {args.calls} "
          f"calls of each kind per proxy, alternating; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for group, kind in KINDS.items():
        print(f"\n{kind}:")
        p50s = {}
        for name in names:
            ms = sorted(x * 1000 for x in latencies[name, group])
            p50s[name] = statistics.median(ms)
            p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
            print(f"  {name:<16} p50 {p50s[name]:7.2f} ms   p99 {p99:7.2f} ms")
        diff = p50s["stopped, full"] - p50s["up"]
        print(f"  stopped, full - up: p50 {diff:+.2f} ms (target: within 1 ms); "
              f"the plugin itself (up - no plugin): p50 {p50s['up'] - p50s['no plugin']:+.2f} ms")
    attempts = (args.warmup + args.calls) * 2  # "good" 1, "primary" 1 logged attempt
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        landed = len(await ledger_facts(database_url, reporter))
        if landed >= attempts:
            break
        await asyncio.sleep(0.2)
    print(f"\nfacts: up {landed} of {attempts} attempts in the bureau's ledger; stopped, "
          f"full: {len(worker_facts(down.spool_dir))} spooled (max_spooled {args.fill}), "
          f"the rest dropped and counted")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--calls", type=int, default=300, help="calls of each kind per proxy")
    ap.add_argument("--fill", type=int, default=200, help="max_spooled of the stopped one")
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    try:
        lp.litellm_command()
    except lp.NoLiteLLM as why:
        sys.exit(f"cannot run: {why}")
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
