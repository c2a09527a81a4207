"""Counted nouns in what the commands print: "1 entry", "2 entries" (issue 24)."""

from __future__ import annotations

#: the nouns whose plural is not the singular and an "s"
_IRREGULAR = {"entry": "entries", "fact": "facts", "epoch": "epochs", "reply": "replies",
              "summary": "summaries", "process": "processes", "is": "are", "was": "were",
              "has": "have"}


def plural(word: str) -> str:
    """The plural of ``word`` as the commands use it."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def count(n: int, word: str, many: str | None = None) -> str:
    """``count(1, "entry")`` is ``"1 entry"``, ``count(2, "entry")`` ``"2 entries"``;
    ``many`` overrides the plural."""
    return f"{n} {word if n == 1 else (many or plural(word))}"


def plain(text: str | None) -> str | None:
    """A module docstring as ``--help`` text: without reStructuredText's double
    backquotes and roles (``:func:`name``` → ``name``), which a terminal shows raw."""
    if text is None:
        return None
    import re

    text = re.sub(r":(?:func|class|meth|mod|data|attr|exc):`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")
