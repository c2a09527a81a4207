"""RFC 9421 authenticated reads: real Ed25519 signatures, the real library, real HTTP."""

from __future__ import annotations

import base64
import contextlib
import datetime
import time
from typing import Any

import aiohttp
import nacl.bindings
import nacl.signing
import pytest
from aiohttp import web
from cryptography.exceptions import InvalidSignature as CryptoInvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PublicKey,
)
from http_message_signatures import (
    HTTPMessageSigner,
    HTTPMessageVerifier,
    MappingKeyResolver,
    algorithms,
)

from reporters.httpsig import (
    MAX_NONCE_LENGTH,
    REQUIRED_COMPONENTS,
    HttpSignatureError,
    NonceStore,
    sign_request_headers,
    signed_get,
    verify_request,
)
from reporters.wire import generate_key, key_id, signing_key_id
from tests.intake.envelopes import non_canonical_s
from tests.support import SignedRequest as Req
from tests.support import lib_signed_headers, serving

NOW = 1_760_000_000
URL = "https://bureau.example/v1/agents/abc/entries?after=1&limit=50"
PATH_QS = "/v1/agents/abc/entries?after=1&limit=50"


def lib_sign(
    key: nacl.signing.SigningKey,
    url: str = URL,
    *,
    method: str = "GET",
    kid: str | None = None,
    created: int = NOW,
    nonce: str | None = None,
    components: tuple[str, ...] = REQUIRED_COMPONENTS,
    label: str | None = None,
) -> dict[str, str]:
    """Sign with the library's own signer, not our wrapper."""
    return lib_signed_headers(key, url, method=method, keyid=kid, created=created,
                              nonce=nonce, components=components, label=label)


def raw_sign(key: nacl.signing.SigningKey, params: str, lines: list[str]) -> dict[str, str]:
    """Hand-built signature base, for parameter sets the library's signer will not emit."""
    inner = '("@method" "@path" "@query")' + params
    base = "\n".join([*lines, f'"@signature-params": {inner}'])
    sig = key.sign(base.encode()).signature
    return {
        "Signature-Input": f"sig1={inner}",
        "Signature": f"sig1=:{base64.b64encode(sig).decode()}:",
    }


BASE_LINES = ['"@method": GET', '"@path": /v1/agents/abc/entries', '"@query": ?after=1&limit=50']


def verify(headers: dict[str, str], url: str = URL, **kw: Any) -> str:
    kw.setdefault("now", NOW)
    kw.setdefault("nonces", NonceStore())
    return verify_request(kw.pop("method", "GET"), url, headers, **kw)


def refused(headers: dict[str, str], url: str = URL, **kw: Any) -> str:
    with pytest.raises(HttpSignatureError) as info:
        verify(headers, url, **kw)
    return info.value.detail


# --------------------------------------------------------------------------- interop


def test_library_signer_accepted_by_verify_request() -> None:
    key = generate_key()
    headers = lib_sign(key, nonce="n-1")
    assert "pyhms=" in headers["Signature-Input"]  # the library's own label
    assert verify(headers) == signing_key_id(key)
    assert verify(headers, PATH_QS) == signing_key_id(key)  # origin-form target


def test_our_signer_accepted_by_library_verifier() -> None:
    key = generate_key()
    kid = signing_key_id(key)
    req = Req("GET", URL, sign_request_headers(key, "GET", URL))
    resolver = MappingKeyResolver(
        public_keys={kid: Ed25519PublicKey.from_public_bytes(bytes(key.verify_key))},
        private_keys={},
    )
    [result] = HTTPMessageVerifier(
        signature_algorithm=algorithms.ED25519, key_resolver=resolver
    ).verify(req, max_age=datetime.timedelta(seconds=300), require_components=REQUIRED_COMPONENTS)
    assert result.parameters["keyid"] == kid
    assert result.parameters["alg"] == "ed25519"
    assert result.label == "sig1"
    assert result.nonce and len(result.nonce) >= 16
    assert result.covered_components['"@query"'] == "?after=1&limit=50"


def test_our_signer_round_trip_and_fresh_nonces() -> None:
    key = generate_key()
    a = sign_request_headers(key, "get", URL, created=NOW)
    b = sign_request_headers(key, "GET", URL, created=NOW)
    assert a["Signature-Input"] != b["Signature-Input"]  # a random nonce each time
    store = NonceStore()
    assert verify(a, nonces=store) == signing_key_id(key)
    assert verify(b, nonces=store) == signing_key_id(key)
    assert "created=1760000000" in a["Signature-Input"]


def test_empty_query_is_question_mark_on_both_sides() -> None:
    key = generate_key()
    for signed, received in [
        ("https://h.example/v1/policy", "/v1/policy"),
        ("https://h.example/v1/policy?", "/v1/policy"),
        ("https://h.example", "/"),
    ]:
        assert verify(sign_request_headers(key, "GET", signed, created=NOW), received)
        assert verify(lib_sign(key, signed), received)
    # ... and an empty query is not the same as a query with content.
    refused(
        sign_request_headers(key, "GET", "https://h.example/v1/policy", created=NOW), "/v1/policy?x"
    )


def test_extra_components_are_allowed() -> None:
    key = generate_key()
    headers = lib_sign(key, components=("@method", "@authority", "@path", "@query"))
    assert verify(headers) == signing_key_id(key)


def test_unsignable_url() -> None:
    with pytest.raises(ValueError):
        sign_request_headers(generate_key(), "GET", "https://h.example/a b")


# --------------------------------------------------------------------------- refusals


def test_wrong_key() -> None:
    key, other = generate_key(), generate_key()
    assert refused(lib_sign(other, kid=signing_key_id(key))) == "signature does not verify"


def test_missing_component() -> None:
    key = generate_key()
    assert "@path" in refused(lib_sign(key, components=("@method",)))
    assert "@query" in refused(lib_sign(key, components=("@method", "@path")))


def test_stale_created() -> None:
    key = generate_key()
    assert verify(lib_sign(key, created=NOW - 300)) == signing_key_id(key)
    assert "old" in refused(lib_sign(key, created=NOW - 301))
    assert "old" in refused(lib_sign(key, created=NOW), now=NOW + 300.5)


def test_future_created() -> None:
    key = generate_key()
    assert verify(lib_sign(key, created=NOW + 60)) == signing_key_id(key)
    assert "future" in refused(lib_sign(key, created=NOW + 61))
    assert "future" in refused(lib_sign(key, created=NOW + 3600))


def test_missing_created() -> None:
    key = generate_key()
    headers = raw_sign(key, f';keyid="{signing_key_id(key)}";alg="ed25519"', BASE_LINES)
    assert "created" in refused(headers)


def test_wrong_algorithm() -> None:
    key = generate_key()
    params = f';created={NOW};keyid="{signing_key_id(key)}";alg="rsa-pss-sha512"'
    assert "algorithm" in refused(raw_sign(key, params, BASE_LINES)).lower()
    # no alg at all is fine: the key id already says ed25519
    ok = raw_sign(key, f';created={NOW};keyid="{signing_key_id(key)}"', BASE_LINES)
    assert verify(ok) == signing_key_id(key)


def test_expired() -> None:
    key = generate_key()
    params = f';created={NOW - 10};expires={NOW - 1};keyid="{signing_key_id(key)}"'
    assert "expired" in refused(raw_sign(key, params, BASE_LINES))


def test_replayed_nonce() -> None:
    key = generate_key()
    store = NonceStore()
    headers = lib_sign(key, nonce="once")
    assert verify(headers, nonces=store) == signing_key_id(key)
    assert "nonce" in refused(headers, nonces=store, now=NOW + 5)
    # the same nonce under a new created is still a replay
    assert "nonce" in refused(lib_sign(key, nonce="once", created=NOW + 10), nonces=store)
    # another key may use the same nonce
    assert verify(lib_sign(generate_key(), nonce="once"), nonces=store)


def test_refused_request_does_not_burn_nonce() -> None:
    key = generate_key()
    store = NonceStore()
    refused(lib_sign(key, nonce="n"), URL.replace("after=1", "after=2"), nonces=store)
    assert len(store) == 0
    assert verify(lib_sign(key, nonce="n"), nonces=store)


def test_overlong_nonce() -> None:
    key = generate_key()
    assert "nonce" in refused(lib_sign(key, nonce="x" * (MAX_NONCE_LENGTH + 1)))


def test_tampered_query() -> None:
    key = generate_key()
    headers = lib_sign(key, "https://bureau.example/v1/agents/abc/entries?after=1")
    assert verify(headers, "/v1/agents/abc/entries?after=1")
    for tampered in [
        "/v1/agents/abc/entries?after=2",
        "/v1/agents/abc/entries?after=1&limit=5",
        "/v1/agents/abc/entries",
    ]:
        assert refused(headers, tampered) == "signature does not verify"


def test_tampered_path_and_method() -> None:
    key = generate_key()
    headers = lib_sign(key)
    assert refused(headers, PATH_QS.replace("/abc/", "/xyz/")) == "signature does not verify"
    assert refused(headers, method="POST") == "signature does not verify"


def test_small_order_keyid() -> None:
    # The identity point as a public key: [S]B == R + [k]A holds for R = [S]B whatever
    # the message, so this forgery verifies under pyca/cryptography.
    identity = bytes([1]) + bytes(31)
    kid = key_id(identity)
    s = (12345).to_bytes(32, "little")
    forged = nacl.bindings.crypto_scalarmult_ed25519_base_noclamp(s) + s
    req = Req("GET", URL)
    signer = HTTPMessageSigner(signature_algorithm=algorithms.ED25519)
    prepared = signer.prepare(
        req,
        key_id=kid,
        created=datetime.datetime.fromtimestamp(NOW, tz=datetime.UTC),
        covered_component_ids=REQUIRED_COMPONENTS,
    )
    signer.apply(req, prepared, forged)
    # Show the pitfall is real: pyca/cryptography accepts this forgery (a stricter
    # backend would raise, which is fine too).
    with contextlib.suppress(CryptoInvalidSignature):
        Ed25519PublicKey.from_public_bytes(identity).verify(forged, prepared.signature_base)
    assert "keyid" in refused(req.headers)


def signed_as(key: nacl.signing.SigningKey, change: Any) -> Req:
    """A request the library's signer signs with ``key``, its signature passed through
    ``change`` (bytes -> bytes) before it is applied."""
    req = Req("GET", URL)
    signer = HTTPMessageSigner(signature_algorithm=algorithms.ED25519)
    prepared = signer.prepare(req, key_id=signing_key_id(key),
                              created=datetime.datetime.fromtimestamp(NOW, tz=datetime.UTC),
                              covered_component_ids=REQUIRED_COMPONENTS)
    signer.apply(req, prepared, change(key.sign(prepared.signature_base).signature))
    return req


def test_non_canonical_s_and_small_order_r_are_refused() -> None:
    """The signature is checked with libsodium (docs/authentication.md, step 10): an S
    not reduced mod the group order (S + L verifies the same equation: another valid-
    looking signature of the same request) and a small-order R are refused."""
    key = generate_key()
    assert verify(signed_as(key, lambda sig: sig).headers) == signing_key_id(key)

    identity = bytes([1]) + bytes(31)
    for change in (non_canonical_s, lambda sig: identity + sig[32:]):
        assert refused(signed_as(key, change).headers) == "signature does not verify"


def test_malformed_keyid() -> None:
    key = generate_key()
    for kid in ["ed25519:short", "rsa:" + "A" * 43, signing_key_id(key) + "A"]:
        assert "keyid" in refused(lib_sign(key, kid=kid))


def test_no_headers() -> None:
    assert "signature-input" in refused({})
    headers = lib_sign(generate_key())
    assert "signature" in refused({"Signature-Input": headers["Signature-Input"]})
    assert "signature-input" in refused({"Signature": headers["Signature"]})


def test_malformed_headers() -> None:
    key = generate_key()
    good = lib_sign(key)
    sig_value = good["Signature"].split("=", 1)[1]
    cases = [
        {"Signature-Input": "not a dictionary (", "Signature": good["Signature"]},
        {"Signature-Input": good["Signature-Input"], "Signature": 'pyhms="text"'},
        {"Signature-Input": good["Signature-Input"], "Signature": "other=" + sig_value},
        {
            "Signature-Input": good["Signature-Input"].replace("created=", "created=x"),
            "Signature": good["Signature"],
        },
        {
            "Signature-Input": good["Signature-Input"] + ';colour="red"',
            "Signature": good["Signature"],
        },
        {"Signature-Input": 'pyhms="@method"', "Signature": good["Signature"]},
        {"Signature-Input": "", "Signature": ""},
    ]
    for headers in cases:
        refused(headers)


def test_more_than_one_signature_is_refused() -> None:
    key = generate_key()
    a = lib_sign(key, label="a")
    b = lib_sign(key, label="b")
    both = {
        "Signature-Input": a["Signature-Input"] + ", " + b["Signature-Input"],
        "Signature": a["Signature"] + ", " + b["Signature"],
    }
    assert "multiple" in refused(both).lower()
    # duplicate labels across repeated field lines are refused too
    dup = {
        "Signature-Input": a["Signature-Input"] + ", " + a["Signature-Input"],
        "Signature": a["Signature"] + ", " + a["Signature"],
    }
    refused(dup)


def test_case_insensitive_header_names() -> None:
    key = generate_key()
    headers = {k.lower(): v for k, v in lib_sign(key).items()}
    assert verify(headers) == signing_key_id(key)


# --------------------------------------------------------------------------- nonce store


def test_nonce_store_forgets_after_window() -> None:
    store = NonceStore()
    store.use("k", "n", expires_at=100, now=0)
    with pytest.raises(HttpSignatureError):
        store.use("k", "n", expires_at=100, now=100)  # still inside the window
    store.use("k", "other", expires_at=200, now=100.5)  # forgets "n"
    assert len(store) == 1
    store.use("k", "n", expires_at=400, now=101)


def test_nonce_store_is_bounded_and_fails_closed() -> None:
    store = NonceStore(max_entries=2)
    store.use("k", "a", expires_at=10, now=0)
    store.use("k", "b", expires_at=20, now=0)
    with pytest.raises(HttpSignatureError, match="retry"):
        store.use("k", "c", expires_at=30, now=5)
    with pytest.raises(HttpSignatureError, match="already"):
        store.use("k", "a", expires_at=10, now=5)  # still a replay, never evicted
    store.use("k", "c", expires_at=30, now=11)  # "a" expired, room again
    assert len(store) == 2
    with pytest.raises(ValueError):
        NonceStore(max_entries=0)


def test_full_store_refuses_through_verify_request() -> None:
    key = generate_key()
    store = NonceStore(max_entries=1)
    verify(lib_sign(key, nonce="a"), nonces=store)
    assert "retry" in refused(lib_sign(key, nonce="b"), nonces=store)
    # without a nonce, nothing is stored
    assert verify(lib_sign(key), nonces=store) == signing_key_id(key)


# --------------------------------------------------------------------------- real HTTP


async def test_over_real_http() -> None:
    store = NonceStore()
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        try:
            kid = verify_request(
                request.method,
                request.raw_path,
                request.headers,
                now=time.time(),
                nonces=store,
            )
        except HttpSignatureError as exc:
            return web.json_response({"code": "UNAUTHENTICATED", "detail": exc.detail}, status=401)
        seen.append(request.raw_path)
        return web.json_response({"keyid": kid})

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serving(app) as base:
        key = generate_key()
        kid = signing_key_id(key)
        async with aiohttp.ClientSession() as session:
            for target in [
                "/v1/agents/ed25519:abc/entries?after=1&limit=50",
                "/v1/agents/a%20b/explain?epoch=3&x=%2F+%7E",
                "/v1/policy",
            ]:
                async with signed_get(session, key, base + target) as resp:
                    assert resp.status == 200, await resp.text()
                    assert (await resp.json()) == {"keyid": kid}

            # Plain session.get with our headers (aiohttp chooses the URL encoding).
            url = base + "/v1/reporters/r/entries?after=7"
            async with session.get(url, headers=sign_request_headers(key, "GET", url)) as resp:
                assert resp.status == 200

            # A replay of the exact same headers is refused over the wire.
            headers = sign_request_headers(key, "GET", url)
            async with session.get(url, headers=headers) as resp:
                assert resp.status == 200
            async with session.get(url, headers=headers) as resp:
                assert resp.status == 401
                assert "nonce" in (await resp.json())["detail"]

            # Signed for ?after=1, sent with ?after=2.
            headers = sign_request_headers(key, "GET", base + "/v1/x?after=1")
            async with session.get(base + "/v1/x?after=2", headers=headers) as resp:
                assert resp.status == 401

            # Unsigned.
            async with session.get(base + "/v1/x") as resp:
                assert resp.status == 401
        assert seen[1] == "/v1/agents/a%20b/explain?epoch=3&x=%2F+%7E"
