"""Schemathesis against a running ``bureau serve``, driven by the ``/openapi.json`` it
serves: for every described operation, generated requests that fit the description
(positive) and that break it (negative). No answer is a 5xx, and every error answer is
the one error shape with a §6 code (SPEC §5).

The server runs as a subprocess: schemathesis calls it synchronously, which would stall
an in-process server sharing this test's event loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from bureau.errors import Code
from reporters import wire
from tests.processes import ServeProcess, bureau_env

pytestmark = pytest.mark.slow

EXAMPLES_PER_OPERATION = 25
ERROR_FIELDS = {"status", "code", "path", "detail"}
CODES = {c.value for c in Code}


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: Any, value: Any) -> bytes:
    """The batch body is described as a string (one envelope a line): send it as it is;
    negative cases may generate any other JSON value, sent as its JSON text."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return json.dumps(value).encode()


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[str]:
    admin = wire.generate_key()
    server = ServeProcess(bureau_env(database_url, tmp_path, wire.signing_key_id(admin)),
                          tmp_path / "serve.log")
    asyncio.run(server.start())
    try:
        yield server.url
    finally:
        server.stop()


def _header(response: Any, name: str) -> str:
    """Schemathesis keeps headers lowercased, each as a list of values."""
    values = response.headers.get(name.lower(), [])
    return str(values[0]) if values else ""


def _sent(response: Any) -> str:
    """What was sent, for a failure's message: the request line, its headers and the
    start of its body (a non-JSON answer is aiohttp's own, to bytes it could not parse)."""
    request = response.request
    body = request.body if isinstance(request.body, bytes | str | None) else type(request.body)
    return f"{request.method} {request.url} {dict(request.headers)} body={body!r:.300}"


def one_error_shape(response: Any) -> None:
    if response.status_code < 400:
        return
    assert _header(response, "Content-Type").startswith("application/json"), (
        response.status_code, response.text[:200], _sent(response))
    body = json.loads(response.content)
    assert isinstance(body, dict) and set(body) == ERROR_FIELDS, body
    assert body["status"] == "rejected" and body["code"] in CODES, body
    assert isinstance(body["path"], str) and isinstance(body["detail"], str), body
    if response.status_code == 503:
        assert _header(response, "Retry-After").isdigit()


def test_no_operation_answers_5xx_or_another_error_shape(served: str) -> None:
    doc = requests.get(served + "/openapi.json", timeout=10).json()
    schema = schemathesis.openapi.from_dict(doc)
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 8, [op.label for op in operations]
    checked: dict[str, set[int]] = {}
    with requests.Session() as session:

        def runner(op: Any, mode: GenerationMode) -> Callable[[], None]:
            @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True,
                      database=None, suppress_health_check=list(HealthCheck))
            @given(case=op.as_strategy(generation_mode=mode))
            def run(case: Any) -> None:
                response = case.call(base_url=served, session=session, timeout=30)
                case.validate_response(response, checks=[not_a_server_error])
                one_error_shape(response)
                checked.setdefault(op.label, set()).add(response.status_code)

            return run

        for op in operations:
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                try:
                    runner(op, mode)()
                except Unsatisfiable:
                    # nothing to break: an operation without parameters or body
                    assert mode is GenerationMode.NEGATIVE, op.label
    assert set(checked) == {op.label for op in operations}
    statuses = set().union(*checked.values())
    assert any(s >= 400 for s in statuses), "the negative cases were refused"
