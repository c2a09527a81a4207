"""Files ``bureau-check`` reads: a path, or ``-`` for standard input, never more than a
cap (a note, a report envelope, a bundle)."""

from __future__ import annotations

import sys
from pathlib import Path


def read_at_most(path: str, cap: int) -> bytes:
    """At most ``cap + 1`` bytes of the file (one more than the cap: a caller sees a
    file that is too large). Raises ``OSError``."""
    if path == "-":
        return sys.stdin.buffer.read(cap + 1)
    with Path(path).open("rb") as fh:
        return fh.read(cap + 1)
