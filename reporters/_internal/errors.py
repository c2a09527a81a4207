"""The client's errors: one root, :class:`BureauClientError`, and three narrow kinds.

Every error carries ``code``, ``path``, ``detail`` and ``status``:

* When the bureau refused something, ``code`` is its §6 reason code, ``path`` its JSON
  Pointer into the submission, ``detail`` its words and ``status`` the HTTP status.
* When the client refuses something itself (a payload that fails the schema before it
  is ever signed, a chain or report that does not verify, a spool already in use),
  ``status`` is ``None`` and ``code`` is one of :data:`CLIENT_CODES` or, where the
  failure is exactly one the bureau also names (``SCHEMA``, ``BAD_SIGNATURE``, …), that
  §6 code.
"""

from __future__ import annotations

#: Codes only the client raises (``status`` is ``None`` for them).
CLIENT_CODES: frozenset[str] = frozenset({
    "BAD_KEY_FILE",    # load_key: the file is not a PKCS#8 PEM Ed25519 key
    "BAD_ENTRY_ID",    # verify_chain: an entry's id is not the hash of the entry
    "BROKEN_CHAIN",    # verify_chain: seqs out of order, or prev does not link
    "CLOSED",          # the Reporter/Agent/Admin was closed
    "SPOOL_IN_USE",    # another Reporter holds the spool directory
    "SPOOL_ERROR",     # the spool's SQLite database failed (disk full, I/O error)
    "PROTOCOL",        # the bureau answered something this client cannot read
    "BAD_NOTE",        # verify_note: not a signed note, or not a checkpoint
    "BAD_PROOF",       # verify_inclusion/verify_consistency: the proof does not hold
    "TOO_FEW_COSIGNATURES",  # verify_note: fewer witness cosignatures than the threshold
    "BAD_SETTLEMENT",  # verify_settlement/verify_share: the numbers do not add up
    "BAD_BUNDLE",      # verify_bundle/verify_card: not a proof bundle or card of its format
})


class BureauClientError(Exception):
    """Root of every error this library raises."""

    def __init__(self, code: str, path: str, detail: str, status: int | None = None) -> None:
        super().__init__(f"{code} at {path!r}: {detail}" if path else f"{code}: {detail}")
        #: a §6 reason code, or one of :data:`CLIENT_CODES`
        self.code = code
        #: JSON Pointer into the submission ("" when it concerns the whole of it)
        self.path = path
        #: human-readable explanation
        self.detail = detail
        #: the HTTP status the bureau answered with; ``None`` when the client raised it
        self.status = status


class Rejected(BureauClientError):
    """The bureau refused the submission (``422`` and the other 4xx answers).

    Re-sending the same envelope will be refused again: fix the submission instead.
    """


class Unavailable(BureauClientError):
    """The bureau could not take the submission now: ``503`` (``UNAVAILABLE``, nothing
    was written), a connection failure or a timeout (``status`` is ``None``; the
    submission may or may not have been written). Re-sending the same envelope is
    always safe: the bureau recognises duplicates by content.
    """

    def __init__(self, code: str, path: str, detail: str, status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(code, path, detail, status)
        #: seconds the bureau asked us to wait (its ``Retry-After``), if it said
        self.retry_after = retry_after


class VerificationError(BureauClientError):
    """A ledger chain, a signed report, a note, a proof or an agent's file failed
    verification on the client."""
