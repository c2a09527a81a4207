"""Key helpers: make, save, load and name Ed25519 keys (SPEC §2).

Key files are PKCS#8 PEM, the form ``openssl genpkey -algorithm ed25519`` and
``bureau keygen`` write; the bytes come from :mod:`reporters.wire`.
"""

from __future__ import annotations

import os
from pathlib import Path

import nacl.signing

from reporters import wire
from reporters._internal.errors import BureauClientError


def generate_key() -> nacl.signing.SigningKey:
    """A new random Ed25519 signing key."""
    return wire.generate_key()


def key_id(key: nacl.signing.SigningKey) -> str:
    """The key id of ``key``: ``ed25519:`` and 43 base64url characters."""
    return wire.signing_key_id(key)


def load_key(path: str | os.PathLike[str]) -> nacl.signing.SigningKey:
    """Read a PKCS#8 PEM Ed25519 private key file.

    Raises :class:`BureauClientError` (``BAD_KEY_FILE``) when the file is not one;
    ``OSError`` when it cannot be read.
    """
    text = Path(path).read_text(encoding="ascii", errors="replace")
    try:
        return wire.key_from_pem(text)
    except wire.WireError as exc:
        raise BureauClientError("BAD_KEY_FILE", "", f"{os.fspath(path)}: {exc.detail}") from None


def save_key(key: nacl.signing.SigningKey, path: str | os.PathLike[str], *,
             overwrite: bool = False) -> None:
    """Write ``key`` as a PKCS#8 PEM file readable by its owner only (mode 0600),
    fsynced before returning. Refuses to replace an existing file unless
    ``overwrite`` (``FileExistsError``): losing a key loses an identity."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, wire.key_to_pem(key).encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
