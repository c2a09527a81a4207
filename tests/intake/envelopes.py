"""Hand-made envelopes for intake tests, including broken ones."""

from __future__ import annotations

import base64
import json
from typing import Any

import nacl.signing

from reporters import wire

# The order of the Ed25519 group's prime-order subgroup.
L = 2**252 + 27742317777372353535851937790883648493
IDENTITY_POINT = bytes([1]) + bytes(31)  # a small-order "public key"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def signed_raw(key: nacl.signing.SigningKey, name: str, body: bytes,
               ptype: str | None = None) -> dict[str, Any]:
    """An envelope over exactly ``body`` (which need not be valid JSON)."""
    return wire.sign_envelope(key, ptype or wire.payload_type(name), body)


def with_signature(env: dict[str, Any], *, keyid: str | None = None,
                   sig: bytes | None = None, sig_text: str | None = None) -> dict[str, Any]:
    out = json.loads(json.dumps(env))
    s = out["signatures"][0]
    if keyid is not None:
        s["keyid"] = keyid
    if sig is not None:
        s["sig"] = b64(sig)
    if sig_text is not None:
        s["sig"] = sig_text
    return out


def non_canonical_s(sig: bytes) -> bytes:
    """The same signature with S replaced by S + L: valid modulo L, refused by libsodium."""
    s = int.from_bytes(sig[32:], "little") + L
    return sig[:32] + s.to_bytes(32, "little")


def non_canonical_b64(text: str) -> str:
    """Another spelling of the same bytes: flip unused trailing bits before the padding."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    stripped = text.rstrip("=")
    pad = len(text) - len(stripped)
    assert pad, "only padded text has spare bits"
    last = alphabet.index(stripped[-1])
    spare = (1 << (2 * pad)) - 1
    assert last & spare == 0
    return stripped[:-1] + alphabet[last | 1] + "=" * pad


def randomized_signature(key: nacl.signing.SigningKey, message: bytes) -> bytes:
    """Another valid Ed25519 signature of ``message`` by ``key``: same key and message,
    a random nonce instead of the deterministic one. Signers can always do this, which
    is why duplicates are never recognised by signature bytes."""
    import hashlib
    import secrets

    import nacl.bindings

    digest = hashlib.sha512(bytes(key)).digest()
    a = bytearray(digest[:32])
    a[0] &= 248
    a[31] &= 127
    a[31] |= 64
    secret = int.from_bytes(a, "little")
    r = int.from_bytes(secrets.token_bytes(64), "little") % L
    big_r = nacl.bindings.crypto_scalarmult_ed25519_base_noclamp(r.to_bytes(32, "little"))
    public = bytes(key.verify_key)
    k = int.from_bytes(hashlib.sha512(big_r + public + message).digest(), "little") % L
    s = (r + k * secret) % L
    return big_r + s.to_bytes(32, "little")
