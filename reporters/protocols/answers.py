"""What every reader of an agent's answer shares: the claim values and strict JSON."""

from __future__ import annotations

from typing import Any, Literal

from reporters import strictjson

Claimed = Literal["SUCCESS", "FAILURE", "DECLINED"]

#: Nesting deeper than this is not "well-formed" (and keeps ``json`` off its recursion limit).
MAX_DEPTH = 128


def parse_strict(body: bytes | str) -> tuple[bool, Any]:
    """``(True, document)`` when ``body`` is strict JSON: UTF-8, no duplicate keys, no
    ``NaN``/``Infinity``, no byte-order mark, bounded nesting (the same parser the bureau
    decodes payloads with, with the looser bounds an agent's answer deserves);
    ``(False, None)`` otherwise."""
    raw = body.encode() if isinstance(body, str) else body
    try:
        return True, strictjson.loads(raw, max_depth=MAX_DEPTH, bounded_ints=False)
    except strictjson.StrictJSONError:
        return False, None
