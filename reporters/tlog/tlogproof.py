"""C2SP tlog-proof: an inclusion proof and the checkpoint it is checked against, as one
text that verifies offline.

::

    c2sp.org/tlog-proof@v1
    [extra <base64>]
    index <leaf index, decimal, no leading zeros>
    <base64 of a proof hash, the leaf's sibling first>
    ...
    <a blank line>
    <the checkpoint note, verbatim, its signatures and cosignatures included>

The bureau writes no ``extra`` line; :meth:`TlogProof.parse` reads one (it is not
authenticated: nothing here trusts it). Parsing is strict: canonical base64 of exactly
32 bytes a hash, at most 64 hashes, the header and the index exactly as written above.
Checking the proof (the note's signatures, the inclusion) is the caller's: see
:mod:`reporters._internal.portable`. Pure.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import HASH_SIZE
from reporters.tlog.verify import MAX_PROOF_HASHES

HEADER = "c2sp.org/tlog-proof@v1"


def _b64(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise TlogError("BAD_PROOF", f"{what} is not base64") from None
    if base64.b64encode(raw).decode() != text:
        raise TlogError("BAD_PROOF", f"{what} is not canonical base64")
    return raw


def _index(text: str) -> int:
    if not text.isascii() or not text.isdigit() or (text != "0" and text[0] == "0") \
            or len(text) > 20 or int(text) >= 2**63:
        raise TlogError("BAD_PROOF", "the index is a decimal number without leading zeros")
    return int(text)


@dataclass(frozen=True)
class TlogProof:
    """A leaf's index, its inclusion proof (bottom-up) and the checkpoint note."""

    index: int
    hashes: tuple[bytes, ...]
    checkpoint: str
    extra: bytes | None = None

    def text(self) -> str:
        lines = [HEADER]
        if self.extra is not None:
            lines.append("extra " + base64.b64encode(self.extra).decode())
        lines.append(f"index {self.index}")
        lines += [base64.b64encode(h).decode() for h in self.hashes]
        return "\n".join(lines) + "\n\n" + self.checkpoint

    @classmethod
    def parse(cls, text: str) -> TlogProof:
        """``BAD_PROOF`` for anything but a tlog-proof as written above."""
        head, sep, checkpoint = text.partition("\n\n")
        if not sep or not checkpoint:
            raise TlogError("BAD_PROOF", "a tlog-proof has a blank line, then a checkpoint")
        lines = head.split("\n")
        if lines[0] != HEADER:
            raise TlogError("BAD_PROOF", f"a tlog-proof starts with the line {HEADER}")
        at, extra = 1, None
        if at < len(lines) and lines[at].startswith("extra "):
            extra = _b64(lines[at][len("extra "):], "the extra data")
            at += 1
        if at >= len(lines) or not lines[at].startswith("index "):
            raise TlogError("BAD_PROOF", "the line after the header is the index")
        index = _index(lines[at][len("index "):])
        hashes = tuple(_b64(line, f"proof line {i}") for i, line in enumerate(lines[at + 1:]))
        if len(hashes) > MAX_PROOF_HASHES:
            raise TlogError("BAD_PROOF", f"a proof has at most {MAX_PROOF_HASHES} hashes")
        if any(len(h) != HASH_SIZE for h in hashes):
            raise TlogError("BAD_PROOF", f"a proof hash is {HASH_SIZE} bytes")
        return cls(index, hashes, checkpoint, extra)
