"""C2SP tlog-checkpoint: the tree head as a signed note, and its witness cosignatures.

A checkpoint's note text is exactly::

    <origin>\\n<tree size in decimal, no leading zeros>\\n<base64 of the 32-byte root>\\n

followed by optional non-empty extension lines (the bureau writes none). The bureau
signs it with its Ed25519 key under the key name = the origin (SPEC §8.1); witnesses
add cosignature/v1 lines. :func:`open_checkpoint` checks the log's signature, the
body's format, and as many witness cosignatures as a caller's threshold asks for.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

import nacl.signing

from reporters import wire
from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import EMPTY_ROOT, HASH_SIZE
from reporters.tlog.note import (
    COSIGNATURE_V1,
    ED25519,
    Signer,
    Verifier,
    check_key_name,
    open_note,
    sign_note,
)

ORIGIN_PREFIX = "bureau-"


def default_origin(public_key: bytes) -> str:
    """SPEC §10's default origin: ``bureau-`` and the first 16 hex digits of the BLAKE3
    of the bureau's 32-byte public key."""
    if len(public_key) != 32:
        raise ValueError("an Ed25519 public key is 32 bytes")
    return ORIGIN_PREFIX + wire.blake3_hex(public_key)[:16]


def check_origin(origin: str) -> None:
    """The bureau's origin is also its note key name, so it follows the key-name rules
    (non-empty, no spaces, no ``+``), which is stricter than tlog-checkpoint's MUSTs."""
    check_key_name(origin)


def _parse_size(text: str, what: str) -> int:
    if not text.isascii() or not text.isdigit() or (text != "0" and text.startswith("0")):
        raise TlogError("BAD_NOTE", f"{what} is a decimal number without leading zeros")
    if len(text) > 20 or int(text) >= 2**64:
        raise TlogError("BAD_NOTE", f"{what} is below 2^64")
    return int(text)


@dataclass(frozen=True)
class Checkpoint:
    """A tree head: origin, size, root (32 bytes) and extension lines."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.origin or "\n" in self.origin:
            raise ValueError("an origin is one non-empty line")
        if not 0 <= self.size < 2**64 or len(self.root) != HASH_SIZE:
            raise ValueError("a checkpoint has a size below 2^64 and a 32-byte root")
        if any(not e or "\n" in e for e in self.extensions):
            raise ValueError("extension lines are non-empty single lines")

    @property
    def root_hex(self) -> str:
        return self.root.hex()

    def text(self) -> str:
        """The note text of this checkpoint."""
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode(),
                 *self.extensions]
        return "".join(line + "\n" for line in lines)

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """Read a checkpoint's note text, refusing anything that is not exactly the
        format: at least three non-empty lines, a canonical size, a canonical base64
        root of 32 bytes, non-empty extension lines."""
        if not text.endswith("\n"):
            raise TlogError("BAD_NOTE", "a checkpoint's text ends with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3 or any(not line for line in lines):
            raise TlogError("BAD_NOTE", "a checkpoint is at least three non-empty lines")
        origin, size_text, root_text, *extensions = lines
        size = _parse_size(size_text, "the tree size")
        try:
            root = wire.b64decode_canonical(root_text)
        except wire.WireError:
            raise TlogError("BAD_NOTE", "the root hash is canonical base64") from None
        if len(root) != HASH_SIZE:
            raise TlogError("BAD_NOTE", f"the root hash is {HASH_SIZE} bytes")
        return cls(origin, size, root, tuple(extensions))


def log_signer(origin: str, key: nacl.signing.SigningKey) -> Signer:
    """The bureau's note signer: its Ed25519 key under the key name = the origin."""
    check_origin(origin)
    return Signer(origin, key, ED25519)


def log_verifier(origin: str, public_key: bytes) -> Verifier:
    """The matching verifier; ``.vkey`` is what ``/v1/bureau`` serves."""
    check_origin(origin)
    return Verifier(origin, ED25519, public_key)


def sign_checkpoint_note(checkpoint: Checkpoint, signer: Signer) -> str:
    """The checkpoint as a C2SP signed note (not the epoch's DSSE JSON checkpoint, which
    ``bureau.views.sign.sign_checkpoint_envelope`` signs). The key name must be the
    origin."""
    if signer.name != checkpoint.origin:
        raise ValueError("the log signs its checkpoints under its origin")
    return sign_note(checkpoint.text(), [signer])


def cosign(checkpoint: Checkpoint, cosigner: Signer, timestamp: int) -> str:
    """A witness's cosignature/v1 line over ``checkpoint`` at ``timestamp``."""
    if cosigner.sig_type != COSIGNATURE_V1:
        raise ValueError("a witness cosigns with a cosignature/v1 key")
    return cosigner.sign(checkpoint.text(), timestamp=timestamp)


@dataclass(frozen=True)
class Cosignature:
    """A verified witness cosignature: the witness's key name and when it signed."""

    witness: str
    timestamp: int


@dataclass(frozen=True)
class VerifiedCheckpoint:
    """A checkpoint whose log signature verified, and the cosignatures that verified."""

    checkpoint: Checkpoint
    cosignatures: tuple[Cosignature, ...]
    note: str

    @property
    def origin(self) -> str:
        return self.checkpoint.origin

    @property
    def size(self) -> int:
        return self.checkpoint.size

    @property
    def root(self) -> bytes:
        return self.checkpoint.root

    @property
    def root_hex(self) -> str:
        return self.checkpoint.root.hex()


def open_checkpoint(note: bytes | str, log: Verifier, *,
                    witnesses: Sequence[Verifier] = (), threshold: int = 0
                    ) -> VerifiedCheckpoint:
    """Verify a checkpoint note.

    1. The note follows signed-note (``BAD_NOTE``); every signature by ``log`` or one of
       ``witnesses`` verifies (``BAD_SIGNATURE``); others are ignored.
    2. ``log`` signed it (``BAD_KEY``), and its key name is the checkpoint's origin
       (``BAD_NOTE``).
    3. The text is a checkpoint, and a tree of size 0 has the empty root (``BAD_NOTE``).
    4. At least ``threshold`` distinct ``witnesses`` cosigned it (``TOO_FEW_COSIGNATURES``).
    """
    if log.sig_type != ED25519:
        raise ValueError("the log's key is a plain Ed25519 note key")
    if any(w.sig_type != COSIGNATURE_V1 for w in witnesses):
        raise ValueError("witness keys are cosignature/v1 keys")
    if not 0 <= threshold <= len(witnesses):
        raise ValueError(f"a threshold of {threshold} out of {len(witnesses)} witnesses")
    try:
        opened = open_note(note, [log, *witnesses])
    except TlogError as exc:
        if exc.code != "BAD_KEY":
            raise
        opened = None
    if opened is None or not any(v.verifier == log for v in opened.verified):
        raise TlogError("BAD_KEY", f"the note is not signed by {log.vkey}")
    checkpoint = Checkpoint.parse(opened.text)
    if checkpoint.size == 0 and checkpoint.root != EMPTY_ROOT:
        raise TlogError("BAD_NOTE", "the empty tree's root is SHA-256 of the empty string")
    if checkpoint.origin != log.name:
        raise TlogError("BAD_NOTE", f"the checkpoint's origin {checkpoint.origin!r} is not "
                                    f"the log's key name {log.name!r}")
    cosignatures = tuple(Cosignature(v.verifier.name, v.timestamp)
                         for v in opened.verified if v.verifier != log)
    if len(cosignatures) < threshold:
        raise TlogError("TOO_FEW_COSIGNATURES",
                        f"{len(cosignatures)} valid witness cosignatures, {threshold} required")
    return VerifiedCheckpoint(checkpoint, cosignatures,
                              note if isinstance(note, str) else note.decode())
