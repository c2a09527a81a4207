"""The event-stream reader gives the same events however the bytes are cut into chunks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reporters.protocols.sse import Event, EventReader

STREAM = (b": a comment\r\nevent: status\r\ndata: {\"a\": 1}\r\n\r\n"
          b"data: line one\ndata: line two\nid: 7\n\n"
          b"data:no space\r\r"
          b"retry: 10\n\n")
EVENTS = [Event("status", '{"a": 1}'), Event("message", "line one\nline two"),
          Event("message", "no space")]


def read(chunks: list[bytes]) -> list[Event]:
    reader = EventReader()
    return [e for chunk in chunks for e in reader.feed(chunk)]


def test_a_stream_in_one_chunk() -> None:
    assert read([STREAM]) == EVENTS


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_a_stream_cut_anywhere(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert read(chunks) == EVENTS


def test_an_event_over_the_limit_is_refused() -> None:
    with pytest.raises(ValueError):
        EventReader(max_event=10).feed(b"data: " + b"x" * 20)
