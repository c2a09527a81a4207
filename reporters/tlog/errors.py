"""The one error of :mod:`reporters.tlog`: :class:`TlogError`, with a code from a closed list.

Like :class:`reporters.wire.WireError`, it is a ``ValueError`` that callers convert at
their boundary: the client library turns it into a ``VerificationError`` with the same
code (``reporters._internal.transparency``); the service decides what a bad witness
answer or a bad proof means to it.
"""

from __future__ import annotations

#: Every code a :class:`TlogError` carries.
TLOG_CODES: frozenset[str] = frozenset({
    "BAD_NOTE",              # a note, checkpoint body or witness answer that breaks its format
    "BAD_KEY",               # a malformed vkey, or no signature by the key that must sign
    "BAD_SIGNATURE",         # a signature by a trusted key that does not verify
    "BAD_PROOF",             # an inclusion or consistency proof that does not verify
    "TOO_FEW_COSIGNATURES",  # fewer valid witness cosignatures than the threshold asks
    "WITNESS_PROTOCOL",      # a witness answered outside the tlog-witness protocol
})


class TlogError(ValueError):
    """Something a transparency-log check refused. ``code`` is one of :data:`TLOG_CODES`."""

    def __init__(self, code: str, detail: str) -> None:
        assert code in TLOG_CODES, code
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
