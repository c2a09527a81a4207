"""A probe task's answer, and whether a reply gives it: lenient in form, strict in value.

The rule (docs/probing.md, "Checking answers"):

* The reply is normalised first: Unicode NFKC (full-width digits become ASCII), and the
  minus sign U+2212 is read as ``-``.
* **Its answer is the last candidate in it**, so that "4817 + 2296 = 7113" and "The
  answer is 7113." both answer 7113 — a candidate being what the answer's type admits:
  * ``integer``: a number written in decimal — an optional ``-``, digits, optionally
    grouped by commas in threes (``34,665``), optionally a decimal fraction. It must
    *equal* the answer: ``42`` and ``42.0`` are 42, ``42.5`` is not. Nothing is
    rounded, and numbers written in words are not read.
  * ``digits`` (a number to write in base 2 or 16): a word of that base's digits, any
    case, leading zeros and ``_`` allowed, optionally prefixed ``0b``/``0x``. In base 16
    a word counts only with the prefix, or when it has both a digit and a letter (so that
    "a" and "16250" in the sentence around it are not read as hexadecimal; the tasks'
    answers always have both). Its value must equal the answer.
  * ``choice`` (a name, or true/false): one of the task's options as a whole word, any
    case (``true``/``yes`` and ``false``/``no`` for true/false questions). It must be
    the right one.
* No candidate at all is a wrong answer. Negations are not parsed ("not true" names
  ``true``): the tasks ask for a plain answer.

Pure functions: nothing here reads a clock, a file or the network.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

AnswerType = Literal["integer", "digits", "choice"]

_NUMBER = re.compile(r"(?<![0-9A-Za-z_.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![0-9A-Za-z_])")
_WORD = re.compile(r"[0-9A-Za-z_]+")
_DIGITS = {2: frozenset("01"), 16: frozenset("0123456789abcdef")}
_PREFIXES = {2: "0b", 16: "0x"}


@dataclass(frozen=True, slots=True)
class Answer:
    """The right answer of a task. ``value`` is an integer (``integer``, ``digits``) or
    the option's canonical word (``choice``); ``base`` is 2 or 16 for ``digits``;
    ``options`` lists every option of a ``choice``, each as the words that name it."""

    type: AnswerType
    value: int | str
    base: int | None = None
    options: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def integer(cls, value: int) -> Answer:
        return cls("integer", value)

    @classmethod
    def digits(cls, value: int, base: int) -> Answer:
        if base not in _DIGITS:
            raise ValueError("digits answers are in base 2 or 16")
        return cls("digits", value, base)

    @classmethod
    def choice(cls, value: str, options: Sequence[Sequence[str]]) -> Answer:
        groups = tuple(tuple(words) for words in options)
        if value not in (g[0] for g in groups):
            raise ValueError("the answer must be one of the options")
        return cls("choice", value, None, groups)

    @classmethod
    def boolean(cls, value: bool) -> Answer:
        return cls.choice("true" if value else "false", (("true", "yes"), ("false", "no")))

    @property
    def text(self) -> str:
        """The answer as the task would write it: ``7113``, ``3f7a``, ``Oslo``."""
        if self.type == "digits":
            assert isinstance(self.value, int) and self.base is not None
            return format(self.value, "x" if self.base == 16 else "b")
        return str(self.value)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"type": self.type, "value": self.value, "text": self.text}
        if self.base is not None:
            doc["base"] = self.base
        if self.options:
            doc["options"] = [list(g) for g in self.options]
        return doc


def _normalise(reply: str) -> str:
    return unicodedata.normalize("NFKC", reply).replace("\u2212", "-")


def _last_number(text: str) -> Decimal | None:
    found = _NUMBER.findall(text)
    return Decimal(found[-1].replace(",", "")) if found else None


def _digit_word(word: str, base: int) -> int | None:
    """The value of ``word`` as a candidate in ``base``, or ``None`` if it is not one."""
    w = word.lower()
    prefixed = w.startswith(_PREFIXES[base])
    if prefixed:
        w = w[2:]
    w = w.replace("_", "")
    if not w or not set(w) <= _DIGITS[base]:
        return None
    if base == 16 and not prefixed and not (any(c.isdigit() for c in w)
                                            and any(c.isalpha() for c in w)):
        return None
    return int(w, base)


def _last_digits(text: str, base: int) -> int | None:
    values = [v for v in (_digit_word(w, base) for w in _WORD.findall(text)) if v is not None]
    return values[-1] if values else None


def _last_option(text: str, options: tuple[tuple[str, ...], ...]) -> str | None:
    canonical = {word.casefold(): group[0] for group in options for word in group}
    words = sorted(canonical, key=len, reverse=True)
    pattern = re.compile(r"(?<![0-9A-Za-z_])(?:" + "|".join(map(re.escape, words))
                         + r")(?![0-9A-Za-z_])", re.IGNORECASE)
    found = pattern.findall(text)
    return canonical[found[-1].casefold()] if found else None


def check_reply(answer: Answer, reply: str) -> bool:
    """Whether ``reply`` (an agent's answer, as text) gives ``answer``: the module's rule."""
    text = _normalise(reply)
    if answer.type == "integer":
        number = _last_number(text)
        return number is not None and number == answer.value
    if answer.type == "digits":
        assert answer.base is not None
        return _last_digits(text, answer.base) == answer.value
    return _last_option(text, answer.options) == answer.value
