"""Path parameters are checked before any query (issue 12: ``GET /v1/agents/%00/report``
and ``/agents/%00`` answered 500 with a traceback in the log). Every route with a key,
an id or an epoch in its path names it with a pattern (bureau.http.params); anything
else matches no route and is ``404 NOT_FOUND`` in the one error shape."""

from __future__ import annotations

import json
import logging
import re

import pytest
import yarl
from aiohttp import web

from bureau.http.params import template
from bureau.http.routes import TABLES
from tests.reads.support import ERROR_FIELDS
from tests.support import BureauUnderTest

#: what aiohttp gives a ``{name}`` without a pattern: any text but a slash
_DEFAULT_PATTERN = "[^{}/]+"
HOSTILE = ["%00", "a%00b", "%ff", "%ed%a0%80", "%0a", "ed25519:" + "A" * 42 + "%00",
           "x" * 5000, "..", "%2e%2e"]


def _routes() -> list[tuple[str, str, re.Pattern[str]]]:
    app = web.Application()
    for table in TABLES:
        app.add_routes(table)
    out = []
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        if "pattern" in info and route.method != "HEAD":
            out.append((route.method, info["formatter"], info["pattern"]))
    return out


def test_every_path_parameter_has_a_pattern() -> None:
    routes = _routes()
    assert len(routes) >= 5
    for method, formatter, pattern in routes:
        assert _DEFAULT_PATTERN not in pattern.pattern, (method, formatter)


async def _get(bureau: BureauUnderTest, path_qs: str) -> tuple[int, bytes]:
    async with bureau.session.get(yarl.URL(bureau.url + path_qs, encoded=True)) as resp:
        return resp.status, await resp.read()


def _assert_not_found(status: int, raw: bytes, where: str) -> None:
    body = json.loads(raw)
    assert status == 404, (where, status, body)
    assert set(body) == ERROR_FIELDS and body["code"] == "NOT_FOUND", (where, body)


@pytest.mark.parametrize("path_qs", ["/v1/agents/%00/report", "/agents/%00",
                                     "/v1/agents/a%00b/report?epoch=1"])
async def test_the_issues_paths_are_404_without_a_traceback(
        bureau: BureauUnderTest, path_qs: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        status, raw = await _get(bureau, path_qs)
    _assert_not_found(status, raw, path_qs)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_every_route_with_a_path_parameter_refuses_hostile_values(
        bureau: BureauUnderTest, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        for method, formatter, _ in _routes():
            assert method == "GET", "a POST route with a parameter needs its own case here"
            names = re.findall(r"\{(\w+)\}", formatter)
            for value in HOSTILE:
                path = formatter
                for name in names:
                    path = path.replace("{" + name + "}", value)
                for query in ("", "?epoch=1"):
                    status, raw = await _get(bureau, path + query)
                    _assert_not_found(status, raw, template(formatter) + " " + value)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
