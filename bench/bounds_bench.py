"""Honest requests during abusive ones, at the doors that take a stranger's bytes (issue 35).

The OTLP receiver (``bureau-reporter otlp``, its own process): an honest 1-span export
(protobuf, as the SDK encodes it) sent one at a time, first alone, then while
``--bombers`` clients send the issue's bomb back to back (a gzip body of a few KB
holding 4 million empty spans). Prints each phase's p50 and p99, the ratio of the p99s
(the target: at most 2), how long a bomb takes to be refused, and the receiver's peak
RSS before and after (``VmHWM``).

The proxy (``bureau-reporter proxy``, its own process, an upstream in this one): an
honest call through an HTTP route, one at a time, alone and while ``--bombers`` clients
each read an MCP session stream whose one event never ends (``--stream-mib`` each, the
issue's 250 MiB by default); the same p99s and ratio, and the proxy's peak RSS.

    python bench/bounds_bench.py [--requests 300] [--bombers 2] [--bomb-spans 4000000]
        [--stream-mib 250]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reporters import generate_key, key_id, save_key


def _honest_body() -> bytes:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("bench").start_as_current_span(
            "invoke_agent Bench", kind=SpanKind.CLIENT,
            attributes={"gen_ai.operation.name": "invoke_agent",
                        "gen_ai.agent.name": "bench"}):
        pass
    provider.shutdown()
    body: bytes = encode_spans(memory.get_finished_spans()).SerializeToString()
    return body


def _bomb(spans: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    piece = ExportTraceServiceRequest()
    scope = piece.resource_spans.add().scope_spans.add()
    for _ in range(1000):
        scope.spans.add()
    return gzip.compress(piece.SerializeToString() * max(1, spans // 1000), 9)


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _honest(session: aiohttp.ClientSession, url: str, body: bytes, n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        async with session.post(url, data=body,
                                headers={"Content-Type": "application/x-protobuf"}) as resp:
            await resp.read()
            assert resp.status == 200, resp.status
        out.append(time.perf_counter() - started)
    return out


async def _bomber(session: aiohttp.ClientSession, url: str, bomb: bytes, stop: asyncio.Event,
                  answers: list[tuple[int, float]]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        async with session.post(url, data=bomb, headers={
                "Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}) as resp:
            await resp.read()
            answers.append((resp.status, time.perf_counter() - started))


async def otlp(requests: int, bombers: int, bomb_spans: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bounds-bench-") as tmp:
        save_key(generate_key(), Path(tmp) / "r.key")
        (Path(tmp) / "otlp.json").write_text(json.dumps({
            "bureau_url": "http://127.0.0.1:9", "key_file": "r.key", "spool_dir": "spool",
            "ops_listen": "off", "drain_seconds": 0,
            "agent_names": {"bench": key_id(generate_key())}}))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "reporters.proxy.cli", "otlp", "--config",
            str(Path(tmp) / "otlp.json"), "--listen", "127.0.0.1:0",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        assert proc.stdout is not None
        line = (await proc.stdout.readline()).decode()
        url = line.split("OTLP/HTTP on ")[1].split(",")[0]
        body, bomb = _honest_body(), _bomb(bomb_spans)
        try:
            async with aiohttp.ClientSession() as session:
                await _honest(session, url, body, 20)  # warm up
                rss_before = _peak_rss_mb(proc.pid)
                alone = await _honest(session, url, body, requests)
                stop, answers = asyncio.Event(), list[tuple[int, float]]()
                tasks = [asyncio.create_task(_bomber(session, url, bomb, stop, answers))
                         for _ in range(bombers)]
                while not answers:  # the bombs are under way
                    await asyncio.sleep(0.01)
                during = await _honest(session, url, body, requests)
                stop.set()
                await asyncio.gather(*tasks)
            rss_after = _peak_rss_mb(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            await proc.wait()
    load = os.getloadavg()[0]
    refused = [s for s, _ in answers if s == 413]
    print(f"OTLP receiver, honest 1-span export alone:        p50 {_p(alone, .5):6.2f} ms  "
          f"p99 {_p(alone, .99):6.2f} ms  ({requests} requests)")
    print(f"OTLP receiver, honest 1-span export during bombs: p50 {_p(during, .5):6.2f} ms  "
          f"p99 {_p(during, .99):6.2f} ms  ({bombers} bombers)")
    print(f"OTLP receiver, p99 during / p99 alone: {_p(during, .99) / _p(alone, .99):.2f} "
          "(target: at most 2)")
    print(f"OTLP receiver, bomb of {bomb_spans} spans in {len(bomb)} bytes: {len(answers)} sent, "
          f"{len(refused)} answered 413, {len(answers) - len(refused)} 503 (queue full); "
          f"median answer {statistics.median(t for _, t in answers) * 1000:.1f} ms")
    print(f"OTLP receiver, peak RSS {rss_before:.0f} MB before the bombs, {rss_after:.0f} MB "
          f"after (load average {load:.2f})")


#: the agent behind the proxy, in a process of its own (the bench's own loop measures the
#: honest calls and must not be the one busy writing the streams): an HTTP route, and an
#: MCP session stream whose one event never ends
_UPSTREAM = """
import sys
from aiohttp import web
mib = int(sys.argv[1])
line = b"data: " + b"x" * (64 * 1024 - 7) + b"\\n"
async def handle(request):
    if request.path.endswith("/mcp"):
        out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await out.prepare(request)
        try:
            for _ in range(mib * 16):
                await out.write(line)
            await out.write_eof()
        except ConnectionError:  # the reader was stopped
            pass
        return out
    return web.json_response({"status": "ok"})
app = web.Application()
app.router.add_route("*", "/{tail:.*}", handle)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[2]), print=None, access_log=None)
"""
#: a client reading such streams through the proxy, again and again, in its own process
_READER = """
import asyncio, sys
import aiohttp
async def main():
    async with aiohttp.ClientSession() as s:
        while True:
            async with s.get(sys.argv[1], headers={"Accept": "text/event-stream",
                                                  "Mcp-Session-Id": "bench"}) as resp:
                async for chunk in resp.content.iter_any():
                    sys.stdout.write(f"{len(chunk)}\\n")
asyncio.run(main())
"""


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _ready(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            try:
                async with session.get(url) as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise TimeoutError(url)


async def proxy(requests: int, bombers: int, stream_mib: int) -> None:
    # two agents, each its own process: the streaming one's loop is busy writing, and
    # must not be what delays the honest calls
    ups, upstreams = [], []
    for _ in range(2):
        port = _free_port()
        ups.append(f"http://127.0.0.1:{port}")
        upstreams.append(await asyncio.create_subprocess_exec(
            sys.executable, "-c", _UPSTREAM, str(stream_mib), str(port)))
        await _ready(ups[-1] + "/ok")
    up, streaming = ups
    with tempfile.TemporaryDirectory(prefix="bounds-bench-proxy-") as tmp:
        save_key(generate_key(), Path(tmp) / "r.key")
        (Path(tmp) / "proxy.json").write_text(json.dumps({
            "bureau_url": "http://127.0.0.1:9", "key_file": "r.key", "spool_dir": "spool",
            "ops_listen": "off", "drain_seconds": 0, "max_body": 1024 * 1024,
            "routes": [{"prefix": "/a", "agent": key_id(generate_key()), "upstream": up,
                        "protocol": "http"},
                       {"prefix": "/m", "agent": key_id(generate_key()),
                        "upstream": streaming, "protocol": "mcp"}]}))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "reporters.proxy.cli", "proxy", "--config",
            str(Path(tmp) / "proxy.json"), "--listen", "127.0.0.1:0",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        assert proc.stdout is not None
        url = (await proc.stdout.readline()).decode().split(" on ")[1].split(",")[0]
        readers: list[asyncio.subprocess.Process] = []
        try:
            async with aiohttp.ClientSession() as session:
                call = url + "/a/ok"
                await _honest_get(session, call, 20)
                rss_before = _peak_rss_mb(proc.pid)
                alone = await _honest_get(session, call, requests)
                for _ in range(bombers):
                    readers.append(await asyncio.create_subprocess_exec(
                        sys.executable, "-c", _READER, url + "/m/mcp",
                        stdout=asyncio.subprocess.PIPE))
                relayed = 0
                for r in readers:  # every stream under way
                    assert r.stdout is not None
                    relayed += int(await r.stdout.readline())
                during = await _honest_get(session, call, requests)
            rss_after = _peak_rss_mb(proc.pid)
        finally:
            for r in readers:
                r.kill()
                await r.wait()
            proc.send_signal(signal.SIGTERM)
            await proc.wait()
            for upstream in upstreams:
                upstream.kill()
                await upstream.wait()
    print(f"proxy, honest call alone:                        p50 {_p(alone, .5):6.2f} ms  "
          f"p99 {_p(alone, .99):6.2f} ms  ({requests} requests)")
    print(f"proxy, honest call during endless events:        p50 {_p(during, .5):6.2f} ms  "
          f"p99 {_p(during, .99):6.2f} ms  ({bombers} streams of {stream_mib} MiB)")
    print(f"proxy, p99 during / p99 alone: {_p(during, .99) / _p(alone, .99):.2f} "
          "(target: at most 2)")
    print(f"proxy, peak RSS {rss_before:.0f} MB before the streams, {rss_after:.0f} MB after "
          f"(load average {os.getloadavg()[0]:.2f})")


async def _honest_get(session: aiohttp.ClientSession, url: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        async with session.get(url) as resp:
            await resp.read()
            assert resp.status == 200, resp.status
        out.append(time.perf_counter() - started)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--bombers", type=int, default=2)
    parser.add_argument("--bomb-spans", type=int, default=4_000_000)
    parser.add_argument("--stream-mib", type=int, default=250)
    parser.add_argument("--doors", default="otlp,proxy", help="which doors: otlp, proxy")
    args = parser.parse_args()
    if "otlp" in args.doors:
        asyncio.run(otlp(args.requests, args.bombers, args.bomb_spans))
    if "proxy" in args.doors:
        asyncio.run(proxy(args.requests, args.bombers, args.stream_mib))
