"""What ``bureau-check`` prints of text a bureau chose: one line, printable, bounded."""

from __future__ import annotations

MAX_LINE = 2000


def one_line(text: str) -> str:
    """``text`` with every control or non-printable character shown as ``?`` (a bureau's
    newline cannot start a line of its own) and cut at :data:`MAX_LINE` characters."""
    cleaned = "".join(c if c.isprintable() else "?" for c in text.strip())
    return cleaned if len(cleaned) <= MAX_LINE else cleaned[:MAX_LINE] + "…"
