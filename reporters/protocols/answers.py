"""What every reader of an agent's answer shares: the claim values, where an answer states
its claim (a JSON Pointer and what its values mean), and strict JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from reporters import strictjson

Claimed = Literal["SUCCESS", "FAILURE", "DECLINED"]
CLAIMS: frozenset[str] = frozenset({"SUCCESS", "FAILURE", "DECLINED"})

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


@dataclass(frozen=True)
class Claim:
    """Where the agent states its own result in its answer, and what the values mean."""

    pointer: str
    values: Mapping[str, Claimed]


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """RFC 6901 lookup; ``None`` when the pointer does not resolve."""
    if pointer == "":
        return doc
    if not pointer.startswith("/"):
        return None
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, dict) and token in doc:
            doc = doc[token]
        elif isinstance(doc, list) and token.isdigit() and int(token) < len(doc):
            doc = doc[int(token)]
        else:
            return None
    return doc


def claimed(doc: Any, pointer: str | None, values: Mapping[str, Claimed]) -> Claimed | None:
    """What the agent said of its own work, read where the route says it states it:
    the JSON value at ``pointer``, looked up in ``values``. ``None`` when the route
    declares no claim, or the answer states none we know."""
    if pointer is None:
        return None
    value = resolve_pointer(doc, pointer)
    if not isinstance(value, str | bool | int) or isinstance(value, float):
        return None
    return values.get(json.dumps(value) if not isinstance(value, str) else value)
