"""Where in a payload: the ``path`` a refusal names, and the rule on control characters.

SPEC §3 r2: no string in a payload, value or object key, holds a control character; a
``path`` is a JSON Pointer (RFC 6901) whose segments are escaped to printable ASCII and
cut to a bounded length, so that the name of an unknown key the sender chose can be
shown and stored. :func:`reporters.models.validate_payload` reads them; the bureau's
refusals use :func:`json_pointer` too, so both sides give the same ``path``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

#: C0 controls, DEL and C1 controls: no string in a payload may hold one (SPEC §3 r2)
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: the most characters one escaped segment of a ``path`` may take (SPEC §3 r2)
MAX_POINTER_SEGMENT = 128


def _escaped_units(segment: str) -> Iterator[str]:
    """The escapes of one pointer segment, a token each, so that a cut never splits one."""
    for char in segment:
        if char == "~":
            yield "~0"
        elif char == "/":
            yield "~1"
        elif char == "\\":
            yield "\\\\"
        elif " " <= char <= "~":
            yield char
        else:
            encoded = char.encode("utf-16-be", "surrogatepass")
            for i in range(0, len(encoded), 2):
                yield "\\u" + encoded[i:i + 2].hex()


def pointer_segment(segment: str | int) -> str:
    """One segment of a ``path`` as SPEC §3 r2 writes it: JSON-Pointer escaped (``~0``,
    ``~1``), then ``\\`` as ``\\\\`` and every UTF-16 code unit outside U+0020–U+007E
    as ``\\u`` and four lowercase hex digits, cut to at most 128 characters, never
    inside an escape. Printable ASCII names (every field the protocol knows) are
    unchanged; only the names of unknown keys ever need it."""
    if isinstance(segment, int):
        return str(segment)
    out: list[str] = []
    size = 0
    for token in _escaped_units(segment):
        size += len(token)
        if size > MAX_POINTER_SEGMENT:
            break
        out.append(token)
    return "".join(out)


def json_pointer(*parts: str | int) -> str:
    """A ``path``: a JSON Pointer (RFC 6901) whose segments are escaped for display and
    storage by :func:`pointer_segment`."""
    return "".join("/" + pointer_segment(p) for p in parts)


def control_character_at(doc: Any) -> tuple[str | int, ...] | None:
    """Where the first string (in document order) holding a control character is: the
    path to that value, or to the object key that holds one; ``None`` when there is none."""
    if isinstance(doc, str):
        return () if CONTROL_CHARACTERS.search(doc) else None
    if isinstance(doc, dict):
        for key, value in doc.items():
            if CONTROL_CHARACTERS.search(key):
                return (key,)
            found = control_character_at(value)
            if found is not None:
                return (key, *found)
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found = control_character_at(value)
            if found is not None:
                return (i, *found)
    return None


def document_path(doc: Any, loc: tuple[str | int, ...], missing: bool) -> tuple[str | int, ...]:
    """The parts of a pydantic error location that are keys or indexes of ``doc`` (and,
    for a missing field, its name): pydantic adds names of its own
    (``function-after[...]``, union members) that are not in the document and must not
    reach a ``path``."""
    out: list[str | int] = []
    here = doc
    for i, part in enumerate(loc):
        in_dict = isinstance(here, dict) and isinstance(part, str) and part in here
        in_list = isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here)
        if in_dict or in_list:
            here = here[part]
        elif not (missing and i == len(loc) - 1 and isinstance(here, dict)):
            continue
        out.append(part)
    return tuple(out)
