"""Server-sent events (the WHATWG "event stream" format), read as bytes arrive (pure).

:class:`EventReader` is fed the bytes of a stream in whatever chunks they came and
returns the events completed so far; the caller forwards the bytes untouched, so reading
never delays them. Only ``event`` and ``data`` matter here (``id``/``retry``/comments
are skipped); an event's data lines are joined with ``\\n``.

**The event is capped, not only the line** (issue 35): what the reader holds — the
unfinished line plus the ``data`` lines of the unfinished event — is at most
``max_event`` bytes at every moment. A stream whose event never ends (``data:`` lines
without the blank line that closes it) is refused once they pass the cap, and the reader
holds nothing after that: a 250 MiB stream of one endless event cost the proxy 317 MB
before, and costs ``max_event`` now.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    event: str  # "message" unless the stream named another
    data: str


class EventTooLarge(ValueError):
    """An event (its unfinished line and data lines together) passed ``max_event``."""


class EventReader:
    def __init__(self, max_event: int = 16 * 1024 * 1024) -> None:
        self._buffer = bytearray()
        self._start = 0  # where the unread part of ``_buffer`` begins
        self._data: list[str] = []
        self._held = 0  # bytes of the current event's data lines
        self._event = ""
        self._max = max_event

    def feed(self, chunk: bytes) -> list[Event]:
        """The events that ``chunk`` completes. Raises :class:`EventTooLarge` (a
        ``ValueError``) once the event being read holds more than ``max_event`` bytes;
        the reader then holds nothing (the caller still forwards the stream, it just
        does not read it any further)."""
        self._buffer += chunk
        out: list[Event] = []
        lf = -2  # the first LF at or after self._start (-1: none), looked for again only
        while True:  # once passed: a chunk is searched for LFs once, not once per line
            if lf != -1 and lf < self._start:
                lf = self._buffer.find(b"\n", self._start)
            cut = _line_end(self._buffer, self._start, lf)
            if cut is None:
                self._compact()
                if self._held + len(self._buffer) > self._max:
                    self._drop()
                    raise EventTooLarge(f"an event larger than {self._max} bytes")
                return out
            end, width = cut
            line = self._buffer[self._start:end].decode("utf-8", "replace")
            self._start = end + width
            if line == "":
                if self._data:
                    out.append(Event(self._event or "message", "\n".join(self._data)))
                self._data, self._event, self._held = [], "", 0
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                self._data.append(value)
                self._held += len(value) + 1
                if self._held > self._max:
                    self._drop()
                    raise EventTooLarge(f"an event larger than {self._max} bytes")
            elif name == "event":
                self._event = value[:256]

    def _compact(self) -> None:
        """Forget the lines already read (once per chunk: slicing per line would copy
        the rest of the chunk for every line)."""
        if self._start:
            del self._buffer[:self._start]
            self._start = 0

    def _drop(self) -> None:
        self._buffer, self._start, self._data, self._held = bytearray(), 0, [], 0


def _line_end(buffer: bytearray, start: int, lf: int) -> tuple[int, int] | None:
    """Where the first line from ``start`` ends (CRLF, LF or CR) and how wide its end is;
    ``lf`` is the first LF from ``start`` (-1: none). A CR is looked for only before that
    LF, and the LF is not looked for again per line: a chunk of many LF lines, or of
    many CR lines, is read in one pass (a search for an LF per line made 128 KiB of bare
    CRs cost 0.57 s of the proxy's event loop)."""
    cr = buffer.find(b"\r", start, len(buffer) if lf == -1 else lf)
    if cr == -1:
        return None if lf == -1 else (lf, 1)
    if cr + 1 == len(buffer):
        return None  # a CR at the end may be the start of a CRLF
    return cr, 2 if buffer[cr + 1:cr + 2] == b"\n" else 1
