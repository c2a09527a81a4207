"""Helpers for the OTLP receiver's tests: a receiver on loopback, spans made by the real
OpenTelemetry SDK and sent by its real OTLP/HTTP exporters, and the facts as the
receiver spooled them."""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import nacl.signing
from opentelemetry.exporter.otlp.common.http import Compression
from opentelemetry.exporter.otlp.json.http.trace_exporter import (
    OTLPSpanExporter as JsonSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from reporters import wire
from reporters._internal.spool import DB_FILE
from reporters.otlp import Receiver, from_mapping
from tests.support import sample, scrape, serving


@dataclass
class RunningReceiver:
    url: str  # the OTLP/HTTP traces endpoint
    ops_url: str
    receiver: Receiver
    session: aiohttp.ClientSession

    async def metric(self, name: str, **labels: str) -> float:
        """One sample of the ops listener's /metrics (0 when not exported yet)."""
        return sample(await scrape(self.session, self.ops_url), name, **labels)


@asynccontextmanager
async def running_receiver(tmp: Path, bureau_url: str, *,
                           key: nacl.signing.SigningKey | None = None,
                           **settings: Any) -> AsyncIterator[RunningReceiver]:
    """A receiver in this process on loopback ports; ``settings`` are config fields."""
    config = from_mapping({"bureau_url": bureau_url, "key_file": "unused.key",
                           "spool_dir": str(tmp / "spool"), **settings}, tmp)
    receiver = Receiver(config, key or wire.generate_key())
    async with serving(receiver.runner()) as url, serving(receiver.ops_app()) as ops_url, \
            aiohttp.ClientSession() as session:
        yield RunningReceiver(url + "/v1/traces", ops_url, receiver, session)


def agent_spans(specs: Sequence[Mapping[str, Any]]) -> list[ReadableSpan]:
    """Spans made by the SDK, one per spec: ``name``, ``kind`` (a SpanKind), ``attributes``,
    ``error`` (a status description: the span ends in ERROR)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.otlp")
    for spec in specs:
        with tracer.start_as_current_span(spec.get("name", "invoke_agent"),
                                          kind=spec.get("kind", SpanKind.CLIENT),
                                          attributes=spec.get("attributes", {}),
                                          record_exception=False,
                                          set_status_on_exception=False) as span:
            if "error" in spec:
                span.set_status(Status(StatusCode.ERROR, spec["error"]))
    provider.shutdown()
    return list(memory.get_finished_spans())


def exporter(url: str, encoding: str = "protobuf", gzip: bool = False) -> Any:
    """The SDK's OTLP/HTTP exporter in ``encoding`` (``protobuf`` or ``json``)."""
    compression = Compression.GZIP if gzip else Compression.NONE
    if encoding == "json":
        return JsonSpanExporter(endpoint=url, timeout=10, compression=compression)
    return OTLPSpanExporter(endpoint=url, timeout=10, compression=compression)


async def export(url: str, spans: Sequence[ReadableSpan], encoding: str = "protobuf",
                 gzip: bool = False) -> SpanExportResult:
    """One export by the real exporter (it is synchronous: run in a thread)."""
    exp = exporter(url, encoding, gzip)
    try:
        return await asyncio.to_thread(exp.export, spans)
    finally:
        exp.shutdown()


def spooled_facts(spool_dir: Path) -> list[dict[str, Any]]:
    """Every fact waiting in the spool file, decoded, oldest first (none before the
    spool exists)."""
    if not (spool_dir / DB_FILE).exists():
        return []
    db = sqlite3.connect(spool_dir / DB_FILE)
    try:
        rows = db.execute("SELECT line FROM spool ORDER BY seq").fetchall()
    except sqlite3.OperationalError:  # being created: its tables are not there yet
        return []
    finally:
        db.close()
    return [json.loads(base64.b64decode(json.loads(line)["payload"])) for (line,) in rows]


def ids(span: ReadableSpan) -> str:
    """The interaction id the receiver gives a span."""
    ctx = span.get_span_context()
    assert ctx is not None
    return f"otel:{ctx.trace_id:032x}:{ctx.span_id:016x}"
