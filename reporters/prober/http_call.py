"""Sending a task over plain HTTP with a route's request template, and reading the answer.

The request is the template with ``{{task}}`` filled in: percent-encoded in the path,
as a value in the query (aiohttp encodes it), inside the strings of a ``json`` body
(sent as ``application/json`` unless the headers say otherwise), and as it is in a
``body`` string, where ``{{task_json}}`` gives the text as a JSON string literal.
Nothing else is added: no header, no parameter marks a probe.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from typing import Any

import aiohttp
import yarl

from reporters._internal.capped import TooLarge, read_capped
from reporters.prober.config import JSON_PLACEHOLDER, PLACEHOLDER, Request, Response, Route
from reporters.prober.outcome import Asked
from reporters.protocols.answers import claimed, parse_strict, resolve_pointer

#: The largest answer read; a longer one is not well formed and has no reply.
MAX_ANSWER_BYTES = 4 * 1024 * 1024


def fill(value: Any, text: str) -> Any:
    """``value`` (a JSON-like template) with ``{{task}}`` replaced by ``text`` in every
    string."""
    if isinstance(value, str):
        return value.replace(PLACEHOLDER, text)
    if isinstance(value, dict):
        return {k: fill(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, text) for v in value]
    return value


def build(route: Route, text: str) -> tuple[str, yarl.URL, dict[str, str], bytes | None]:
    """The request for ``text``: method, URL, headers, body."""
    t: Request = route.request
    path = t.path.replace(PLACEHOLDER, urllib.parse.quote(text, safe=""))
    url = yarl.URL(route.upstream + path, encoded=True)
    if t.query:
        url = url.update_query({k: fill(v, text) for k, v in t.query.items()})
    headers = dict(t.headers)
    body: bytes | None = None
    if t.json is not None:
        body = json.dumps(fill(t.json, text), ensure_ascii=False).encode()
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/json"
    elif t.body is not None:
        body = t.body.replace(JSON_PLACEHOLDER, json.dumps(text)).replace(
            PLACEHOLDER, text).encode()
    return t.method, url, headers, body


def _reply_value(doc: Any, pointer: str) -> str | None:
    value = resolve_pointer(doc, pointer)
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return None


def read_answer(response: Response, status: int, body: bytes, latency_ms: int) -> Asked:
    """What an answer says, by the route's ``response`` settings. With ``reply`` (a
    JSON Pointer) the answer must be strict JSON to be well formed; without it, the
    reply is the whole body, well formed when it is UTF-8."""
    ok, doc = parse_strict(body) if response.reply is not None or response.claim else (
        False, None)
    reply: str | None
    if response.reply is not None:
        well_formed = ok
        reply = _reply_value(doc, response.reply) if ok else None
    else:
        try:
            reply, well_formed = body.decode("utf-8"), True
        except UnicodeDecodeError:
            reply, well_formed = None, False
    said = None
    if response.claim is not None and ok:
        said = claimed(doc, response.claim.pointer, response.claim.values)
    if response.decline_pattern is not None and reply is not None and \
            re.search(response.decline_pattern, reply):
        said = "DECLINED"
    return Asked(True, latency_ms, well_formed, said, reply=reply, success_form=status < 400,
                 note=f"HTTP {status}")


async def ask(session: aiohttp.ClientSession, route: Route, text: str) -> Asked:
    """Send ``text`` to the route's agent; what came back."""
    method, url, headers, body = build(route, text)
    started = time.monotonic()
    try:
        async with session.request(
                method, url, headers=headers, data=body, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=route.timeout_seconds)) as resp:
            try:  # the whole answer (``content.read(n)`` returns what has arrived so far)
                data: bytes | None = await read_capped(resp, MAX_ANSWER_BYTES)
            except TooLarge:
                data = None
            latency_ms = round((time.monotonic() - started) * 1000)
            if data is None:
                return Asked(True, latency_ms, False, note=f"HTTP {resp.status}, too large")
            return read_answer(route.response, resp.status, data, latency_ms)
    except TimeoutError:
        return Asked(False, note=f"no answer within {route.timeout_seconds:g} s")
    except aiohttp.ClientError as exc:
        return Asked(False, note=f"no answer: {type(exc).__name__}")
