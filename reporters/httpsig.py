"""RFC 9421 HTTP Message Signatures for authenticated reads (SPEC §9).

A party proves who is reading by signing the request line: ``"@method"``, ``"@path"`` and
``"@query"`` with its Ed25519 key, ``keyid`` set to its key id (:func:`reporters.wire.key_id`)
and a ``created`` time. The signature base is built by the maintained
``http_message_signatures`` library on both sides, so a request signed by any conforming
RFC 9421 implementation verifies here and ours verify there.

Client side: :func:`sign_request_headers` (and :func:`signed_get` for aiohttp).
Server side: :func:`verify_request`, pure and synchronous, with the clock passed in, and
a :class:`NonceStore` that refuses a nonce seen before.

The library is used with its unsafe defaults overridden (see PITFALLS): its one-day
``max_age`` and wall clock are replaced by the caller's clock and 300 s, the three
components are required (checked here, on what it says was covered), the nonce is
checked here, the public key named by ``keyid`` is checked to be a prime-order point,
and the signature is checked with libsodium, as envelopes are — not with the library's
own Ed25519 class (pyca/cryptography, which accepts small-order keys).
"""

from __future__ import annotations

import datetime
import heapq
import secrets
import time
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import nacl.exceptions
import nacl.signing
import yarl
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
)
from http_message_signatures import (
    HTTPMessageSignaturesException,
    HTTPMessageSigner,
    HTTPMessageVerifier,
    HTTPSignatureAlgorithm,
    HTTPSignatureKeyResolver,
    MappingKeyResolver,
    VerifyResult,
    algorithms,
)

from reporters.wire import WireError, public_key_from_key_id, signing_key_id

__all__ = [
    "MAX_AGE_SECONDS",
    "MAX_FUTURE_SKEW_SECONDS",
    "MAX_NONCE_LENGTH",
    "REQUIRED_COMPONENTS",
    "SIGNATURE_LABEL",
    "HttpSignatureError",
    "NonceStore",
    "sign_request_headers",
    "signed_get",
    "verify_request",
]

#: The components every authenticated read must cover (SPEC §9). ``@authority`` is not
#: among them: proxies and load balancers may rewrite the host.
REQUIRED_COMPONENTS: tuple[str, ...] = ("@method", "@path", "@query")
#: The label our signer uses. The verifier accepts any label, but exactly one.
SIGNATURE_LABEL = "sig1"
#: A signature whose ``created`` is older than this many seconds is refused.
MAX_AGE_SECONDS = 300
#: A signature whose ``created`` lies more than this many seconds ahead of the
#: server's clock is refused.
MAX_FUTURE_SKEW_SECONDS = 60
#: Longest ``nonce`` accepted, in characters; bounds the nonce store's memory.
MAX_NONCE_LENGTH = 128

# Origin-form request targets ("/path?query") are verified as if addressed to this
# host. Only components derived from the path and query are meaningful then.
_PLACEHOLDER_ORIGIN = "http://localhost"
_ALGORITHM = algorithms.ED25519


class HttpSignatureError(ValueError):
    """An authenticated read whose signature is refused (``401 UNAUTHENTICATED``).

    ``detail`` says which rule was broken, in words fit to return to the caller.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


# --------------------------------------------------------------------------- nonces


class NonceChecker(Protocol):
    """Anything that can record a nonce as used, refusing one seen before."""

    def use(self, keyid: str, nonce: str, *, expires_at: float, now: float) -> None: ...


class NonceStore:
    """Remembers ``(keyid, nonce)`` pairs so that none is accepted twice.

    A pair is remembered until its signature can no longer be fresh (``created +
    max_age``), then forgotten. The store holds at most ``max_entries`` live pairs, and
    at most ``max_per_key`` of any one key (so no single reader can take the room all
    the others need). :meth:`use` is the whole check for a verifier with nothing behind
    it: when the store (or the key's share) is full it *refuses* new nonces (fails
    closed) instead of evicting live ones, because an evicted nonce could be replayed.
    A verifier with an authoritative record elsewhere (the bureau claims every nonce in
    its database) uses :meth:`seen` and :meth:`remember` instead: the store then only
    saves a round trip for replays, and being full refuses nobody. Not thread-safe:
    meant for one asyncio event loop.
    """

    def __init__(self, max_entries: int = 100_000, max_per_key: int | None = None) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if max_per_key is not None and max_per_key < 1:
            raise ValueError("max_per_key must be at least 1")
        self.max_entries = max_entries
        self.max_per_key = max_per_key
        self._expiry: dict[tuple[str, str], float] = {}
        self._heap: list[tuple[float, str, str]] = []
        self._per_key: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._expiry)

    def _forget_expired(self, now: float) -> None:
        while self._heap and self._heap[0][0] < now:
            _, kid, nonce = heapq.heappop(self._heap)
            if self._expiry.pop((kid, nonce), None) is not None:
                left = self._per_key[kid] - 1
                if left:
                    self._per_key[kid] = left
                else:
                    del self._per_key[kid]

    def seen(self, keyid: str, nonce: str, *, now: float) -> bool:
        """Is this pair remembered (so: a replay)?"""
        self._forget_expired(now)
        return (keyid, nonce) in self._expiry

    def _room_for(self, keyid: str) -> str | None:
        """Why there is no room for one more pair of ``keyid``, or None."""
        if len(self._expiry) >= self.max_entries:
            return "too many recent nonces; retry later"
        if self.max_per_key is not None and self._per_key.get(keyid, 0) >= self.max_per_key:
            return "too many recent nonces from this key; retry later"
        return None

    def remember(self, keyid: str, nonce: str, *, expires_at: float, now: float) -> bool:
        """Record the pair until ``expires_at`` if there is room; False when there is
        none (the store, or this key's share of it, is full)."""
        self._forget_expired(now)
        if (keyid, nonce) in self._expiry:
            return True
        if self._room_for(keyid) is not None:
            return False
        self._expiry[(keyid, nonce)] = expires_at
        self._per_key[keyid] = self._per_key.get(keyid, 0) + 1
        heapq.heappush(self._heap, (expires_at, keyid, nonce))
        return True

    def use(self, keyid: str, nonce: str, *, expires_at: float, now: float) -> None:
        """Record a nonce as used until ``expires_at``.

        Raises :class:`HttpSignatureError` if the pair is already remembered, or if the
        store (or this key's share of it) is full of pairs that have not yet expired.
        """
        if self.seen(keyid, nonce, now=now):
            raise HttpSignatureError("nonce has already been used")
        full = self._room_for(keyid)
        if full is not None:
            raise HttpSignatureError(full)
        self.remember(keyid, nonce, expires_at=expires_at, now=now)


# --------------------------------------------------------------------------- messages


@dataclass
class _Message:
    """The request view ``http_message_signatures`` reads: method, encoded absolute
    URL, and headers (``items()`` yielding every field line)."""

    method: str
    url: str
    headers: Any


def _absolute_url(url: str) -> str:
    """An absolute URL as given, or an origin-form target on the placeholder host."""
    if url.startswith("/"):
        return _PLACEHOLDER_ORIGIN + url
    return url


# --------------------------------------------------------------------------- client


def sign_request_headers(
    key: nacl.signing.SigningKey,
    method: str,
    url: str,
    *,
    created: int | None = None,
    nonce: str | None = None,
) -> dict[str, str]:
    """The ``Signature-Input`` and ``Signature`` headers that authenticate a request.

    ``url`` is the request's already-encoded URL exactly as it will be sent (absolute, or
    origin-form ``/path?query``); what is signed is its path and query byte for byte, so
    send it without re-encoding (see :func:`signed_get`). ``created`` defaults to now and
    ``nonce`` to 128 random bits. Raises ``ValueError`` for a URL or method that cannot
    be signed (for example unencoded spaces or non-ASCII characters).
    """
    if created is None:
        created = int(time.time())
    if nonce is None:
        nonce = secrets.token_urlsafe(16)
    kid = signing_key_id(key)
    resolver = MappingKeyResolver(
        public_keys={}, private_keys={kid: Ed25519PrivateKey.from_private_bytes(bytes(key))}
    )
    signer = HTTPMessageSigner(signature_algorithm=_ALGORITHM, key_resolver=resolver)
    message = _Message(method.upper(), _absolute_url(url), {})
    try:
        signer.sign(
            message,
            key_id=kid,
            created=datetime.datetime.fromtimestamp(created, tz=datetime.UTC),
            nonce=nonce,
            label=SIGNATURE_LABEL,
            covered_component_ids=REQUIRED_COMPONENTS,
        )
    except HTTPMessageSignaturesException as exc:
        raise ValueError(f"cannot sign this request: {exc}") from exc
    headers: dict[str, str] = message.headers
    return {"Signature-Input": headers["Signature-Input"], "Signature": headers["Signature"]}


def signed_get(
    session: aiohttp.ClientSession,
    key: nacl.signing.SigningKey,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
) -> AbstractAsyncContextManager[aiohttp.ClientResponse]:
    """``session.get(url)`` with a fresh signature; use as ``async with signed_get(...)``.

    ``url`` must be absolute and already encoded; it is sent exactly as signed (aiohttp
    is told not to re-quote it).
    """
    all_headers = dict(headers or {})
    all_headers.update(sign_request_headers(key, "GET", url))
    return session.get(yarl.URL(url, encoded=True), headers=all_headers)


# --------------------------------------------------------------------------- server


class _SodiumEd25519(HTTPSignatureAlgorithm):
    """Ed25519 checked with libsodium (PyNaCl), as envelopes are
    (:func:`reporters.wire.verify_signature`): about twice as fast here as the library's
    own class (pyca/cryptography), and as strict or stricter (non-canonical ``S`` and
    small-order ``R`` refused). An algorithm class handed to the verifier is the
    library's documented way to bring one's own; it verifies only."""

    algorithm_id = "ed25519"

    def __init__(self, public_key: nacl.signing.VerifyKey | None = None,
                 private_key: object = None) -> None:
        self.public_key = public_key

    def sign(self, message: bytes) -> bytes:
        raise HttpSignatureError("a verifier holds no private keys")

    def verify(self, signature: bytes, message: bytes) -> None:
        if self.public_key is None:  # pragma: no cover - the resolver always gives one
            raise HttpSignatureError("no key to verify with")
        try:
            self.public_key.verify(message, signature)
        except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
            raise HttpSignatureError("signature does not verify") from None


class _KeyIdResolver(HTTPSignatureKeyResolver):
    """Resolves a key id to the key it names, refusing malformed and small-order keys."""

    def resolve_public_key(self, key_id: str) -> nacl.signing.VerifyKey:
        try:
            raw = public_key_from_key_id(key_id)
        except WireError as exc:
            raise HttpSignatureError(f"keyid refused: {exc.detail}") from None
        return nacl.signing.VerifyKey(raw)

    def resolve_private_key(self, key_id: str) -> Ed25519PrivateKey:
        raise HttpSignatureError("a verifier holds no private keys")


class _ClockedVerifier(HTTPMessageVerifier):
    """The library's verifier with its wall clock replaced by the caller's ``now``."""

    def __init__(self, *, now: float, max_age: int, max_skew: int) -> None:
        super().__init__(signature_algorithm=_SodiumEd25519, key_resolver=_KeyIdResolver())
        self._now = now
        self._max_age = max_age
        self._max_skew = max_skew

    @property
    def max_age(self) -> datetime.timedelta:
        """``max_age`` as the library's ``verify`` takes it."""
        return datetime.timedelta(seconds=self._max_age)

    def validate_created_and_expires(self, sig_input: Any, max_age: Any = None) -> None:
        # The library passes its own max_age (a timedelta equal to ours); the exact
        # limits used are the ones this verifier was built with.
        params = sig_input.params
        created = params.get("created")
        if created is None:
            raise HttpSignatureError('signature has no "created" parameter')
        if type(created) is not int:
            raise HttpSignatureError('"created" must be an integer')
        if created - self._now > self._max_skew:
            raise HttpSignatureError(f'"created" is more than {self._max_skew} s in the future')
        if self._now - created > self._max_age:
            raise HttpSignatureError(f"signature is more than {self._max_age} s old")
        expires = params.get("expires")
        if expires is not None:
            if type(expires) is not int:
                raise HttpSignatureError('"expires" must be an integer')
            if self._now > expires:
                raise HttpSignatureError("signature has expired")


def _header(headers: Mapping[str, str], name: str) -> bool:
    return any(field.lower() == name for field in headers)


def verify_request(
    method: str,
    url: str,
    headers: Mapping[str, str],
    *,
    now: float,
    nonces: NonceChecker,
    max_age: int = MAX_AGE_SECONDS,
    max_skew: int = MAX_FUTURE_SKEW_SECONDS,
) -> str:
    """Verify the request's RFC 9421 signature and return the signer's key id.

    ``url`` is the request target as received: pass the raw origin-form target
    (aiohttp: ``request.raw_path``), or an absolute URL. ``headers`` may hold repeated
    field lines (aiohttp's ``CIMultiDictProxy``). ``now`` is the server's clock in Unix
    seconds. The rules, each a :class:`HttpSignatureError`:

    * both ``Signature-Input`` and ``Signature`` present, well-formed Structured Field
      dictionaries with exactly one label, the same in both;
    * ``alg``, when present, is ``ed25519``; ``keyid`` is present and is a valid key id of
      a prime-order Ed25519 point; no parameters beyond RFC 9421's;
    * ``created`` present, at most ``max_age`` seconds old and at most ``max_skew``
      seconds in the future; ``expires``, when present, not passed;
    * the signature covers ``@method``, ``@path`` and ``@query`` and verifies;
    * ``nonce``, when present, at most :data:`MAX_NONCE_LENGTH` characters and not used
      before by the same key (it is then recorded in ``nonces`` until ``created +
      max_age``). Only a fully verified request consumes a nonce.
    """
    if max_age < 1 or max_skew < 0:
        raise ValueError("max_age must be positive and max_skew not negative")
    for name in ("signature-input", "signature"):
        if not _header(headers, name):
            raise HttpSignatureError(f"request has no {name} header")
    verifier = _ClockedVerifier(now=now, max_age=max_age, max_skew=max_skew)
    result = _the_signature(verifier, _Message(method, _absolute_url(url), headers))
    kid = result.parameters["keyid"]
    created = result.parameters["created"]
    if not isinstance(kid, str) or not isinstance(created, int):  # pragma: no cover
        raise HttpSignatureError("keyid and created are required")
    if result.nonce is not None:
        if not 0 < len(result.nonce) <= MAX_NONCE_LENGTH:
            raise HttpSignatureError(f"nonce must be 1 to {MAX_NONCE_LENGTH} characters")
        nonces.use(kid, result.nonce, expires_at=created + max_age, now=now)
    return kid


def _the_signature(verifier: _ClockedVerifier, message: _Message) -> VerifyResult:
    """The one signature on ``message``, verified (by the library, with our clock, key
    check and Ed25519) and covering every required component."""
    try:
        # The coverage is checked below, on the result: asked of the library, it
        # parses the required components afresh on every call (~15 % of the check).
        results = verifier.verify(message, max_age=verifier.max_age)
    except HttpSignatureError:
        raise
    except (HTTPMessageSignaturesException, ValueError, TypeError, KeyError) as exc:
        cause = exc.__cause__
        if isinstance(cause, HttpSignatureError):
            raise HttpSignatureError(cause.detail) from None
        raise HttpSignatureError(f"signature refused: {exc}") from None
    if len(results) != 1:  # pragma: no cover - the library already insists on one
        raise HttpSignatureError("exactly one signature is accepted")
    result = results[0]
    for component in REQUIRED_COMPONENTS:  # each exactly, without parameters
        if f'"{component}"' not in result.covered_components:
            raise HttpSignatureError(f'signature refused: "{component}" is not covered')
    return result
