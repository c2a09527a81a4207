"""What the reporting proxy adds to a call: forwarding, measuring, and holding the fact
on disk (fsynced) before the caller gets its answer (docs/proxy.md, "Holding and
durability").

Starts a trivial agent on loopback and a proxy in front of it (in this process, its
spool in a temporary directory; the bureau URL points nowhere, so facts only pile up in
the spool: delivery is not what is measured), then:

1. sequential calls straight to the agent, then through the proxy: p50/p99 latency;
2. concurrent calls through the proxy (``--concurrency``): calls/s, p50/p99 — calls
   that arrive together share one fsync (the spool's group commit).

3. A2A: ``SendMessage`` answered with a completed task, straight to the agent and
   through the proxy (route ``protocol = "a2a"``: the answer parsed with a2a-sdk's
   types, the fact held before the answer goes back), one at a time, in one run: the
   proxy's added latency at p50 and p99 (targets: < 1 ms and < 5 ms);
4. A2A streaming: ``SendStreamingMessage`` whose first event comes at once and the
   final one 20 ms later: time to the first event straight and through the proxy (the
   first event must not wait for the stream to end).

Signed callers (RFC 9421, signed before the clock starts) are held for the settle
window, as in production; unsigned ones are released at once, and cost the proxy no
signature check. The A2A calls are unsigned.
5. the OTLP receiver (``bureau-reporter otlp``, its own process: one core): spans/s
   from one OTLP/HTTP exporter (the SDK's, protobuf, batches of ``--batch`` spans, one
   request at a time as a BatchSpanProcessor sends them) turned into spooled facts —
   each request is answered only once its facts are signed and fsynced.

    python bench/proxy_bench.py [--calls 2000] [--concurrency 32] [--spans 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reporters import generate_key, key_id
from reporters.httpsig import sign_request_headers
from reporters.proxy import Proxy, from_mapping


async def _site(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


def _summary(name: str, latencies: list[float], seconds: float) -> str:
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return (f"{name:<44} {len(ms) / seconds:8.0f} calls/s   p50 {statistics.median(ms):6.2f} ms"
            f"   p99 {p99:6.2f} ms")


async def _calls(session: aiohttp.ClientSession, url: str, n: int, concurrency: int,
                 signed: bool) -> tuple[list[float], float]:
    caller = generate_key()
    latencies: list[float] = []
    # Signed before the clock starts: signing is the caller's cost, not the proxy's.
    requests = [(f"{url}/task-{i}", sign_request_headers(caller, "POST", f"{url}/task-{i}")
                 if signed else {}) for i in range(n)]
    todo = iter(requests)

    async def worker() -> None:
        for target, headers in todo:
            started = time.perf_counter()
            async with session.post(target, data=b'{"q": 1}', headers=headers) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


_TASK = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"},
         "artifacts": [{"artifactId": "a", "parts": [{"text": "42"}]}]}
_CARD = {"name": "bench", "description": "answers", "version": "1",
         "supportedInterfaces": [{"url": "http://x/", "protocolBinding": "JSONRPC",
                                  "protocolVersion": "1.0"}],
         "capabilities": {"streaming": True}, "defaultOutputModes": ["text/plain"],
         "skills": []}
_SEND = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
    "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "q"}]}}})
_STREAM = _SEND.replace("SendMessage", "SendStreamingMessage")


async def _a2a_agent(request: web.Request) -> web.StreamResponse:
    """A2A 1.0 over JSON-RPC, answering canned bytes (the agent's own cost is not what
    is measured): a completed task, or a stream of two events 20 ms apart; its card."""
    if request.method == "GET":
        return web.json_response(_CARD)
    doc = json.loads(await request.read())
    if doc["method"] == "SendStreamingMessage":
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        working = {**_TASK, "status": {"state": "TASK_STATE_WORKING"}}
        await resp.write(b"data: " + json.dumps(
            {"jsonrpc": "2.0", "id": 1, "result": {"task": working}}).encode() + b"\n\n")
        await asyncio.sleep(0.02)
        await resp.write(b"data: " + json.dumps(
            {"jsonrpc": "2.0", "id": 1, "result": {"task": _TASK}}).encode() + b"\n\n")
        await resp.write_eof()
        return resp
    return web.json_response({"jsonrpc": "2.0", "id": doc["id"], "result": {"task": _TASK}})


async def _a2a_calls(session: aiohttp.ClientSession, url: str, n: int,
                     stream: bool) -> list[float]:
    """One at a time; for a stream, the time to its first event."""
    out = []
    for _ in range(n):
        started = time.perf_counter()
        async with session.post(url, data=_STREAM if stream else _SEND,
                                headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 200, resp.status
            if stream:
                while not (await resp.content.readline()).startswith(b"data:"):
                    pass
                out.append(time.perf_counter() - started)
                await resp.read()
            else:
                await resp.read()
                out.append(time.perf_counter() - started)
    return out


def _percentiles(latencies: list[float]) -> tuple[float, float]:
    ms = sorted(x * 1000 for x in latencies)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


async def _a2a_rows(session: aiohttp.ClientSession, agent_url: str, proxy_url: str,
                    calls: int) -> None:
    for stream, name in ((False, "A2A SendMessage"),
                         (True, "A2A stream, time to first event")):
        await _a2a_calls(session, proxy_url + "/a2a", 20, stream)  # warm up
        direct = _percentiles(await _a2a_calls(session, agent_url, calls, stream))
        through = _percentiles(await _a2a_calls(session, proxy_url + "/a2a", calls, stream))
        print(f"{name:<36} straight p50 {direct[0]:6.2f} ms  p99 {direct[1]:6.2f} ms   "
              f"through the proxy p50 {through[0]:6.2f} ms  p99 {through[1]:6.2f} ms   "
              f"added p50 {through[0] - direct[0]:+6.2f} ms  p99 {through[1] - direct[1]:+6.2f} ms")


async def main(calls: int, concurrency: int) -> None:
    async def agent(request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/a2a"):
            return await _a2a_agent(request)
        await request.read()
        return web.json_response({"answer": 42})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", agent)
    agent_runner, agent_url = await _site(app)
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp:
        config = from_mapping({
            "bureau_url": "http://127.0.0.1:9", "key_file": "unused", "spool_dir": tmp,
            "settle_seconds": 600, "quiet_seconds": 600, "ops_listen": "off",
            "drain_seconds": 0.5,
            "routes": [{"prefix": "/a", "agent": key_id(generate_key()),
                        "upstream": agent_url},
                       {"prefix": "/a2a", "agent": key_id(generate_key()),
                        "upstream": agent_url + "/a2a", "protocol": "a2a"}]})
        proxy = Proxy(config, generate_key())
        proxy_runner, proxy_url = await _site(proxy.app())
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            await _calls(session, proxy_url + "/a", 50, 1, True)  # warm up
            print(f"{calls} calls each; the spool fsyncs (SQLite, synchronous=FULL)")
            lat, secs = await _calls(session, agent_url, calls, 1, True)
            print(_summary("straight to the agent, 1 at a time", lat, secs))
            lat, secs = await _calls(session, proxy_url + "/a", calls, 1, True)
            print(_summary("through the proxy, 1 at a time", lat, secs))
            lat, secs = await _calls(session, proxy_url + "/a", calls, 1, False)
            print(_summary("through the proxy, 1 at a time, unsigned", lat, secs))
            lat, secs = await _calls(session, agent_url, calls, concurrency, True)
            print(_summary(f"straight to the agent, {concurrency} at once", lat, secs))
            lat, secs = await _calls(session, proxy_url + "/a", calls, concurrency, True)
            print(_summary(f"through the proxy, {concurrency} at once", lat, secs))
            lat, secs = await _calls(session, proxy_url + "/a", calls, concurrency, False)
            print(_summary(f"through the proxy, {concurrency} at once, unsigned", lat, secs))
            await _a2a_rows(session, agent_url + "/a2a", proxy_url, calls)
            print(f"facts held on disk at the end: {proxy.facts.count}")
        await proxy_runner.cleanup()
    await agent_runner.cleanup()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc): on a shared machine, its
    wall-clock rate says more about the neighbours than about the receiver."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _agent_spans(n: int) -> list[Any]:
    """``n`` invoke_agent spans made by the OpenTelemetry SDK (before the clock starts)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    for i in range(n):
        with tracer.start_as_current_span("invoke_agent Bench", kind=SpanKind.CLIENT,
                                          attributes={"gen_ai.operation.name": "invoke_agent",
                                                      "gen_ai.agent.name": f"bench-{i % 4}",
                                                      "gen_ai.provider.name": "bench"}):
            pass
    return list(memory.get_finished_spans())


async def otlp_receiver_row(n: int, batch: int) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from reporters import save_key
    from reporters._internal.spool import DB_FILE

    spans = _agent_spans(n)
    with tempfile.TemporaryDirectory(prefix="otlp-bench-") as tmp:
        save_key(generate_key(), Path(tmp) / "r.key")
        names = {f"bench-{i}": key_id(generate_key()) for i in range(4)}
        (Path(tmp) / "otlp.json").write_text(json.dumps({
            "bureau_url": "http://127.0.0.1:9", "key_file": "r.key", "spool_dir": "spool",
            "ops_listen": "off", "drain_seconds": 0, "agent_names": names}))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "reporters.proxy.cli", "otlp", "--config",
            str(Path(tmp) / "otlp.json"), "--listen", "127.0.0.1:0",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        assert proc.stdout is not None
        line = (await proc.stdout.readline()).decode()
        url = line.split("OTLP/HTTP on ")[1].split(",")[0]
        exporter = OTLPSpanExporter(endpoint=url, timeout=30)
        exporter.export(spans[:batch])  # warm up: connection, first transaction
        half = (len(spans) - batch) // 2 // batch * batch
        sdk, rest = spans[batch:batch + half], spans[batch + half:]
        started = time.perf_counter()
        for i in range(0, len(sdk), batch):
            result = await asyncio.to_thread(exporter.export, sdk[i:i + batch])
            assert result.name == "SUCCESS", result
        seconds = time.perf_counter() - started
        # The same exporter's HTTP client, with the requests encoded before the clock
        # starts: what the receiver itself takes (the SDK's encoding runs in the
        # exporter's process, one request at a time, and is the exporter's cost).
        bodies = [encode_spans(rest[i:i + batch]).SerializeToString()
                  for i in range(0, len(rest), batch)]
        cpu = _cpu_seconds(proc.pid)
        started = time.perf_counter()
        for body in bodies:
            answer = await asyncio.to_thread(exporter._client.export, body)
            assert answer.success, answer
        alone = time.perf_counter() - started
        cpu = _cpu_seconds(proc.pid) - cpu
        exporter.shutdown()
        proc.send_signal(signal.SIGTERM)
        await proc.wait()
        db = sqlite3.connect(Path(tmp) / "spool" / DB_FILE)
        (spooled,) = db.execute("SELECT count(*) FROM spool").fetchone()
        db.close()
    assert spooled == batch + len(sdk) + len(rest), spooled
    print(f"OTLP receiver, {batch} spans a request, one exporter (the SDK's, encoding "
          f"included): {len(sdk) / seconds:8.0f} spans/s ({len(sdk)} spooled facts)")
    print(f"OTLP receiver, {batch} spans a request, requests encoded before the clock: "
          f"{len(rest) / alone:8.0f} spans/s ({len(rest)} spooled facts); per CPU-second "
          f"of the receiver: {len(rest) / max(cpu, 1e-9):8.0f} spans/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--spans", type=int, default=50_000,
                        help="spans the OTLP receiver row exports (0: skip the row)")
    parser.add_argument("--batch", type=int, default=512,
                        help="spans per export request (the SDK's default batch)")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.concurrency))
    if args.spans:
        asyncio.run(otlp_receiver_row(args.spans, args.batch))
