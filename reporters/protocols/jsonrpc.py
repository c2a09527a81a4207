"""JSON-RPC 2.0 requests and answers, as a reporter reads them (pure).

A body is a JSON-RPC request only when it is strict JSON, one object (batches are not
read), ``"jsonrpc": "2.0"``, a string ``method``, an ``id`` that is a string, an integer,
``null`` or absent (a notification), and ``params`` an object, an array or absent.
Anything else is not read as JSON-RPC at all: the proxy forwards it untouched and
reports it as plain HTTP.

``"id": null`` is allowed by JSON-RPC 2.0 (§4, though discouraged) and real clients send
it (fasta2a's polls ``tasks/get`` so): it is a request with an id, answered with
``"id": null`` — not a notification, which has no ``id`` member at all (SPEC §4, r4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reporters.protocols.answers import Claimed, parse_strict

#: Standard codes that blame the request (JSON-RPC 2.0 §5.1): parse error, invalid
#: request, method not found, invalid params. The agent declined to act on it.
REQUEST_CODES = frozenset({-32700, -32600, -32601, -32602})


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    id: str | int | None  # None: "id": null, or a notification
    params: Any  # dict, list or None
    notification: bool = False  # no "id" member: no answer comes


@dataclass(frozen=True, slots=True)
class Answer:
    """One JSON-RPC response: exactly one of ``result`` and ``error_code`` is set
    (``result`` may be any JSON value, ``None`` included, when ``error_code`` is None)."""

    id: str | int | None
    result: Any
    error_code: int | None


def read_request(body: bytes) -> Request | None:
    """The request in ``body``, or None when it is not one (see the module docstring)."""
    ok, doc = parse_strict(body)
    if not ok or not isinstance(doc, dict) or doc.get("jsonrpc") != "2.0":
        return None
    method, params = doc.get("method"), doc.get("params")
    if not isinstance(method, str) or not (params is None or isinstance(params, dict | list)):
        return None
    if "id" in doc:
        rid = doc["id"]
        if isinstance(rid, bool) or not (rid is None or isinstance(rid, str | int)):
            return None
        return Request(method, rid, params)
    return Request(method, None, params, notification=True)


def read_answer(doc: Any) -> Answer | None:
    """The JSON-RPC response ``doc`` (already parsed), or None when it is not one."""
    if not isinstance(doc, dict) or doc.get("jsonrpc") != "2.0" or "id" not in doc:
        return None
    rid = doc["id"]
    if isinstance(rid, bool) or not (rid is None or isinstance(rid, str | int)):
        return None
    if ("result" in doc) == ("error" in doc):
        return None
    if "error" in doc:
        err = doc["error"]
        if not isinstance(err, dict) or isinstance(err.get("code"), bool) or \
                not isinstance(err.get("code"), int) or not isinstance(err.get("message"), str):
            return None
        return Answer(rid, None, err["code"])
    return Answer(rid, doc["result"], None)


def error_claim(code: int, declining: frozenset[int] = REQUEST_CODES) -> Claimed:
    """What an error answer says of the agent's work: a code in ``declining`` blames
    the request (the agent declined), any other is the agent failing."""
    return "DECLINED" if code in declining else "FAILURE"
