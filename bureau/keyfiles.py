"""Key files on disk: PKCS#8 PEM, private to their owner."""

from __future__ import annotations

import os
from pathlib import Path

import nacl.signing

from reporters import wire


def write_key(path: Path, key: nacl.signing.SigningKey) -> None:
    """Write ``key`` to ``path`` (mode 0600), refusing to overwrite an existing file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(wire.key_to_pem(key))


def read_key(path: Path) -> nacl.signing.SigningKey:
    return wire.key_from_pem(path.read_text())


def load_or_create(path: Path) -> tuple[nacl.signing.SigningKey, bool]:
    """The key at ``path``, made first if there is none. Returns (key, created)."""
    if path.exists():
        return read_key(path), False
    key = wire.generate_key()
    try:
        write_key(path, key)
    except FileExistsError:  # another process made it first
        return read_key(path), False
    return key, True
