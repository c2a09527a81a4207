"""What an OTLP export may decode to, checked before anything is built (issue 35).

The inflate is capped (``max_body``); what the bytes *decode to* is capped here: a 7.8 KB
gzip body of 4 million empty spans (two bytes each on the wire) made protobuf build
750 MB of messages and the mapping walk them for 15 s on the event loop. So before
protobuf parses a byte, :func:`scan_protobuf` walks the wire format itself — tags and
lengths only, never building a message — and counts what each request holds:

===================  =========================================================  =========
bound                what it counts                                             default
===================  =========================================================  =========
``max_spans``        spans                                                      50,000
``max_blocks``       ``ResourceSpans`` and ``ScopeSpans`` blocks                10,000
``max_attributes``   key-value pairs anywhere (resource, scope, span, event,    500,000
                     link, and nested inside values), and the values of arrays
``max_events``       span events                                                100,000
``max_links``        span links                                                 100,000
``max_depth``        messages nested in messages (a request's spans are at      32
                     depth 4; each array or key-value list in a value adds 2)
``max_fields``       protobuf fields walked (scalars, unknown fields, all)      2,000,000
``max_json_tokens``  a JSON body's strings, objects and arrays                  250,000
===================  =========================================================  =========

The walk stops at the first bound passed, so refusing a bomb costs at most the bound's
worth of walking (a 16 MiB body of empty spans: 50,001 steps, about 40 ms), and an
honest export walks each field once (about 1.4 million fields a second; an SDK's
512-span batch is a few milliseconds). ``max_fields`` bounds the walk itself: a body of
16 MiB of two-byte scalar fields, which no other bound counts, stops at 2,000,000.

JSON (``application/json``) is bounded before it is parsed by counting its strings,
objects and arrays in the raw bytes (``"``, ``{`` and ``[``, inside strings too: an
overcount, never an undercount) against ``max_json_tokens``, a bound of its own because
a JSON item costs far more than a protobuf field: ``json.loads`` and protobuf's
``json_format`` take about 10 µs an item, so ``max_fields``' 2 million would let one
6 KB gzip body hold the decoding thread for 20 s (an SDK's 512-span batch with 30
attributes a span is about 100,000); the parsed document is then
counted like a protobuf one (:func:`count_json`: the same kinds under their JSON names)
*before* protobuf's ``json_format`` builds a message from it. Counting the message it
built instead came too late: 2 million empty spans in 5.7 MiB of JSON (6 KB of gzip)
made ``json_format`` build 475 MB of spans over 39 s before ``max_spans`` refused them.

Pure: bytes in, counts out or :class:`OverLimit`; no I/O.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any

#: The message kinds of an export that hold other messages, by the order they nest in.
(_REQUEST, _RESOURCE_SPANS, _RESOURCE, _SCOPE_SPANS, _SCOPE, _SPAN, _EVENT, _LINK, _KV,
 _ANY, _ARRAY, _KVLIST, _ARRAY_ITEM) = range(13)
#: (message kind, field number) -> the kind of message that field holds; every other
#: field is walked over, not into (opentelemetry-proto's trace/v1 and common/v1)
_NESTED = {
    (_REQUEST, 1): _RESOURCE_SPANS,
    (_RESOURCE_SPANS, 1): _RESOURCE, (_RESOURCE_SPANS, 2): _SCOPE_SPANS,
    (_RESOURCE, 1): _KV,
    (_SCOPE_SPANS, 1): _SCOPE, (_SCOPE_SPANS, 2): _SPAN,
    (_SCOPE, 3): _KV,
    (_SPAN, 9): _KV, (_SPAN, 11): _EVENT, (_SPAN, 13): _LINK,
    (_EVENT, 3): _KV, (_LINK, 4): _KV,
    (_KV, 2): _ANY, (_ANY, 5): _ARRAY, (_ANY, 6): _KVLIST,
    # an array's values are AnyValues counted like attributes: 2 million empty values
    # in 3.9 KB of gzip cost 92 MB when only max_fields held them
    (_ARRAY, 1): _ARRAY_ITEM, (_ARRAY_ITEM, 5): _ARRAY, (_ARRAY_ITEM, 6): _KVLIST,
    (_KVLIST, 1): _KV,
}
#: which bound each counted kind is held to
_COUNTED = {_SPAN: "max_spans", _RESOURCE_SPANS: "max_blocks", _SCOPE_SPANS: "max_blocks",
            _KV: "max_attributes", _ARRAY_ITEM: "max_attributes", _EVENT: "max_events",
            _LINK: "max_links"}
#: the walk lets the event loop's thread have the GIL this often (fields): a walk in a
#: worker thread then delays the loop by well under a millisecond, not by the 5 ms
#: switch interval each time
_YIELD_EVERY = 1_000


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one export request (see the module's table)."""

    max_spans: int = 50_000
    max_blocks: int = 10_000
    max_attributes: int = 500_000
    max_events: int = 100_000
    max_links: int = 100_000
    max_depth: int = 32
    max_fields: int = 2_000_000
    max_json_tokens: int = 250_000

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 1:
                raise ValueError(f"{f.name}: at least 1")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


class OverLimit(ValueError):
    """The request holds more than a bound allows: ``limit`` names the bound (the metric's
    label, without ``max_``), the message says how much was found."""

    def __init__(self, limit: str, bound: int, what: str) -> None:
        super().__init__(f"the request holds more than {bound} {what} ({limit}: "
                         "split the export into smaller requests)")
        self.limit = limit.removeprefix("max_")


class Malformed(ValueError):
    """The bytes are not protobuf's wire format (protobuf itself would refuse them)."""


_WHAT = {"max_spans": "spans", "max_blocks": "resource or scope blocks",
         "max_attributes": "attributes", "max_events": "span events",
         "max_links": "span links", "max_depth": "levels of nesting",
         "max_fields": "protobuf fields",
         "max_json_tokens": "JSON strings, objects and arrays"}


def _over(limits: Limits, name: str) -> OverLimit:
    return OverLimit(name, getattr(limits, name), _WHAT[name])


def scan_protobuf(buf: bytes, limits: Limits) -> dict[str, int]:
    """Walk an ``ExportTraceServiceRequest``'s wire format; the count of each bound's
    items, or :class:`OverLimit` at the first bound passed, or :class:`Malformed`."""
    try:
        return _walk(buf, limits)
    except IndexError:
        raise Malformed("the wire format is cut short") from None


class _Tally:
    """The counted messages of one request against their bounds (both walks), by bound:
    kinds that share a bound (the two block kinds; key-value pairs and array values)
    share its count."""

    __slots__ = ("_limits", "counts")

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self.counts = dict.fromkeys(_COUNTED.values(), 0)

    def add(self, kind: int) -> None:
        """One more message of a counted ``kind``; :class:`OverLimit` past its bound."""
        bound = _COUNTED[kind]
        self.counts[bound] += 1
        if self.counts[bound] > getattr(self._limits, bound):
            raise _over(self._limits, bound)

    def result(self) -> dict[str, int]:
        return dict(self.counts)


def _walk(buf: bytes, limits: Limits) -> dict[str, int]:
    # One flat loop with an explicit stack (no recursion: depth is a bound, not a crash);
    # varints decoded inline, the one-byte case first: this loop is the whole cost.
    tally = _Tally(limits)
    stack: list[tuple[int, int]] = []
    pos, end, kind, walked, size = 0, len(buf), _REQUEST, 0, len(buf)
    max_fields, max_depth, nested = limits.max_fields, limits.max_depth, _NESTED
    while True:
        if pos >= end:
            if pos > end:
                raise Malformed("a field runs past the end of its message")
            if not stack:
                break
            end, kind = stack.pop()
            continue
        tag = buf[pos]
        pos += 1
        if tag >= 0x80:
            tag, pos = _varint_rest(buf, pos, tag)
        walked += 1
        if walked > max_fields:
            raise _over(limits, "max_fields")
        if walked % _YIELD_EVERY == 0:
            time.sleep(0)  # let the event loop's thread run (see _YIELD_EVERY)
        wire_type = tag & 7
        if wire_type == 2:
            length = buf[pos]
            pos += 1
            if length >= 0x80:
                length, pos = _varint_rest(buf, pos, length)
            child = nested.get((kind, tag >> 3))
            if child is None:
                pos += length
                continue
            if child in _COUNTED:
                tally.add(child)
            if len(stack) >= max_depth:
                raise _over(limits, "max_depth")
            stack.append((end, kind))
            end, kind = pos + length, child
            if end > size:
                raise Malformed("a message runs past the end of the body")
        elif wire_type == 0:
            while buf[pos] >= 0x80:
                pos += 1
            pos += 1
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        else:
            raise Malformed(f"wire type {wire_type} is not protobuf's")
    return {**tally.result(), "max_fields": walked}


def _varint_rest(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """A varint whose first byte (``first``, continuation bit set) was read."""
    value, shift = first & 0x7F, 7
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise Malformed("a varint longer than ten bytes")


def check_json_size(body: bytes, limits: Limits) -> None:
    """Before ``json.loads``: at most ``max_json_tokens`` strings, objects and arrays
    (counted by their opening bytes, in C: a bound on the Python objects the parse can
    make, and on the items ``json_format`` will build)."""
    found = body.count(b'"') // 2 + body.count(b"{") + body.count(b"[")
    if found > limits.max_json_tokens:
        raise _over(limits, "max_json_tokens")


#: the names json_format reads each nested field of _NESTED by (lowerCamelCase, and the
#: proto's own where it differs)
_JSON_NAMES = {
    (_REQUEST, 1): ("resourceSpans", "resource_spans"),
    (_RESOURCE_SPANS, 1): ("resource",), (_RESOURCE_SPANS, 2): ("scopeSpans", "scope_spans"),
    (_RESOURCE, 1): ("attributes",),
    (_SCOPE_SPANS, 1): ("scope",), (_SCOPE_SPANS, 2): ("spans",),
    (_SCOPE, 3): ("attributes",),
    (_SPAN, 9): ("attributes",), (_SPAN, 11): ("events",), (_SPAN, 13): ("links",),
    (_EVENT, 3): ("attributes",), (_LINK, 4): ("attributes",),
    (_KV, 2): ("value",),
    (_ANY, 5): ("arrayValue", "array_value"), (_ANY, 6): ("kvlistValue", "kvlist_value"),
    (_ARRAY, 1): ("values",), (_KVLIST, 1): ("values",),
    (_ARRAY_ITEM, 5): ("arrayValue", "array_value"),
    (_ARRAY_ITEM, 6): ("kvlistValue", "kvlist_value"),
}
#: (message kind, JSON field name) -> the kind of message that field holds
_JSON_NESTED = {(parent, name): child for (parent, number), child in _NESTED.items()
                for name in _JSON_NAMES[(parent, number)]}


def count_json(doc: Any, limits: Limits) -> dict[str, int]:
    """The counts of :func:`scan_protobuf` (but ``max_fields``: JSON spends
    ``max_json_tokens`` in :func:`check_json_size` instead) for a parsed OTLP/JSON
    request, or :class:`OverLimit`: walked before ``json_format`` builds anything. A
    message field holding a list counts each object in it (json_format refuses any
    other shape later)."""
    tally, walked = _Tally(limits), 0
    stack: list[tuple[Any, int, int]] = [(doc, _REQUEST, 0)]  # (object, kind, depth)
    while stack:
        obj, kind, depth = stack.pop()
        if not isinstance(obj, dict):
            continue
        for name, value in obj.items():
            child = _JSON_NESTED.get((kind, name))
            if child is None:
                continue
            items = value if isinstance(value, list) else [value]
            if depth >= limits.max_depth and items:
                raise _over(limits, "max_depth")
            for item in items:
                walked += 1
                if walked % _YIELD_EVERY == 0:
                    time.sleep(0)  # let the event loop's thread run (see _YIELD_EVERY)
                if child in _COUNTED:
                    tally.add(child)
                stack.append((item, child, depth + 1))
    return tally.result()


__all__ = ["Limits", "Malformed", "OverLimit", "check_json_size", "count_json",
           "scan_protobuf"]
