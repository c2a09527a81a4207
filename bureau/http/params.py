"""The patterns of path parameters (SPEC §9).

Every route with a parameter in its path names it with one of these, as in
``f"/agents/{{agent:{KEY_ID}}}"``: a request whose parameter does not have that shape matches no
route and is answered ``404 NOT_FOUND`` in the one error shape by the router, before any
handler runs and so before any query. No bytes a client chose — a NUL, a lone
surrogate, a megabyte of text — reach the database from a path.
``tests/reads/test_path_params.py`` fails for a route whose parameter has no pattern.
"""

from __future__ import annotations

import re

#: a key id (SPEC §2): ``ed25519:`` and 43 characters of unpadded base64url
KEY_ID = r"ed25519:[A-Za-z0-9_-]{43}"
#: a number (SPEC §9 r3): ``0`` or ``[1-9][0-9]*`` in ASCII digits and nothing else —
#: no sign, space, newline, leading zero or other script's digits — within a bigint.
#: (``[0-9]``, never ``\d``, which matches every script's digits, as ``int()`` reads them.)
NUMBER = r"(?:0|[1-9][0-9]{0,17})"
#: an epoch number in a path
EPOCH = NUMBER
#: an entry id or a hash: 64 lowercase hex digits
HEX64 = r"[0-9a-f]{64}"
#: what follows ``/tile/`` in a tlog-tiles path, roughly: the handler parses it exactly
#: (reporters.tlog.tiles.parse_path) and answers anything else 404 itself
TILE = r"(?:entries|[0-9]{1,2})/[0-9xp./]{3,100}"

_NUMBER = re.compile(NUMBER)
_HEX64 = re.compile(HEX64)


def number(text: str) -> int | None:
    """``text`` as a number if it is written as SPEC §9 says (the WHOLE text: ``re.match``
    with ``$`` would take ``5\n``), else None."""
    return int(text) if _NUMBER.fullmatch(text) else None


def is_hex64(text: str) -> bool:
    """Is the whole of ``text`` an entry id or hash (64 lowercase hex digits)?"""
    return _HEX64.fullmatch(text) is not None


_PATTERNED = re.compile(r"\{(\w+):(?:[^{}]|\{[^{}]*\})*\}")


def template(path: str) -> str:
    """A route's path as people read it: ``/agents/{agent}`` for the pattern above."""
    return _PATTERNED.sub(r"{\1}", path)
