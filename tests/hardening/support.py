"""Helpers for the hardening tests: raw sockets, the server-error counter, ledger sizes."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from typing import Any

import asyncpg

from bureau import metrics
from tests.support import BureauUnderTest

ERROR_FIELDS = {"status", "code", "path", "detail"}


def server_errors() -> float:
    """How many requests this process has answered with a 5xx other than 503, so far
    (``bureau_request_seconds`` counts every request by status)."""
    total = 0.0
    for family in metrics.REQUEST_SECONDS.collect():
        for sample in family.samples:
            status = sample.labels.get("status", "")
            if sample.name.endswith("_count") and status.startswith("5") and status != "503":
                total += sample.value
    return total


def assert_error_shape(status: int, body: Any, code: str,
                       statuses: tuple[int, ...]) -> None:
    assert status in statuses, (status, body)
    assert isinstance(body, dict) and set(body) == ERROR_FIELDS, body
    assert body["status"] == "rejected" and body["code"] == code, body
    assert isinstance(body["detail"], str) and body["detail"]


def host_port(b: BureauUnderTest) -> tuple[str, int]:
    host, port = b.url.removeprefix("http://").split(":")
    return host, int(port)


async def raw_exchange(b: BureauUnderTest, head: bytes, body_parts: Sequence[bytes] = (),
                       *, pause: float = 0.0, half_close: bool = False,
                       timeout: float = 15.0) -> bytes:
    """Send ``head`` and then each of ``body_parts`` (``pause`` s apart) on a fresh
    connection; return everything the server sends back before it closes (or ``b""``).

    The answer is read while the body is still going out, and sending stops as soon as
    an answer starts: a server that refuses early and closes would otherwise reset the
    connection and take its answer with it."""
    reader, writer = await asyncio.open_connection(*host_port(b))
    received = bytearray()

    async def read_all() -> None:
        try:
            while chunk := await reader.read(65536):
                received.extend(chunk)
                if _complete(bytes(received)):
                    return  # the server may keep the connection open: do not wait
        except ConnectionError:
            pass

    reading = asyncio.create_task(read_all())
    try:
        writer.write(head)
        await writer.drain()
        for part in body_parts:
            if pause:
                await asyncio.sleep(pause)
            if received or writer.is_closing():
                break
            try:
                writer.write(part)
                await writer.drain()
            except ConnectionError:
                break
            await asyncio.sleep(0)
        if half_close and not writer.is_closing():
            writer.write_eof()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reading), timeout)
        return bytes(received)
    finally:
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        writer.close()


def _complete(raw: bytes) -> bool:
    """Does ``raw`` hold a whole response with a Content-Length body?"""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def parse_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in
               (line.split(":", 1) for line in lines[1:] if ":" in line)}
    return status, headers, body


def json_body(raw_body: bytes, headers: dict[str, str]) -> Any:
    if headers.get("transfer-encoding") == "chunked":
        out, rest = b"", raw_body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            out, rest = out + rest[:size], rest[size + 2:]
        raw_body = out
    elif "content-length" in headers:
        raw_body = raw_body[: int(headers["content-length"])]
    return json.loads(raw_body)


async def entry_count(database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        n: int = await conn.fetchval("SELECT count(*) FROM entries")
    finally:
        await conn.close()
    return n
