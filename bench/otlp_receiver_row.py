"""The OTLP receiver's row of bench/proxy_bench.py: ``bureau-reporter otlp`` in its own
process (one core), fed by one OTLP/HTTP exporter (the SDK's, protobuf, batches of
``batch`` spans, one request at a time as a BatchSpanProcessor sends them); each request
is answered only once its facts are signed and fsynced. Spans/s turned into spooled
facts, with the SDK's encoding and without it, and per CPU-second of the receiver (on a
shared machine, its wall-clock rate says more about the neighbours than about it)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reporters import generate_key, key_id


def cpu_seconds(pid: int) -> float:
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
        cpu = cpu_seconds(proc.pid)
        started = time.perf_counter()
        for body in bodies:
            answer = await asyncio.to_thread(exporter._client.export, body)
            assert answer.success, answer
        alone = time.perf_counter() - started
        cpu = cpu_seconds(proc.pid) - cpu
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
