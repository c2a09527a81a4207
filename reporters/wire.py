"""The wire format, in one place: canonical JSON, key ids, key files, DSSE, entry ids.

Both the service (``bureau``) and the client library (``reporters``) use this module,
so there is exactly one definition of every byte that is hashed or signed. Everything
here is pure: no I/O beyond what a caller passes in, no clock, no randomness (except
:func:`generate_key`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

import blake3
import nacl.bindings
import nacl.exceptions
import nacl.signing

KEY_ID_PREFIX = "ed25519:"
PAYLOAD_TYPE_PREFIX = "application/vnd.bureau."
PAYLOAD_TYPE_SUFFIX = ".v1+json"
ZERO_ID = "0" * 64
MAX_SAFE_INTEGER = 2**53 - 1

_KEY_ID_RE = re.compile(r"^ed25519:[A-Za-z0-9_-]{43}$")

# PKCS#8 wrapping of a raw 32-byte Ed25519 seed (RFC 8410): a fixed 16-byte prefix.
_PKCS8_ED25519_PREFIX = bytes.fromhex("302e020100300506032b657004220420")
_PEM_BEGIN = "-----BEGIN PRIVATE KEY-----"
_PEM_END = "-----END PRIVATE KEY-----"


class WireError(ValueError):
    """Bytes that do not follow the wire format. ``kind`` says which rule was broken."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


# --------------------------------------------------------------------------- JCS


def _format_number(value: int | float) -> str:
    """RFC 8785 §3.2.2.3: integers as decimal, floats as ECMAScript's Number.toString."""
    if isinstance(value, bool):  # pragma: no cover - guarded by the caller
        raise TypeError("bool is not a number")
    if isinstance(value, int):
        # I-JSON (RFC 7493) safe range: JCS readers hold numbers as IEEE doubles.
        if abs(value) > MAX_SAFE_INTEGER:
            raise WireError("number", "integers are limited to +/-(2**53 - 1)")
        return str(value)
    if not math.isfinite(value):
        raise WireError("number", "NaN and infinities have no canonical JSON form")
    if value == 0:
        return "0"
    # repr gives the shortest digits that round-trip; lay them out as ECMAScript does.
    _, digit_tuple, exp = Decimal(repr(abs(value))).as_tuple()
    assert isinstance(exp, int)
    n = exp + len(digit_tuple)  # value = 0.<digits> * 10**n
    all_digits = "".join(map(str, digit_tuple))
    n -= len(all_digits) - len(all_digits.lstrip("0"))
    digits = all_digits.strip("0")
    k = len(digits)
    sign = "-" if value < 0 else ""
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _encode(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, (int, float)):
        out.append(_format_number(value))
    elif isinstance(value, Mapping):
        out.append("{")
        first = True
        for key in sorted(value, key=_utf16_key):
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, not {type(key).__name__}")
            if not first:
                out.append(",")
            first = False
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} has no canonical JSON form")


def canonical_json(value: Any) -> bytes:
    """RFC 8785 (JCS) canonical bytes of a JSON value made of dicts, lists, str, int,
    float, bool and None."""
    out: list[str] = []
    _encode(value, out)
    return "".join(out).encode("utf-8")


class _NotPlain(Exception):
    """Internal: a value the C encoder would not write as RFC 8785 does."""


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        if value.is_integer():
            if abs(value) < 2**53:
                return int(value)  # JCS writes 1.0 as 1, exactly as it writes the int 1
            raise _NotPlain  # past 2**53 ECMAScript's digits are not the exact integer's
        if 1e-4 <= abs(value) < 1e16:
            return value  # repr is plain decimal here: the same digits as ECMAScript
        raise _NotPlain
    if isinstance(value, dict):
        if not all(k.isascii() for k in value):
            raise _NotPlain  # code-point and UTF-16 key orders agree on ASCII only
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def canonical_json_fast(value: Any) -> bytes:
    """:func:`canonical_json`, by the C JSON encoder where it provably writes the same
    bytes (ASCII object keys; floats that Python and ECMAScript print alike), else by
    :func:`canonical_json` itself. For report-shaped values, which the bureau signs
    thousands of at a seal: ~10x faster than the general encoder (tests hold the two
    equal)."""
    try:
        plain = _plain(value)
    except _NotPlain:
        return canonical_json(value)
    return canonical_json_plain(plain)


def canonical_json_plain(value: Any) -> bytes:
    """:func:`canonical_json` of a value the caller knows to be *plain*: every object
    key ASCII, no float that is integral or outside 1e-4 <= |x| < 1e16 (the C encoder
    writes such values exactly as RFC 8785 does). It skips the walk that
    :func:`canonical_json_fast` makes to check, which costs more than the encoding
    itself for a report (~15 µs of ~28 µs): the report builder makes its numbers
    plain as it computes them and calls this."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


def canonical_number(x: float) -> bytes:
    """:func:`canonical_json` of one float, without the general encoder."""
    if x.is_integer():
        if abs(x) < 2**53:
            return b"%d" % int(x)  # JCS writes 1.0 as 1 (and -0.0 as 0)
    elif 1e-4 <= abs(x) < 1e16:
        return repr(x).encode()  # plain decimal here: the same digits as ECMAScript
    return canonical_json(x)


def blake3_hex(data: bytes) -> str:
    """Lowercase hex of the 32-byte BLAKE3 digest."""
    return blake3.blake3(data).hexdigest()


# --------------------------------------------------------------------------- base64


def b64encode(data: bytes) -> str:
    """Padded standard base64, the only form the envelope accepts."""
    return base64.b64encode(data).decode("ascii")


def b64decode_canonical(text: str) -> bytes:
    """Decode padded standard base64, refusing every non-canonical spelling
    (missing padding, stray characters, non-zero trailing bits)."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise WireError("base64", f"not standard base64: {exc}") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise WireError("base64", "not canonical padded standard base64")
    return raw


def b64url_nopad(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


# --------------------------------------------------------------------------- keys


def key_id(public_key: bytes) -> str:
    """The key id of a 32-byte Ed25519 public key: ``ed25519:`` + unpadded base64url."""
    if len(public_key) != 32:
        raise WireError("key", "an Ed25519 public key is 32 bytes")
    return KEY_ID_PREFIX + b64url_nopad(public_key)


@functools.lru_cache(maxsize=65536)
def public_key_from_key_id(kid: str) -> bytes:
    """The public key bytes a key id names, checked to be a valid prime-order point.

    PyNaCl's ``VerifyKey`` checks only the length; small-order and mixed-order points
    must be refused here, when the key is first seen. The point check costs as much as a
    signature check, so valid keys are remembered (refusals are not cached).
    """
    if not isinstance(kid, str) or not _KEY_ID_RE.fullmatch(kid):
        raise WireError("key", "a key id is 'ed25519:' and 43 base64url characters")
    encoded = kid[len(KEY_ID_PREFIX) :]
    raw = base64.urlsafe_b64decode(encoded + "=")
    if b64url_nopad(raw) != encoded:
        raise WireError("key", "key id is not canonical base64url")
    if not nacl.bindings.crypto_core_ed25519_is_valid_point(raw):
        raise WireError("key", "public key is not a valid prime-order Ed25519 point")
    return raw


def signing_key_from_seed(seed: bytes) -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey(seed)


def generate_key() -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey.generate()


def signing_key_id(key: nacl.signing.SigningKey) -> str:
    return key_id(bytes(key.verify_key))


def key_to_pem(key: nacl.signing.SigningKey) -> str:
    """PKCS#8 PEM, the form ``openssl genpkey -algorithm ed25519`` writes."""
    der = _PKCS8_ED25519_PREFIX + bytes(key)
    body = base64.b64encode(der).decode("ascii")
    return f"{_PEM_BEGIN}\n{body}\n{_PEM_END}\n"


def key_from_pem(text: str) -> nacl.signing.SigningKey:
    """Read a PKCS#8 PEM Ed25519 private key."""
    lines = [line.strip() for line in text.strip().splitlines()]
    if len(lines) < 3 or lines[0] != _PEM_BEGIN or lines[-1] != _PEM_END:
        raise WireError("pem", "not a PKCS#8 PEM private key")
    try:
        der = base64.b64decode("".join(lines[1:-1]), validate=True)
    except (binascii.Error, ValueError):
        raise WireError("pem", "PEM body is not base64") from None
    if len(der) != 48 or not der.startswith(_PKCS8_ED25519_PREFIX):
        raise WireError("pem", "not an Ed25519 PKCS#8 key")
    return nacl.signing.SigningKey(der[16:])


# --------------------------------------------------------------------------- DSSE


def payload_type(name: str) -> str:
    return f"{PAYLOAD_TYPE_PREFIX}{name}{PAYLOAD_TYPE_SUFFIX}"


def pae(payload_type_: str, body: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    type_bytes = payload_type_.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(type_bytes), type_bytes, len(body), body)


def sign_envelope(
    key: nacl.signing.SigningKey, payload_type_: str, body: bytes
) -> dict[str, Any]:
    """A DSSE envelope over ``body`` exactly as given (nothing is re-serialised)."""
    sig = key.sign(pae(payload_type_, body)).signature
    return {
        "payloadType": payload_type_,
        "payload": b64encode(body),
        "signatures": [{"keyid": signing_key_id(key), "sig": b64encode(sig)}],
    }


def sign_envelope_bytes(key: nacl.signing.SigningKey, payload_type_: str, body: bytes,
                        *, key_id: str | None = None) -> bytes:
    """``canonical_json(sign_envelope(key, payload_type_, body))`` — the bytes the bureau
    stores and serves for its reports and checkpoints — written directly: base64 and
    key ids are plain ASCII, and the keys are written in their sorted order. Pass the
    key's ``key_id`` when signing many bodies with one key."""
    sig = key.sign(pae(payload_type_, body)).signature
    kid = signing_key_id(key) if key_id is None else key_id
    if not (_PLAIN_RE.fullmatch(payload_type_) and _PLAIN_RE.fullmatch(kid)):
        return canonical_json({"payloadType": payload_type_, "payload": b64encode(body),
                               "signatures": [{"keyid": kid, "sig": b64encode(sig)}]})
    return (b'{"payload":"' + binascii.b2a_base64(body, newline=False)
            + b'","payloadType":"' + payload_type_.encode() + b'","signatures":[{"keyid":"'
            + kid.encode() + b'","sig":"' + binascii.b2a_base64(sig, newline=False)
            + b'"}]}')


def sign_payload(
    key: nacl.signing.SigningKey, name: str, payload: Mapping[str, Any]
) -> dict[str, Any]:
    """Sign a payload object under ``application/vnd.bureau.<name>.v1+json``; the body
    is its canonical JSON (by the C encoder where that writes the same bytes: a
    reporter signs one payload a call)."""
    return sign_envelope(key, payload_type(name), canonical_json_fast(payload))


def verify_signature(public_key: bytes, payload_type_: str, body: bytes, sig: bytes) -> bool:
    """True when ``sig`` is a valid Ed25519 signature of PAE(type, body).

    libsodium refuses non-canonical S (S >= L) and small-order R; ``ValueError`` is what
    PyNaCl raises for a signature of the wrong length, so both map to False.
    """
    try:
        nacl.signing.VerifyKey(public_key).verify(pae(payload_type_, body), sig)
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
        return False
    return True


# --------------------------------------------------------------------------- entries


def content_key(signer: str, payload_type_: str, body: bytes) -> str:
    """What makes two envelopes the same submission: signer, type and payload bytes.

    Signature bytes are deliberately left out: Ed25519 signatures can be re-made by the
    signer, and base64 text has more than one spelling.
    """
    return blake3_hex(pae(payload_type_, body) + b"\x00" + signer.encode("ascii"))


_PLAIN_RE = re.compile(r"^[A-Za-z0-9._:+/=-]*$")


def envelope_canonical(ptype: str, payload_b64: str, keyid: str, sig_b64: str) -> bytes:
    """``canonical_json`` of a one-signature DSSE envelope, written directly when every
    field is a plain token (the usual case), else by the general encoder."""
    if all(_PLAIN_RE.fullmatch(t) for t in (ptype, payload_b64, keyid, sig_b64)):
        return (f'{{"payload":"{payload_b64}","payloadType":"{ptype}",'
                f'"signatures":[{{"keyid":"{keyid}","sig":"{sig_b64}"}}]}}').encode()
    return canonical_json({"payloadType": ptype, "payload": payload_b64,
                           "signatures": [{"keyid": keyid, "sig": sig_b64}]})


class EntryHeader(NamedTuple):
    """What every entry records beside what it carries: where it stands in the chain
    (``seq``, ``prev``), its ``kind``, and when it was recorded (``recorded_at``,
    ``epoch``)."""

    seq: int
    prev: str
    kind: str
    recorded_at: str
    epoch: int


def envelope_entry_bytes(header: EntryHeader, envelope_canonical: bytes) -> bytes:
    """``canonical_json`` of an entry that carries an envelope, without re-encoding the
    envelope: the ledger writes thousands of these a second. Equal to
    ``canonical_json({**header._asdict(), "envelope": envelope})`` (a test holds the two
    equal); the keys are written in their sorted order."""
    seq, prev, kind, recorded_at, epoch = header
    for text in (prev, kind, recorded_at):
        if not _PLAIN_RE.fullmatch(text):  # anything that JSON would escape takes the slow path
            raise WireError("entry", f"{text!r} is not a plain ASCII token")
    if not (0 <= seq <= MAX_SAFE_INTEGER and 0 <= epoch <= MAX_SAFE_INTEGER):
        raise WireError("entry", "seq and epoch are safe non-negative integers")
    return b'{"envelope":%s,"epoch":%d,"kind":"%s","prev":"%s","recorded_at":"%s","seq":%d}' % (
        envelope_canonical, epoch, kind.encode(), prev.encode(), recorded_at.encode(), seq)


def entry_id(entry_without_id: Mapping[str, Any]) -> str:
    """``id = BLAKE3(canonical JSON of the entry without "id")``."""
    if "id" in entry_without_id:
        raise ValueError("entry_id takes the entry without its id")
    return blake3_hex(canonical_json(entry_without_id))
