"""An OTLP/HTTP ``POST /v1/traces`` body -> an ``ExportTraceServiceRequest`` (and the
answer back), with ``opentelemetry-proto``'s own message types.

Protobuf (``application/x-protobuf``) is parsed by protobuf itself; JSON
(``application/json``) by protobuf's ``json_format`` after the one change the OTLP
specification makes to the proto3 JSON mapping: trace and span ids are hex, not base64
("OTLP/HTTP JSON: traceId and spanId are hex-encoded"). Ids that are already base64 (a
body written with plain ``json_format``) are recognised by their length and left alone,
so both spellings decode to the same bytes. Unknown fields are ignored, as the
specification asks of receivers. ``Content-Encoding: gzip`` is inflated first, bounded.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import zlib
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

#: hex length of each id field, by its JSON name (OTLP/JSON: lowerCamelCase; the
#: proto field names are accepted too)
_ID_HEX_LENGTHS = {"traceId": 32, "trace_id": 32, "spanId": 16, "span_id": 16,
                   "parentSpanId": 16, "parent_span_id": 16}


class NotOtlp(ValueError):
    """The body is not an OTLP trace export; ``status`` is the HTTP answer (400, 413
    or 415) and the message says why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def media_type(content_type: str) -> str:
    """``application/json; charset=utf-8`` -> ``application/json``."""
    return content_type.partition(";")[0].strip().lower()


def inflate(body: bytes, encoding: str, max_bytes: int) -> bytes:
    """The body with its ``Content-Encoding`` (``gzip``, ``deflate`` or none) undone;
    at most ``max_bytes`` once inflated (a small bomb must not become a large one)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise NotOtlp(415, f"Content-Encoding {encoding!r} is not supported: gzip, "
                           "deflate or none")
    inflater = zlib.decompressobj(wbits=47 if encoding == "gzip" else 15)
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise NotOtlp(400, f"the body is not valid {encoding}: {exc}") from None
    if len(out) > max_bytes:
        raise NotOtlp(413, f"the inflated body is over {max_bytes} bytes")
    if not inflater.eof:
        raise NotOtlp(400, f"the {encoding} body is truncated")
    return out


def _hex_ids_to_base64(value: Any) -> None:
    """In place: every OTLP/JSON hex id under ``value`` rewritten as proto3 JSON's
    base64, so ``json_format`` reads the bytes the sender meant."""
    if isinstance(value, dict):
        for name, item in value.items():
            want = _ID_HEX_LENGTHS.get(name)
            if want is not None and isinstance(item, str) and len(item) == want:
                # not hex: left as it is, and json_format says what is wrong with it
                with contextlib.suppress(ValueError):
                    value[name] = base64.b64encode(bytes.fromhex(item)).decode("ascii")
            else:
                _hex_ids_to_base64(item)
    elif isinstance(value, list):
        for item in value:
            _hex_ids_to_base64(item)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_request(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    """The export request in ``body`` (already inflated), or :class:`NotOtlp`."""
    kind = media_type(content_type)
    if kind == PROTOBUF:
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError:
            raise NotOtlp(400, "the body is not an OTLP ExportTraceServiceRequest in "
                               "protobuf: the wire format is corrupt") from None
        return request
    if kind == JSON:
        return request_from_json(parse_json(body))
    raise NotOtlp(415, f"Content-Type {content_type or '(none)'!r}: OTLP/HTTP is "
                       f"{PROTOBUF} or {JSON}")


def parse_json(body: bytes) -> dict[str, Any]:
    """An OTLP/JSON body parsed, not yet built into a message (so that what it holds can
    be counted first: reporters.otlp.bounds), or :class:`NotOtlp`."""
    try:
        doc = json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise NotOtlp(400, f"the body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise NotOtlp(400, "the body is not an OTLP ExportTraceServiceRequest in JSON: "
                           "an object is needed at the top")
    return doc


def request_from_json(doc: dict[str, Any]) -> ExportTraceServiceRequest:
    """The export request a parsed OTLP/JSON body holds, or :class:`NotOtlp`."""
    request = ExportTraceServiceRequest()
    _hex_ids_to_base64(doc)
    try:
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    except (json_format.ParseError, binascii.Error, RecursionError) as exc:
        raise NotOtlp(400, "the body is not an OTLP ExportTraceServiceRequest in "
                           f"JSON: {exc}") from None
    return request


def encode_response(rejected: int, message: str, content_type: str) -> tuple[bytes, str]:
    """An ``ExportTraceServiceResponse`` in the request's encoding: ``partial_success``
    set when spans were rejected (OTLP: left unset when everything was accepted)."""
    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if media_type(content_type) == JSON:
        return json_format.MessageToJson(response, indent=None).encode(), JSON
    return response.SerializeToString(), PROTOBUF


def error_status(reason: str) -> tuple[bytes, str]:
    """A ``google.rpc.Status``-shaped error body (OTLP/HTTP's answer to a bad request),
    as JSON: code 3 (INVALID_ARGUMENT) and the reason. JSON whatever the request's
    encoding: the receiver has no ``google.rpc.Status`` type to write protobuf with,
    and every OTLP client logs the body as text."""
    return json.dumps({"code": 3, "message": reason}).encode(), JSON
