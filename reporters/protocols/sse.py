"""Server-sent events (the WHATWG "event stream" format), read as bytes arrive (pure).

:class:`EventReader` is fed the bytes of a stream in whatever chunks they came and
returns the events completed so far; the caller forwards the bytes untouched, so reading
never delays them. Only ``event`` and ``data`` matter here (``id``/``retry``/comments
are skipped); an event's data lines are joined with ``\\n``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    event: str  # "message" unless the stream named another
    data: str


class EventReader:
    def __init__(self, max_event: int = 16 * 1024 * 1024) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""
        self._max = max_event

    def feed(self, chunk: bytes) -> list[Event]:
        """The events that ``chunk`` completes. Raises ``ValueError`` for an event
        larger than ``max_event`` bytes (the stream is still forwarded; it is just not
        read any further)."""
        self._buffer += chunk
        out: list[Event] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                if len(self._buffer) > self._max:
                    raise ValueError("an event larger than the limit")
                return out
            end, width = cut
            line = self._buffer[:end].decode("utf-8", "replace")
            self._buffer = self._buffer[end + width:]
            if line == "":
                if self._data:
                    out.append(Event(self._event or "message", "\n".join(self._data)))
                self._data, self._event = [], ""
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first line ends (CRLF, LF or CR) and how wide its end is."""
    lf, cr = buffer.find(b"\n"), buffer.find(b"\r")
    if cr == -1 and lf == -1:
        return None
    if cr == -1 or (lf != -1 and lf < cr):
        return lf, 1
    if cr + 1 == len(buffer):
        return None  # a CR at the end may be the start of a CRLF
    return cr, 2 if buffer[cr + 1:cr + 2] == b"\n" else 1
