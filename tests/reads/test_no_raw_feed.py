"""The public sees aggregates, never the raw feed (SPEC §1.7): walk every GET route the
app registers, fill its path with real parties' keys, and ask without a signature."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from bureau.http.openapi import build_document
from bureau.http.shapes import PAYLOAD_TYPES
from reporters import wire
from tests.reads.support import Key, enroll, fact, get_raw, lib_headers
from tests.support import BureauUnderTest, kid

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _is_raw(obj: dict[str, Any]) -> bool:
    """A ledger entry (its "prev" link is a hex id) or a submitted envelope (its
    "payloadType" is one of the submission types). Schemas that merely *describe* such
    objects, as /openapi.json does, hold objects there instead of strings."""
    prev, ptype = obj.get("prev"), obj.get("payloadType")
    return (isinstance(prev, str) and bool(_HEX64.match(prev))) or ptype in PAYLOAD_TYPES


def _holds_raw(value: Any) -> bool:
    if isinstance(value, dict):
        return _is_raw(value) or any(_holds_raw(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_raw(v) for v in value)
    return False


def _text_holds_raw(text: str) -> bool:
    return bool(re.search(r'"prev"\s*:\s*"[0-9a-f]{64}"', text)) or any(
        t in text for t in PAYLOAD_TYPES)


def _fill(template: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), values["agent"]), template)


@pytest.fixture(scope="module")
async def parties(bureau: BureauUnderTest) -> dict[str, str]:
    rep: Key = await bureau.reporter()
    agent = await enroll(bureau)
    caller = await enroll(bureau)
    await fact(bureau, rep, agent, caller=caller)
    return {"agent": kid(agent), "reporter": kid(rep), "epoch": "0"}


def _get_routes(bureau: BureauUnderTest) -> list[tuple[str, str]]:
    return sorted({(r.method, r.resource.canonical) for r in bureau.app.router.routes()
                   if r.resource is not None and r.method in ("GET", "HEAD")})


async def test_no_unsigned_get_returns_an_entry(bureau: BureauUnderTest,
                                                parties: dict[str, str]) -> None:
    doc = build_document(bureau.app)
    checked = 0
    for method, template in _get_routes(bureau):
        path = _fill(template, parties)
        async with bureau.session.request(method, bureau.url + path) as resp:
            raw = await resp.read()
            status, content_type = resp.status, resp.content_type
        assert status < 500, (path, status, raw[:200])
        op = doc["paths"].get(template, {}).get("get", {})
        if op.get("security"):
            assert status == 401, (method, path, status)
        if method == "HEAD" or not raw:
            continue
        checked += 1
        if content_type == "application/json":
            assert not _holds_raw(json.loads(raw)), path
        else:
            assert not _text_holds_raw(raw.decode("utf-8", "replace")), path
    assert checked >= 6


async def test_signed_by_a_stranger_no_get_returns_an_entry(
        bureau: BureauUnderTest, parties: dict[str, str]) -> None:
    """A valid signature by an unrelated key opens nothing either."""
    stranger = wire.generate_key()
    for method, template in _get_routes(bureau):
        if method != "GET":
            continue
        path = _fill(template, parties)
        status, body = await get_raw(bureau, path, lib_headers(stranger, bureau.url + path))
        if isinstance(body, dict | list):
            assert not _holds_raw(body), (path, status)
        else:
            assert not _text_holds_raw(body), path


async def test_the_detector_sees_a_raw_file(bureau: BureauUnderTest,
                                            parties: dict[str, str]) -> None:
    """The check above would notice the raw feed: an agent's own file trips it."""
    status, body = await get_raw(bureau, f"/v1/agents/{parties['agent']}/entries",
                                 lib_headers(bureau.admin, bureau.url
                                             + f"/v1/agents/{parties['agent']}/entries"))
    assert status == 200 and _holds_raw(body)
    assert _text_holds_raw(json.dumps(body))
