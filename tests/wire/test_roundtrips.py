"""Every decoder against its encoder: encode(decode(x)) == x."""

from __future__ import annotations

import json

import rfc8785
from hypothesis import example, given
from hypothesis import strategies as st

from bureau.intake.envelope import parse_envelope
from reporters import strictjson, wire

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    # integral floats past 2**53 read back as integers outside the safe range
    | st.floats(min_value=-(2.0**53) + 1, max_value=2.0**53 - 1) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(st.binary(max_size=200))
def test_base64(data: bytes) -> None:
    text = wire.b64encode(data)
    assert wire.b64decode_canonical(text) == data
    assert wire.b64encode(wire.b64decode_canonical(text)) == text


@given(st.binary(min_size=32, max_size=32))
def test_pem(seed: bytes) -> None:
    pem = wire.key_to_pem(wire.signing_key_from_seed(seed))
    assert wire.key_to_pem(wire.key_from_pem(pem)) == pem


@given(st.binary(min_size=32, max_size=32))
def test_key_id(seed: bytes) -> None:
    kid = wire.signing_key_id(wire.signing_key_from_seed(seed))
    assert wire.key_id(wire.public_key_from_key_id(kid)) == kid


@given(json_values)
def test_canonical_json_matches_rfc8785_and_is_stable(value: object) -> None:
    canon = wire.canonical_json(value)
    assert canon == rfc8785.dumps(value)
    assert wire.canonical_json(json.loads(canon)) == canon


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_canonical_floats_parse_back_to_the_same_number(x: float) -> None:
    # ECMAScript may print an integral float as digits followed by zeros: read it as a float
    assert json.loads(wire.canonical_json(x), parse_int=float) == x


@given(json_values)
def test_strict_json_reads_what_canonical_json_writes(value: object) -> None:
    canon = wire.canonical_json(value)
    assert wire.canonical_json(strictjson.loads(canon)) == canon


@given(st.binary(max_size=300), st.binary(min_size=32, max_size=32))
def test_envelope(body: bytes, seed: bytes) -> None:
    env = wire.sign_envelope(wire.signing_key_from_seed(seed), wire.payload_type("fact"), body)
    assert parse_envelope(env).as_json() == env


def test_integers_outside_the_safe_range_have_no_canonical_form() -> None:
    import pytest

    with pytest.raises(wire.WireError):
        wire.canonical_json(2**53)


@given(st.integers(1, 2**53 - 1), st.integers(0, 2**40), st.binary(max_size=100),
       st.sampled_from(["fact", "value-judgment", "seal-request"]))
def test_fast_entry_bytes_equal_canonical_json(seq: int, epoch: int, body: bytes,
                                               kind: str) -> None:
    env = wire.sign_envelope(wire.generate_key(), wire.payload_type("fact"), body)
    prev, recorded = wire.blake3_hex(body), "2026-11-30T00:00:00.123456Z"
    fast = wire.envelope_entry_bytes(wire.EntryHeader(seq, prev, kind, recorded, epoch),
                                     wire.canonical_json(env))
    assert fast == wire.canonical_json({"seq": seq, "prev": prev, "kind": kind,
                                        "recorded_at": recorded, "epoch": epoch,
                                        "envelope": env})


@given(st.text(max_size=20), st.text(max_size=40), st.text(max_size=50), st.text(max_size=90))
@example("", "", "", "\n")  # `$` matches before a final newline: the fast path took "\n"
def test_fast_envelope_bytes_equal_canonical_json(ptype: str, payload: str, keyid: str,
                                                  sig: str) -> None:
    for p in (ptype, "application/vnd.bureau.fact.v1+json"):
        assert wire.envelope_canonical(p, payload, keyid, sig) == wire.canonical_json(
            {"payloadType": p, "payload": payload, "signatures": [{"keyid": keyid, "sig": sig}]})


@given(st.binary(max_size=400), st.binary(min_size=32, max_size=32),
       st.sampled_from(["report", "checkpoint", "fact"]))
def test_fast_signed_envelope_bytes_equal_canonical_json(body: bytes, seed: bytes,
                                                         name: str) -> None:
    """The bytes the bureau stores and serves for reports and checkpoints."""
    key = wire.signing_key_from_seed(seed)
    want = wire.canonical_json(wire.sign_envelope(key, wire.payload_type(name), body))
    assert wire.sign_envelope_bytes(key, wire.payload_type(name), body) == want
    assert wire.sign_envelope_bytes(key, wire.payload_type(name), body,
                                    key_id=wire.signing_key_id(key)) == want
    assert wire.sign_envelope_bytes(key, "text/plain; x=\"y\"", body) == wire.canonical_json(
        wire.sign_envelope(key, "text/plain; x=\"y\"", body))


@given(json_values)
def test_fast_canonical_json_equals_canonical_json(value: object) -> None:
    assert wire.canonical_json_fast(value) == wire.canonical_json(value)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_canonical_number_equals_canonical_json(x: float) -> None:
    assert wire.canonical_number(x) == wire.canonical_json(x)
