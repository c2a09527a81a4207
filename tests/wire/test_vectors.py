"""Known-answer vectors (tests/vectors/*.json) against both sides: the client's signing
code and the service's parse/verify/decode stages, plus independent implementations
(pyca/cryptography for keys, the rfc8785 package for canonical JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bureau.intake.envelope import decode_payload, parse_envelope, verify_envelope
from reporters import wire

VECTORS = sorted((Path(__file__).resolve().parent.parent / "vectors").glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.fixture(params=VECTORS, ids=[p.stem for p in VECTORS])
def vector(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _load(request.param)


def test_there_are_vectors() -> None:
    assert len(VECTORS) >= 3


def test_canonical_payload(vector: dict[str, Any]) -> None:
    body = wire.canonical_json(vector["payload"])
    assert body.decode() == vector["canonical_payload"]
    assert body == rfc8785.dumps(vector["payload"])


def test_key_and_key_id(vector: dict[str, Any]) -> None:
    key = wire.signing_key_from_seed(bytes.fromhex(vector["seed"]))
    assert wire.signing_key_id(key) == vector["key_id"]
    assert wire.key_to_pem(key) == vector["pem"]
    # an independent reader of PKCS#8 finds the same key
    other = serialization.load_pem_private_key(vector["pem"].encode(), password=None)
    assert isinstance(other, Ed25519PrivateKey)
    raw_pub = other.public_key().public_bytes(serialization.Encoding.Raw,
                                              serialization.PublicFormat.Raw)
    assert wire.key_id(raw_pub) == vector["key_id"]


def test_client_signs_the_known_bytes(vector: dict[str, Any]) -> None:
    key = wire.key_from_pem(vector["pem"])
    body = vector["canonical_payload"].encode()
    assert wire.pae(vector["payload_type"], body).hex() == vector["pae_hex"]
    env = wire.sign_envelope(key, vector["payload_type"], body)
    assert env["signatures"][0]["sig"] == vector["signature_b64"]
    assert env == vector["entry"]["envelope"]


def test_service_accepts_the_known_envelope(vector: dict[str, Any]) -> None:
    if vector["payload_name"] == "report":  # written by the bureau, never submitted
        public = wire.public_key_from_key_id(vector["key_id"])
        sig = wire.b64decode_canonical(vector["signature_b64"])
        body = vector["canonical_payload"].encode()
        assert wire.verify_signature(public, vector["payload_type"], body, sig)
        return
    env = parse_envelope(vector["entry"]["envelope"])
    verify_envelope(env)
    assert env.content_key == vector["content_key"]
    assert env.as_json() == vector["entry"]["envelope"]
    # exactly the fields the payload gave (r3's optional `links` default to none)
    assert decode_payload(env).model_dump(mode="json", exclude_unset=True) == vector["payload"]


def test_entry_id(vector: dict[str, Any]) -> None:
    assert wire.entry_id(vector["entry"]) == vector["entry_id"]
    assert wire.blake3_hex(rfc8785.dumps(vector["entry"])) == vector["entry_id"]
