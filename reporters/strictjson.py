"""Strict JSON decoding for untrusted bytes.

Python's ``json`` (and so aiohttp's ``request.json()``) lets duplicate keys through (last
wins), parses ``NaN``/``Infinity``, turns ``1e400`` into ``inf``, accepts lone surrogate
escapes and raises ``RecursionError`` on deep nesting. Signed payloads must mean exactly
one thing, so each of these is refused here with a :class:`StrictJSONError` that callers
turn into their stage's reason code.

One parser for both sides: the service decodes submissions with the protocol's bounds
(the defaults); the reporting proxy judges whether an agent's answer is well formed with
looser ones (deeper nesting, integers of any length).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_INT_DIGITS = 19  # every integer in the protocol fits in a signed 64-bit value
MAX_DEPTH = 32


class StrictJSONError(ValueError):
    """The bytes are not JSON this service accepts; ``str(self)`` says why."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise StrictJSONError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _refuse_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not JSON")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise StrictJSONError("integer too large")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError("number out of range")
    return value


def _check(value: Any, depth: int, max_depth: int) -> None:
    """Refuse nesting deeper than MAX_DEPTH and strings that are not valid Unicode."""
    if depth > max_depth:
        raise StrictJSONError("nested too deeply")
    if isinstance(value, str):
        _check_text(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check(item, depth + 1, max_depth)
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1, max_depth)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise StrictJSONError("string holds a lone surrogate") from None


_DECODERS = {  # bounded_ints -> decoder; built once, reused for every call
    bounded: json.JSONDecoder(
        object_pairs_hook=_no_duplicates,
        parse_constant=_refuse_constant,
        parse_int=_bounded_int if bounded else int,
        parse_float=_finite_float,
    )
    for bounded in (True, False)
}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _needs_walk(text: str, max_depth: int) -> bool:
    """Only a text with that many brackets can nest too deeply, and only a \\uD800–
    \\uDFFF escape can make a lone surrogate (raw surrogates cannot be valid UTF-8):
    skip the walk over the decoded value when neither can happen."""
    brackets = text.count("[") + text.count("{")
    return brackets > max_depth or _SURROGATE_ESCAPE.search(text) is not None


def loads(data: bytes | str, *, max_depth: int = MAX_DEPTH, bounded_ints: bool = True) -> Any:
    """Decode UTF-8 JSON strictly. Raises :class:`StrictJSONError` and nothing else.

    ``max_depth`` bounds nesting; ``bounded_ints`` refuses integers of more than
    :data:`MAX_INT_DIGITS` digits (the protocol's rule)."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise StrictJSONError("not valid UTF-8") from None
    else:
        text = data
    try:
        value = _DECODERS[bounded_ints].decode(text)
    except StrictJSONError:
        raise
    except RecursionError:
        raise StrictJSONError("nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and int() past the digit limit
        raise StrictJSONError(f"not JSON: {exc}") from None
    if _needs_walk(text, max_depth):
        _check(value, 0, max_depth)
    return value
