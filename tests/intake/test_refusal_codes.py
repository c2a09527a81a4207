"""Every code of the parse, verify, decode and authorize stages, produced over real HTTP
by the input that causes it — and every error body in the one shape (SPEC §5, §6)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from reporters import wire
from tests.intake.envelopes import (
    IDENTITY_POINT,
    b64,
    non_canonical_b64,
    non_canonical_s,
    signed_raw,
    with_signature,
)
from tests.support import BureauUnderTest, fact_payload, issued, kid, module_bureau, now_text

Case = Callable[[BureauUnderTest], Awaitable[tuple[int, Any]]]

# The refusal cases share one bureau: each signs with keys of its own, and nothing it
# is refused changes what another is judged against.
shared_bureau = module_bureau("bureau_refusals_", name="shared_bureau")

AGENT = wire.signing_key_id(wire.generate_key())


def good_fact(interaction: str = "i-1") -> dict[str, Any]:
    return fact_payload(interaction, AGENT)


async def _raw(b: BureauUnderTest, body: bytes, content_type: str = "application/json",
               path: str = "/v1/evidence") -> tuple[int, Any]:
    async with b.session.post(b.url + path, data=body,
                              headers={"Content-Type": content_type}) as resp:
        return resp.status, await resp.json(content_type=None)


async def _fact_env(b: BureauUnderTest, body: bytes) -> tuple[int, Any]:
    rep = await b.reporter()
    return await b.post(signed_raw(rep, "fact", body))


def _envelope_of(mutate: Callable[[dict[str, Any]], None]) -> Case:
    async def case(b: BureauUnderTest) -> tuple[int, Any]:
        rep = await b.reporter()
        env = wire.sign_payload(rep, "fact", good_fact())
        mutate(env)
        return await b.post(env)
    return case


def _payload(payload: dict[str, Any] | bytes) -> Case:
    async def case(b: BureauUnderTest) -> tuple[int, Any]:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return await _fact_env(b, body)
    return case


async def _not_json(b: BureauUnderTest) -> tuple[int, Any]:
    return await _raw(b, b"this is not json")


async def _json_array(b: BureauUnderTest) -> tuple[int, Any]:
    return await _raw(b, b"[1, 2]")


async def _too_large(b: BureauUnderTest) -> tuple[int, Any]:
    return await _raw(b, b'{"payload": "' + b"A" * 200_000 + b'"}')


async def _payload_too_large(b: BureauUnderTest) -> tuple[int, Any]:
    rep = await b.reporter()
    return await b.post(signed_raw(rep, "fact", b" " * (64 * 1024 + 1)))


async def _batch_too_many_lines(b: BureauUnderTest) -> tuple[int, Any]:
    return await _raw(b, b"{}\n" * 1001, "application/x-ndjson", "/v1/evidence/batch")


async def _wrong_media_type(b: BureauUnderTest) -> tuple[int, Any]:
    return await _raw(b, b"{}", "text/plain")


async def _batch_wrong_media_type(b: BureauUnderTest) -> tuple[int, Any]:
    return await _raw(b, b"{}\n", "application/json", "/v1/evidence/batch")


async def _unknown_type(b: BureauUnderTest) -> tuple[int, Any]:
    rep = await b.reporter()
    return await b.post(signed_raw(rep, "fact", b"{}", "application/vnd.bureau.gossip.v1+json"))


async def _no_signature(b: BureauUnderTest) -> tuple[int, Any]:
    rep = await b.reporter()
    env = wire.sign_payload(rep, "fact", good_fact())
    env["signatures"] = []
    return await b.post(env)


async def _two_signatures(b: BureauUnderTest) -> tuple[int, Any]:
    rep, other = await b.reporter(), await b.reporter()
    env = wire.sign_payload(rep, "fact", good_fact())
    env["signatures"] += wire.sign_payload(other, "fact", good_fact())["signatures"]
    return await b.post(env)


def _bad_keyid(keyid: str) -> Case:
    async def case(b: BureauUnderTest) -> tuple[int, Any]:
        rep = await b.reporter()
        return await b.post(with_signature(wire.sign_payload(rep, "fact", good_fact()),
                                           keyid=keyid))
    return case


def _bad_sig(transform: Callable[[bytes, Any], bytes]) -> Case:
    async def case(b: BureauUnderTest) -> tuple[int, Any]:
        rep = await b.reporter()
        env = wire.sign_payload(rep, "fact", good_fact())
        sig = wire.b64decode_canonical(env["signatures"][0]["sig"])
        return await b.post(with_signature(env, sig=transform(sig, rep)))
    return case


async def _non_canonical_payload_b64(b: BureauUnderTest) -> tuple[int, Any]:
    rep = await b.reporter()
    body = json.dumps(good_fact()).encode()
    while len(body) % 3 == 0:  # make sure the base64 text has padding to play with
        body += b" "
    env = signed_raw(rep, "fact", body)
    env["payload"] = non_canonical_b64(env["payload"])
    return await b.post(env)


async def _non_canonical_sig_b64(b: BureauUnderTest) -> tuple[int, Any]:
    rep = await b.reporter()
    env = wire.sign_payload(rep, "fact", good_fact())
    return await b.post(with_signature(
        env, sig_text=non_canonical_b64(env["signatures"][0]["sig"])))


def _signed_by(role: str, name: str, payload: Callable[[BureauUnderTest], dict[str, Any]]
               ) -> Case:
    """An envelope of ``name`` signed by a key of the given role."""
    async def case(b: BureauUnderTest) -> tuple[int, Any]:
        if role == "stranger":
            key = wire.generate_key()
        elif role == "probes-only":
            key = await b.reporter(roles=("probes",))
        elif role == "facts-only":
            key = await b.reporter(roles=("facts",))
        else:
            raise AssertionError(role)
        return await b.submit(key, name, payload(b))
    return case


def _enrollment(name: str = "agent") -> dict[str, Any]:
    return {"name": name, "anchor": {"kind": "domain", "value": "example.org"},
            "operator": "Example Ltd", "promises": []}


async def _already_enrolled(b: BureauUnderTest) -> tuple[int, Any]:
    agent = wire.generate_key()
    await b.accepted(agent, "enrollment", _enrollment())
    return await b.submit(agent, "enrollment", _enrollment("again"))


async def _withdrawn(b: BureauUnderTest) -> tuple[int, Any]:
    agent = wire.generate_key()
    await b.accepted(agent, "enrollment", _enrollment())
    await b.accepted(agent, "withdrawal", {"reason": "retiring"})
    return await b.submit(agent, "amendment", {"issued_at": issued(), "name": "back"})


async def _clock_skew(b: BureauUnderTest) -> tuple[int, Any]:
    rep = await b.reporter()
    return await b.submit(rep, "fact", fact_payload("i-9", AGENT, observed_at=now_text(400)))


async def _conflicting(b: BureauUnderTest) -> tuple[int, Any]:
    rep = await b.reporter()
    await b.accepted(rep, "fact", fact_payload("i-9", AGENT))
    return await b.submit(rep, "fact", fact_payload("i-9", AGENT, answered=False))


async def _no_route(b: BureauUnderTest) -> tuple[int, Any]:
    async with b.session.get(b.url + "/v1/nothing-here") as resp:
        return resp.status, await resp.json()


def _nested(depth: int) -> bytes:
    return b'{"interaction": ' + b"[" * depth + b"]" * depth + b"}"


CASES: list[tuple[str, str, int, str | None, Case]] = [
    # id, code, http status, path (None: not checked), case
    ("not-json", "MALFORMED_ENVELOPE", 400, "", _not_json),
    ("json-array", "MALFORMED_ENVELOPE", 422, "", _json_array),
    ("missing-payload", "MALFORMED_ENVELOPE", 422, "/payload",
     _envelope_of(lambda e: e.pop("payload"))),
    ("extra-field", "MALFORMED_ENVELOPE", 422, "/extra",
     _envelope_of(lambda e: e.update(extra=1))),
    ("payload-not-base64", "MALFORMED_ENVELOPE", 422, "/payload",
     _envelope_of(lambda e: e.update(payload="***"))),
    ("payload-urlsafe-base64", "MALFORMED_ENVELOPE", 422, "/payload",
     _envelope_of(lambda e: e.update(payload=e["payload"].replace("+", "-").replace("/", "_")
                                     + "-_-_"))),
    ("payload-non-canonical-base64", "MALFORMED_ENVELOPE", 422, "/payload",
     _non_canonical_payload_b64),
    ("sig-non-canonical-base64", "MALFORMED_ENVELOPE", 422, "/signatures/0/sig",
     _non_canonical_sig_b64),
    ("signature-not-object", "MALFORMED_ENVELOPE", 422, "/signatures/0",
     _envelope_of(lambda e: e.update(signatures=["x"]))),
    ("envelope-too-large", "TOO_LARGE", 413, "", _too_large),
    ("payload-too-large", "TOO_LARGE", 413, "/payload", _payload_too_large),
    ("batch-too-many-lines", "TOO_LARGE", 413, "", _batch_too_many_lines),
    ("wrong-media-type", "UNSUPPORTED_MEDIA_TYPE", 415, "", _wrong_media_type),
    ("batch-wrong-media-type", "UNSUPPORTED_MEDIA_TYPE", 415, "", _batch_wrong_media_type),
    ("unknown-payload-type", "UNKNOWN_PAYLOAD_TYPE", 422, "/payloadType", _unknown_type),
    ("no-signature", "SIGNATURE_COUNT", 422, "/signatures", _no_signature),
    ("two-signatures", "SIGNATURE_COUNT", 422, "/signatures", _two_signatures),
    ("keyid-malformed", "BAD_KEY", 422, "/signatures/0/keyid", _bad_keyid("ed25519:abc")),
    ("keyid-wrong-algorithm", "BAD_KEY", 422, "/signatures/0/keyid",
     _bad_keyid("rsa:" + "A" * 43)),
    ("keyid-small-order", "BAD_KEY", 422, "/signatures/0/keyid",
     _bad_keyid(wire.KEY_ID_PREFIX + wire.b64url_nopad(IDENTITY_POINT))),
    ("signature-wrong", "BAD_SIGNATURE", 422, "/signatures/0/sig",
     _bad_sig(lambda s, k: bytes(64))),
    ("signature-short", "BAD_SIGNATURE", 422, "/signatures/0/sig",
     _bad_sig(lambda s, k: s[:63])),
    ("signature-s-not-canonical", "BAD_SIGNATURE", 422, "/signatures/0/sig",
     _bad_sig(lambda s, k: non_canonical_s(s))),
    ("signature-without-pae", "BAD_SIGNATURE", 422, "/signatures/0/sig",
     _bad_sig(lambda s, k: k.sign(json.dumps(good_fact()).encode()).signature)),
    ("payload-not-json", "MALFORMED_PAYLOAD", 422, "", _payload(b"not json")),
    ("payload-array", "MALFORMED_PAYLOAD", 422, "", _payload(b"[]")),
    ("payload-duplicate-keys", "MALFORMED_PAYLOAD", 422, "",
     _payload(b'{"interaction": "a", "interaction": "b"}')),
    ("payload-nan", "MALFORMED_PAYLOAD", 422, "", _payload(b'{"latency_ms": NaN}')),
    ("payload-huge-exponent", "MALFORMED_PAYLOAD", 422, "", _payload(b'{"latency_ms": 1e400}')),
    ("payload-huge-integer", "MALFORMED_PAYLOAD", 422, "",
     _payload(b'{"latency_ms": ' + b"9" * 5000 + b"}")),
    ("payload-deep-nesting", "MALFORMED_PAYLOAD", 422, "", _payload(_nested(20_000))),
    ("payload-bom", "MALFORMED_PAYLOAD", 422, "",
     _payload(b"\xef\xbb\xbf" + json.dumps(good_fact()).encode())),
    ("payload-invalid-utf8", "MALFORMED_PAYLOAD", 422, "", _payload(b'{"interaction": "\xff"}')),
    ("payload-utf16", "MALFORMED_PAYLOAD", 422, "",
     _payload(json.dumps(good_fact()).encode("utf-16"))),
    ("payload-lone-surrogate", "MALFORMED_PAYLOAD", 422, "",
     _payload(b'{"interaction": "\\ud800"}')),
    ("schema-float-for-int", "SCHEMA", 422, "/latency_ms",
     _payload({**good_fact(), "latency_ms": 120.0})),
    ("schema-unknown-field", "SCHEMA", 422, "/colour", _payload({**good_fact(), "colour": 1})),
    ("schema-missing-field", "SCHEMA", 422, "/answered",
     _payload({k: v for k, v in good_fact().items() if k != "answered"})),
    ("schema-bad-identifier", "SCHEMA", 422, "/interaction",
     _payload({**good_fact(), "interaction": "-starts-with-dash"})),
    ("schema-string-for-bool", "SCHEMA", 422, "/answered",
     _payload({**good_fact(), "answered": "true"})),
    ("schema-nested-path", "SCHEMA", 422, "/promises/0/kept",
     _payload({**good_fact(), "promises": [{"promise": "p", "kept": 1}]})),
    ("schema-timestamp-offset", "SCHEMA", 422, "/observed_at",
     _payload({**good_fact(), "observed_at": "2026-11-29T23:00:00+01:00"})),
    ("not-admin", "NOT_ADMIN", 422, "",
     _signed_by("facts-only", "reporter", lambda b: {
         "reporter": AGENT, "name": "x", "operator": "y", "roles": ["facts"],
         "issued_at": issued()})),
    ("unknown-reporter", "UNKNOWN_REPORTER", 422, "",
     _signed_by("stranger", "fact", lambda b: good_fact())),
    ("missing-role-facts", "MISSING_ROLE", 422, "",
     _signed_by("probes-only", "fact", lambda b: good_fact())),
    ("missing-role-probes", "MISSING_ROLE", 422, "",
     _signed_by("facts-only", "probe", lambda b: {
         "interaction": "i-1", "subject": AGENT, "probe": "p-1", "passed": True,
         "observed_at": now_text()})),
    ("not-enrolled", "NOT_ENROLLED", 422, "",
     _signed_by("stranger", "withdrawal", lambda b: {"reason": "never was here"})),
    ("already-enrolled", "ALREADY_ENROLLED", 422, "", _already_enrolled),
    ("withdrawn", "WITHDRAWN", 422, "", _withdrawn),
    ("clock-skew", "CLOCK_SKEW", 422, "/observed_at", _clock_skew),
    ("conflicting-fact", "CONFLICTING_FACT", 422, "/interaction", _conflicting),
    ("no-such-route", "NOT_FOUND", 404, "", _no_route),
]


@pytest.mark.parametrize(("code", "status", "path", "case"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_refusal(shared_bureau: BureauUnderTest, code: str, status: int,
                       path: str | None, case: Case) -> None:
    got_status, body = await case(shared_bureau)
    assert set(body) == {"status", "code", "path", "detail"}, body
    assert body["status"] == "rejected"
    assert body["code"] == code, body
    assert got_status == status, body
    assert isinstance(body["detail"], str) and body["detail"]
    if path is not None:
        assert body["path"] == path, body


async def test_batch_lines_are_judged_independently(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    good = wire.sign_payload(rep, "fact", good_fact("b-1"))
    bad = with_signature(wire.sign_payload(rep, "fact", good_fact("b-2")), sig=bytes(64))
    results = await bureau.batch([good, b"not json", bad, b"", good])
    assert [r["index"] for r in results] == [0, 1, 2, 3, 4]
    assert [r.get("code", r["status"]) for r in results] == [
        "accepted", "MALFORMED_ENVELOPE", "BAD_SIGNATURE", "MALFORMED_ENVELOPE", "duplicate"]
    assert results[4]["id"] == results[0]["id"]


async def test_batch_line_over_envelope_limit(bureau: BureauUnderTest) -> None:
    results = await bureau.batch([b"{" + b" " * 100_000 + b"}"])
    assert results[0]["code"] == "TOO_LARGE"


async def test_batch_body_over_8_mib(bureau: BureauUnderTest) -> None:
    status, body = await _raw(bureau, b"x" * (8 * 1024 * 1024 + 10), "application/x-ndjson",
                              "/v1/evidence/batch")
    assert (status, body["code"]) == (413, "TOO_LARGE")


async def test_unavailable_when_intake_queue_is_full(database_url: str, tmp_path: Any) -> None:
    from tests.support import start_bureau

    async with start_bureau(database_url, tmp_path, max_pending=0) as b:
        status, body = await b.submit(b.admin, "reporter", {
            "reporter": AGENT, "name": "n", "operator": "o", "roles": ["facts"],
            "issued_at": issued()})
        assert (status, body["code"]) == (503, "UNAVAILABLE")
        async with b.session.post(b.url + "/v1/evidence", json=wire.sign_payload(
                b.admin, "seal", {"requested_at": now_text()})) as resp:
            assert resp.headers["Retry-After"].isdigit()


async def test_client_disconnect_mid_body_writes_nothing(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    body = json.dumps(wire.sign_payload(rep, "fact", good_fact("cut"))).encode()
    _, writer = await __import__("asyncio").open_connection(
        *bureau.url.removeprefix("http://").split(":"))
    writer.write(b"POST /v1/evidence HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body[: len(body) // 2])
    await writer.drain()
    writer.close()
    await writer.wait_closed()
    status, again = await bureau.submit(rep, "fact", good_fact("cut"))
    assert status == 201 and again["seq"] == 3, "the cut-off request wrote nothing"


def test_every_case_names_a_listed_code() -> None:
    from bureau.errors import Code

    assert {c[1] for c in CASES} <= {c.value for c in Code}


_ = (aiohttp, b64, kid)
