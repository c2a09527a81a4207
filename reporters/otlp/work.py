"""Decoding an export off the event loop, with a bound on the work waiting (issue 35).

A request's body, once read, is inflated, counted (:mod:`reporters.otlp.bounds`),
parsed and mapped to facts by :func:`decode_and_map`, a pure function. Where it runs:

* **inline**, on the event loop, when the body is protobuf, small and not compressed (at
  most :data:`INLINE_BYTES`): its walk is bounded by its size (an honest 1-span export
  is about 1 KB and costs well under a millisecond), and a thread hop would cost more
  than the work. Never JSON: json_format builds a message at about 10 µs an item, 20
  times protobuf's cost, so 16 KiB of JSON values held the loop for 120 ms (6 ms as
  protobuf) — eight such requests a second stalled every other caller;
* else in **one worker thread** (:class:`Decoder`), in arrival order. At most
  ``decode_queue`` requests wait for it; one more is answered ``503`` with
  ``Retry-After`` at once (an OTLP exporter retries), counted as
  ``bureau_otlp_limits_total{limit="decode_queue"}``. The thread lets the loop have the
  GIL as it walks, so other callers are answered while a large export is decoded.

One thread, not one per core: decoding is Python and holds the GIL, so more threads would
only queue on it; the point is that the loop that answers everyone else never waits
behind a bomb.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from reporters.otlp.bounds import Limits, Malformed, OverLimit, check_json_size, count_json
from reporters.otlp.bounds import scan_protobuf as scan
from reporters.otlp.decode import (
    JSON,
    PROTOBUF,
    NotOtlp,
    decode_request,
    inflate,
    media_type,
    parse_json,
    request_from_json,
)
from reporters.otlp.mapping import Mapped, Subjects, map_request

T = TypeVar("T")

#: bodies up to this size, not compressed, are decoded on the loop (see the module doc):
#: at most 8,192 protobuf fields, a few milliseconds however they are arranged
INLINE_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class Request:
    """What :func:`decode_and_map` needs of one export request."""

    body: bytes
    encoding: str  # Content-Encoding
    content_type: str


@dataclass(frozen=True, slots=True)
class Rules:
    """What the receiver's configuration says about decoding and mapping."""

    max_body: int
    limits: Limits
    subjects: Subjects
    promises: Mapping[str, Mapping[str, int]]


class Refused(NotOtlp):
    """A bound was passed: ``limit`` is the metric's label."""

    def __init__(self, status: int, reason: str, limit: str) -> None:
        super().__init__(status, reason)
        self.limit = limit


def decode_and_map(request: Request, rules: Rules) -> Mapped:
    """Inflate, count, parse and map one export; :class:`NotOtlp` (or :class:`Refused`
    for a bound) when it cannot be taken."""
    raw = inflate(request.body, request.encoding, rules.max_body)
    kind = media_type(request.content_type)
    try:
        if kind == JSON:  # counted as parsed, before json_format builds a message
            check_json_size(raw, rules.limits)
            doc = parse_json(raw)
            del raw
            count_json(doc, rules.limits)
            return map_request(request_from_json(doc), rules.subjects, rules.promises)
        if kind == PROTOBUF:
            scan(raw, rules.limits)
    except OverLimit as exc:
        raise Refused(413, str(exc), exc.limit) from None
    except Malformed as exc:
        raise NotOtlp(400, "the body is not an OTLP ExportTraceServiceRequest in protobuf: "
                           f"{exc}") from None
    export = decode_request(raw, request.content_type)
    del raw
    return map_request(export, rules.subjects, rules.promises)


def inline(request: Request) -> bool:
    """Is this request small and cheap enough to decode on the loop (see the module doc)?"""
    return len(request.body) <= INLINE_BYTES and request.encoding.strip().lower() in (
        "", "identity") and media_type(request.content_type) == PROTOBUF


class Decoder:
    """One worker thread and a bound on the requests waiting for it."""

    def __init__(self, queue: int) -> None:
        self._queue = queue
        self._waiting = 0
        self._pool: ThreadPoolExecutor | None = None

    @property
    def waiting(self) -> int:
        """Requests handed to the thread and not yet done (the one it works on too)."""
        return self._waiting

    def start(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="otlp-decode")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` in the thread; :class:`Refused` (503) when ``decode_queue``
        requests already wait."""
        if self._waiting > self._queue or self._pool is None:
            raise Refused(503, f"{self._waiting} export requests are being decoded; "
                               "retry later", "decode_queue")
        with self._counted():
            return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1


__all__ = [
    "INLINE_BYTES",
    "Decoder",
    "Refused",
    "Request",
    "Rules",
    "decode_and_map",
    "inline",
]
