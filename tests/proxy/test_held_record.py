"""A held fact's record (reporters.proxy.holding.HeldFact): what a restart reads back is
what was written, an open A2A task's marks included."""

from __future__ import annotations

import json

from reporters.proxy.holding import HeldFact, Measured, OpenMark, ThreadMark

MEASURED = Measured("ed25519:" + "A" * 43, None, "2026-12-07T06:19:36Z", True, 12, True,
                    {"p95-under-2s": True}, "FAILURE", None)


def test_a_record_reads_back_as_written() -> None:
    for fact in (
        HeldFact(MEASURED, "a2a-context:c", False, 1.5,
                 open=OpenMark("t-1", 3, 2.5, 1.0, unlisted_skill="juggle")),
        HeldFact(MEASURED, "task", True, 1.5, thread=ThreadMark(2, "px:000001", True, 3.0)),
        HeldFact(MEASURED, "task", False, 1.5, settled=True, derived="ABANDONED"),
    ):
        raw = fact.encode()
        assert HeldFact.decode(raw) == fact
        assert HeldFact.decode(raw).encode() == raw


def test_an_open_mark_written_before_its_later_fields_reads_back() -> None:
    doc = json.loads(HeldFact(MEASURED, "t", False, 1.5,
                              open=OpenMark("t-1", 3, 2.5, 1.0)).encode())
    del doc["open"]["started_at"], doc["open"]["unlisted_skill"]
    assert HeldFact.decode(json.dumps(doc).encode()).open == OpenMark("t-1", 3, 2.5, 2.5)
