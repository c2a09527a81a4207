"""C2SP signed notes: keys, vkeys, signing, and opening a note against trusted keys.

A note is UTF-8 text ending in a newline, a blank line, then one or more signature
lines ``— <key name> base64(key hash ‖ signature)``. Two signature types are used here:

* ``0x01`` (:data:`ED25519`): plain Ed25519 over the note text — the bureau signs its
  checkpoints this way, with its existing Ed25519 key and the ledger's origin as key name;
* ``0x04`` (:data:`COSIGNATURE_V1`): C2SP tlog-cosignature's timestamped Ed25519, over
  ``"cosignature/v1\\ntime <t>\\n" + text``, the signature being ``u64 t ‖ Ed25519 sig``
  — what witnesses return.

A key is named by ``(key name, key hash)`` where ``key hash = SHA-256(name ‖ 0x0A ‖ type
‖ public key)[:4]`` read big-endian, and written as a *vkey*:
``<name>+<8 hex digits of the key hash>+base64(type ‖ public key)``.

:func:`open_note` applies the signed-note rules: a signature whose name and hash match
no trusted key is ignored (returned as unverified); one that matches a trusted key must
verify, or the whole note is refused; a note with no verified signature is refused.
Repeated signatures by one key count once. Everything here is pure.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import nacl.bindings
import nacl.exceptions
import nacl.signing

from reporters import wire
from reporters.tlog.errors import TlogError

ED25519 = 0x01
COSIGNATURE_V1 = 0x04
_SIGNATURE_SIZES = {ED25519: 64, COSIGNATURE_V1: 8 + 64}
_TYPE_NAMES = {ED25519: "Ed25519", COSIGNATURE_V1: "cosignature/v1"}

#: Signature lines read from one note. signed-note asks verifiers to accept at least 16.
MAX_SIGNATURES = 100
#: A cosignature timestamp is a u64 that must stay below 2^63.
MAX_TIMESTAMP = 2**63 - 1

SIGNATURE_PREFIX = "\u2014 "  # em dash, space


def check_key_name(name: str) -> None:
    """Key names are non-empty, without Unicode spaces, ``+`` or control characters."""
    if (not isinstance(name, str) or not name or "+" in name
            or any(c.isspace() or c < " " for c in name)):
        raise TlogError("BAD_KEY", f"{name!r} is not a key name (non-empty, no spaces, no '+')")


def key_hash(name: str, sig_type: int, public_key: bytes) -> int:
    """``SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4]`` as a big-endian uint32."""
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([sig_type]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


def cosigned_message(text: bytes, timestamp: int) -> bytes:
    """What a cosignature/v1 signs: header line, time line, then the note text."""
    return b"cosignature/v1\ntime %d\n" % timestamp + text


@dataclass(frozen=True)
class Verifier:
    """A trusted public key: its name, signature type and 32-byte Ed25519 key."""

    name: str
    sig_type: int
    public_key: bytes

    def __post_init__(self) -> None:
        check_key_name(self.name)
        if self.sig_type not in _SIGNATURE_SIZES:
            raise TlogError("BAD_KEY", f"signature type {self.sig_type:#04x} is not supported")
        if (len(self.public_key) != 32
                or not nacl.bindings.crypto_core_ed25519_is_valid_point(self.public_key)):
            raise TlogError("BAD_KEY", "not a valid prime-order Ed25519 public key")

    @functools.cached_property
    def key_hash(self) -> int:
        return key_hash(self.name, self.sig_type, self.public_key)

    @property
    def vkey(self) -> str:
        """``<name>+<hex key hash>+base64(type ‖ public key)``."""
        material = base64.b64encode(bytes([self.sig_type]) + self.public_key).decode()
        return f"{self.name}+{self.key_hash:08x}+{material}"

    @classmethod
    def from_vkey(cls, vkey: str) -> Verifier:
        """Parse a vkey, checking every part: the name's rules, 8 lowercase hex digits
        equal to the key hash of the rest, canonical base64, a known type, a valid key."""
        parts = vkey.split("+", 2) if isinstance(vkey, str) else []
        if len(parts) != 3:
            raise TlogError("BAD_KEY", "a vkey is <name>+<key hash>+<base64 key>")
        name, hash_hex, material_b64 = parts
        if len(hash_hex) != 8 or any(c not in "0123456789abcdef" for c in hash_hex):
            raise TlogError("BAD_KEY", "a vkey's key hash is 8 lowercase hex digits")
        try:
            material = wire.b64decode_canonical(material_b64)
        except wire.WireError:
            raise TlogError("BAD_KEY", "a vkey's key is canonical base64") from None
        if len(material) != 33:
            raise TlogError("BAD_KEY", "a vkey's key is one type byte and 32 key bytes")
        verifier = cls(name, material[0], material[1:])
        if verifier.key_hash != int(hash_hex, 16):
            raise TlogError("BAD_KEY", f"the key hash of {name!r} is "
                                       f"{verifier.key_hash:08x}, not {hash_hex}")
        return verifier

    def verify(self, text: bytes, signature: bytes) -> int | None:
        """Check ``signature`` (without its 4-byte key hash) over the note text.
        Returns the cosignature's timestamp (0 for a plain Ed25519 signature), or
        ``None`` when it does not verify."""
        if len(signature) != _SIGNATURE_SIZES[self.sig_type]:
            return None
        timestamp = 0
        message = text
        if self.sig_type == COSIGNATURE_V1:
            timestamp = int.from_bytes(signature[:8], "big")
            if timestamp > MAX_TIMESTAMP:
                return None
            message, signature = cosigned_message(text, timestamp), signature[8:]
        try:
            nacl.signing.VerifyKey(self.public_key).verify(message, signature)
        except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
            return None
        return timestamp


@dataclass(frozen=True)
class Signer:
    """A private key that signs notes under ``name`` with one signature type."""

    name: str
    key: nacl.signing.SigningKey
    sig_type: int = ED25519

    @property
    def verifier(self) -> Verifier:
        return Verifier(self.name, self.sig_type, bytes(self.key.verify_key))

    def sign(self, text: str, *, timestamp: int | None = None) -> str:
        """One signature line over ``text``. A cosigner (:data:`COSIGNATURE_V1`) needs a
        ``timestamp`` (POSIX seconds, 0 < t < 2^63); a plain signer takes none."""
        check_note_text(text)
        body = text.encode()
        if self.sig_type == COSIGNATURE_V1:
            if timestamp is None or not 0 < timestamp <= MAX_TIMESTAMP:
                raise ValueError("a cosignature needs a timestamp in (0, 2^63)")
            sig = (timestamp.to_bytes(8, "big")
                   + self.key.sign(cosigned_message(body, timestamp)).signature)
        else:
            if timestamp is not None:
                raise ValueError("a plain Ed25519 note signature has no timestamp")
            sig = self.key.sign(body).signature
        blob = self.verifier.key_hash.to_bytes(4, "big") + sig
        return f"{SIGNATURE_PREFIX}{self.name} {base64.b64encode(blob).decode()}\n"


@dataclass(frozen=True)
class Signature:
    """One signature line as read: key name, key hash and the signature bytes."""

    name: str
    key_hash: int
    signature: bytes
    line: str  # the line itself, newline included


@dataclass(frozen=True)
class Note:
    """A note's text (final newline included) and its signature lines, not yet verified."""

    text: str
    signatures: tuple[Signature, ...]


@dataclass(frozen=True)
class Verified:
    """A signature that verified under a trusted key; ``timestamp`` is 0 for Ed25519."""

    verifier: Verifier
    timestamp: int
    line: str  # the signature line, newline included


@dataclass(frozen=True)
class OpenedNote:
    text: str
    verified: tuple[Verified, ...]       # one per trusted key, in note order
    unverified: tuple[Signature, ...]    # signatures by keys not trusted here


def check_note_text(text: str) -> None:
    """A note's text is non-empty, ends in a newline and has no control characters but
    newlines."""
    if not text.endswith("\n"):
        raise TlogError("BAD_NOTE", "a note's text ends with a newline")
    if any(c < " " and c != "\n" for c in text):
        raise TlogError("BAD_NOTE", "a note has no control characters but newlines")


def format_note(text: str, signature_lines: Iterable[str]) -> str:
    """Text, blank line, signature lines."""
    check_note_text(text)
    lines = "".join(signature_lines)
    if not lines:
        raise ValueError("a note has at least one signature")
    return text + "\n" + lines


def sign_note(text: str, signers: Sequence[Signer], *, timestamp: int | None = None) -> str:
    """``text`` signed by each of ``signers`` (``timestamp`` for cosigners)."""
    return format_note(text, [s.sign(text, timestamp=timestamp if s.sig_type ==
                                      COSIGNATURE_V1 else None) for s in signers])


def _signature_line(line: str) -> Signature:
    if not line.startswith(SIGNATURE_PREFIX):
        raise TlogError("BAD_NOTE", "a signature line starts with an em dash and a space")
    name, sep, encoded = line[len(SIGNATURE_PREFIX):].partition(" ")
    try:
        if not sep:
            raise wire.WireError("base64", "no signature")
        check_key_name(name)
        blob = wire.b64decode_canonical(encoded)
    except (wire.WireError, TlogError) as exc:
        raise TlogError("BAD_NOTE", f"malformed signature line {line!r}: {exc}") from None
    if len(blob) < 5:
        raise TlogError("BAD_NOTE", "a signature is a 4-byte key hash and at least one byte")
    return Signature(name, int.from_bytes(blob[:4], "big"), blob[4:], line + "\n")


def parse_note(data: bytes | str) -> Note:
    """Split a note into text and signature lines, checking the format only."""
    try:
        msg = data.decode("utf-8") if isinstance(data, bytes) else data
        msg.encode("utf-8")  # refuses lone surrogates in a str
    except UnicodeError:
        raise TlogError("BAD_NOTE", "a note is UTF-8") from None
    if any(c < " " and c != "\n" for c in msg):
        raise TlogError("BAD_NOTE", "a note has no control characters but newlines")
    split = msg.rfind("\n\n")
    if split < 0:
        raise TlogError("BAD_NOTE", "a note has a blank line before its signatures")
    text, block = msg[:split + 1], msg[split + 2:]
    if not block.endswith("\n"):
        raise TlogError("BAD_NOTE", "a note ends with a signature line and a newline")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise TlogError("BAD_NOTE", f"more than {MAX_SIGNATURES} signatures")
    return Note(text, tuple(_signature_line(line) for line in lines))


def open_note(data: bytes | str, trusted: Iterable[Verifier]) -> OpenedNote:
    """Parse a note and verify it against ``trusted`` keys (the signed-note rules above).

    Raises ``BAD_NOTE`` (format), ``BAD_SIGNATURE`` (a trusted key's signature fails),
    ``BAD_KEY`` (no signature by any trusted key, or two trusted keys that share a name
    and key hash).
    """
    keys: dict[tuple[str, int], Verifier] = {}
    for v in trusted:
        if keys.setdefault((v.name, v.key_hash), v) != v:
            raise TlogError("BAD_KEY", f"two trusted keys are named {v.name}+{v.key_hash:08x}")
    note = parse_note(data)
    body = note.text.encode()
    verified: dict[tuple[str, int], Verified] = {}
    unverified: dict[str, Signature] = {}
    for sig in note.signatures:
        verifier = keys.get((sig.name, sig.key_hash))
        if verifier is None:
            unverified.setdefault(sig.line, sig)
            continue
        timestamp = verifier.verify(body, sig.signature)
        if timestamp is None:
            raise TlogError("BAD_SIGNATURE", f"the {_TYPE_NAMES[verifier.sig_type]} "
                                             f"signature by {sig.name} does not verify")
        verified.setdefault((sig.name, sig.key_hash), Verified(verifier, timestamp, sig.line))
    if not verified:
        raise TlogError("BAD_KEY", "the note has no signature by a trusted key")
    return OpenedNote(note.text, tuple(verified.values()), tuple(unverified.values()))
