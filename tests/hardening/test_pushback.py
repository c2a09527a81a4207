"""Every ``UNAVAILABLE`` names its reason (queue_full, intake_full, database_unreachable,
shutting_down, internal_error): in ``bureau_unavailable_total{reason}`` and in the log,
while the body stays the one error shape."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from bureau.errors import Code, Pushback
from bureau.http import errors as http_errors
from bureau.http.keys import COMMITTER
from tests.support import BureauUnderTest, fact_payload, registry_sample

ROOT = Path(__file__).resolve().parent.parent.parent


def _unavailable(reason: str) -> float:
    return registry_sample("bureau_unavailable_total", reason=reason)


async def test_a_full_intake_is_named_in_the_metric_and_the_log(
        bureau: BureauUnderTest, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_errors, "_PUSHBACK", http_errors.PushbackLog())
    reporter = await bureau.reporter()
    ledger = bureau.app[COMMITTER]
    before = _unavailable("intake_full")
    with caplog.at_level(logging.WARNING), ledger.admitting(bureau.config.max_pending):
        status, body = await bureau.submit(reporter, "fact",
                                           fact_payload("i-1", "ed25519:" + "A" * 43))
    assert status == 503 and body["code"] == "UNAVAILABLE"
    assert set(body) == {"status", "code", "path", "detail"}
    assert _unavailable("intake_full") == before + 1
    assert "answered UNAVAILABLE (intake_full)" in caplog.text


def test_the_log_says_how_many_answers_a_line_stands_for(
        caplog: pytest.LogCaptureFixture) -> None:
    pushback = http_errors.PushbackLog(interval=3600)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            pushback.note(Pushback.QUEUE_FULL, "intake queue is full; retry later")
        pushback.note(Pushback.SHUTTING_DOWN, "the bureau is shutting down")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["answered UNAVAILABLE (queue_full): intake queue is full; retry later",
                     "answered UNAVAILABLE (shutting_down): the bureau is shutting down"]
    pushback.interval = 0
    with caplog.at_level(logging.WARNING):
        pushback.note(Pushback.QUEUE_FULL, "again")
    assert caplog.records[-1].getMessage().endswith("(and 2 more since the last such line)")


def test_every_unavailable_in_the_source_names_its_reason() -> None:
    """``BureauError(Code.UNAVAILABLE, ...)`` always passes ``pushback=``."""
    found = 0
    for path in sorted((ROOT / "bureau").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "BureauError" and node.args
                    and ast.unparse(node.args[0]) == f"Code.{Code.UNAVAILABLE.name}"):
                found += 1
                assert any(k.arg == "pushback" for k in node.keywords), (
                    f"{path.relative_to(ROOT)}:{node.lineno} answers UNAVAILABLE unnamed")
    assert found >= len(Pushback)
