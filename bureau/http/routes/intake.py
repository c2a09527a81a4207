"""``POST /v1/evidence`` and ``POST /v1/evidence/batch`` (SPEC §5)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import http_exceptions, web

from bureau.errors import Code
from bureau.http.errors import RequestError, error_response
from bureau.http.keys import COMMITTER, INTAKE
from bureau.intake.envelope import MAX_ENVELOPE_BYTES
from bureau.intake.judging import Result
from bureau.intake.pipeline import MAX_BATCH_BYTES, MAX_BATCH_LINES

routes = web.RouteTableDef()

NDJSON = "application/x-ndjson"

#: The whole body must arrive within this many seconds (aiohttp has no body timeout).
#: A client trickling a byte a second (slow loris) holds a connection and a handler
#: only this long, and is answered ``408 MALFORMED_ENVELOPE``. 8 MiB in 60 s needs
#: about 1.1 Mbit/s; a slower gateway sends smaller batches.
BODY_TIMEOUT_SECONDS = 60.0


def result_body(result: Result) -> dict[str, Any]:
    """What intake answers for one envelope, in the body (SPEC §5)."""
    if result.error is not None:
        return result.error.as_body()
    return {"status": result.status, "id": result.id, "seq": result.seq}


def _require_type(request: web.Request, expected: str) -> None:
    if request.content_type != expected:
        raise RequestError(Code.UNSUPPORTED_MEDIA_TYPE, 415,
                           f"Content-Type must be {expected}, not {request.content_type!r}")


async def _read_capped(request: web.Request, limit: int) -> bytes:
    """Read the body, refusing it as soon as it passes ``limit`` (streamed bodies bypass
    aiohttp's client_max_size, so the cap is enforced here too)."""
    if request.content_length is not None and request.content_length > limit:
        raise RequestError(Code.TOO_LARGE, 413, f"the body is limited to {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(BODY_TIMEOUT_SECONDS):
            async for chunk in request.content.iter_any():
                size += len(chunk)
                if size > limit:
                    raise RequestError(Code.TOO_LARGE, 413,
                                       f"the body is limited to {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise RequestError(Code.MALFORMED_ENVELOPE, 408, "the body did not arrive within "
                           f"{BODY_TIMEOUT_SECONDS:g} s") from None
    except (ConnectionError, http_exceptions.HttpProcessingError) as exc:
        # Cut short (fewer bytes than Content-Length, a broken chunk): nothing is
        # judged. Usually no one is left to hear the answer, but it is not a 500.
        raise RequestError(Code.MALFORMED_ENVELOPE, 400,
                           f"the body was cut short: {exc}") from None
    return b"".join(chunks)


@routes.post("/v1/evidence")
async def post_evidence(request: web.Request) -> web.Response:
    """One envelope: 201 accepted, 200 duplicate, 4xx rejected."""
    _require_type(request, "application/json")
    raw = await _read_capped(request, MAX_ENVELOPE_BYTES)
    with request.app[COMMITTER].admitting(1):
        [result] = await request.app[INTAKE].submit([raw])
    if result.error is not None:
        return error_response(result.error)
    status = 201 if result.status == "accepted" else 200
    return web.json_response(result_body(result), status=status)


def split_lines(body: bytes) -> list[bytes]:
    """NDJSON lines; a final newline does not make an empty last line."""
    lines = body.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


@routes.post("/v1/evidence/batch")
async def post_batch(request: web.Request) -> web.Response:
    """Up to 1,000 envelopes, one a line; one result a line, in input order."""
    _require_type(request, NDJSON)
    body = await _read_capped(request, MAX_BATCH_BYTES)
    lines = split_lines(body)
    if len(lines) > MAX_BATCH_LINES:
        raise RequestError(Code.TOO_LARGE, 413, f"a batch is at most {MAX_BATCH_LINES} lines")
    with request.app[COMMITTER].admitting(len(lines)):
        results = await request.app[INTAKE].submit(lines)
    out = "".join(
        json.dumps({**result_body(r), "index": i}, separators=(",", ":")) + "\n"
        for i, r in enumerate(results))
    return web.Response(body=out.encode(), status=200, content_type=NDJSON)
