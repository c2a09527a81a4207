"""Hostile input at the HTTP edge, beyond tests/intake/test_refusal_codes.py: bodies cut
short, trickled (slow loris), chunked past the cap, a batch with one huge line, keys and
signatures of the wrong length or the wrong kind. Each is refused with its §6 code in the
one error shape, and nothing is ever a 500 (tests/hardening/conftest.py checks that)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import nacl.bindings
import nacl.signing
import pytest

from bureau.errors import Code
from bureau.http.routes import intake as intake_routes
from reporters import wire
from tests.hardening.support import (
    assert_error_shape,
    entry_count,
    host_port,
    json_body,
    parse_response,
    raw_exchange,
)
from tests.intake.envelopes import IDENTITY_POINT, b64, signed_raw, with_signature
from tests.support import BureauUnderTest, fact_payload, module_bureau

# One bureau for the module: every test signs with keys of its own, and a test that
# counts entries compares its own before and after.
bureau = module_bureau("bureau_hostile_")

SUBJECT = wire.signing_key_id(wire.generate_key())
#: a point of order 8 on Ed25519: adding it to a public key gives a mixed-order key
ORDER_8_POINT = bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a")
FIELD_P = 2**255 - 19


def _head(path: str, content_type: str, extra: str) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: bureau\r\nContent-Type: {content_type}\r\n"
            f"{extra}\r\n").encode()


def _env_line(env: dict[str, Any]) -> bytes:
    return json.dumps(env).encode()


# ------------------------------------------------------------------ cut-short bodies


async def test_batch_cut_short_writes_none_of_its_complete_lines(
        bureau: BureauUnderTest) -> None:
    """Content-Length promises more than is sent, then the connection closes: even the
    lines that arrived whole are not judged (a batch is judged only once it is whole)."""
    rep = await bureau.reporter()
    lines = [_env_line(wire.sign_payload(rep, "fact", fact_payload(f"cut-{i}", SUBJECT)))
             for i in range(10)]
    body = b"\n".join(lines) + b"\n"
    before = await entry_count(bureau.database_url)
    for half_close in (False, True):
        await raw_exchange(bureau, _head("/v1/evidence/batch", "application/x-ndjson",
                                         f"Content-Length: {len(body) * 2}\r\n"),
                           [body], half_close=half_close, timeout=3)
    await asyncio.sleep(0.2)
    assert await entry_count(bureau.database_url) == before
    results = await bureau.batch(lines)
    assert [r["status"] for r in results] == ["accepted"] * 10, "nothing was written before"


async def test_broken_chunked_body_is_not_a_500(bureau: BureauUnderTest) -> None:
    raw = await raw_exchange(bureau, _head("/v1/evidence", "application/json",
                                           "Transfer-Encoding: chunked\r\n"),
                             [b"5\r\n{}\n"], half_close=True, timeout=3)
    if raw:  # usually no one is left to answer; if there is an answer it is a 4xx
        assert 400 <= parse_response(raw)[0] < 500


async def test_garbled_chunk_size_is_refused(bureau: BureauUnderTest) -> None:
    raw = await raw_exchange(bureau, _head("/v1/evidence", "application/json",
                                           "Transfer-Encoding: chunked\r\n"),
                             [b"zz\r\n{}\r\n0\r\n\r\n"], timeout=5)
    assert raw, "the server answers"
    assert parse_response(raw)[0] == 400


# ------------------------------------------------------------------ keep-alive, early answers

_NEXT = b"GET /v1/bureau HTTP/1.1\r\nHost: bureau\r\n\r\n"


async def _keep_alive_exchange(bureau: BureauUnderTest, parts: list[bytes]) -> list[int]:
    """Send ``parts`` on one connection, a pause between them (so the server answers the
    first request before the rest of its body, or its chunked terminator, arrives); return
    the status of every answer read back."""
    reader, writer = await asyncio.open_connection(*host_port(bureau))
    try:
        for part in parts:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(0.2)
        statuses: list[int] = []
        while len(statuses) < 2:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            status, headers, _ = parse_response(head)
            await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), 10)
            statuses.append(status)
        return statuses
    finally:
        writer.close()


@pytest.mark.parametrize(("head", "body", "first"), [
    ("POST /v1/evidence HTTP/1.1\r\nContent-Type: text/plain\r\n"
     "Transfer-Encoding: chunked", [b"5\r\nhello\r\n", b"0\r\n\r\n"], 415),
    ("POST /v1/evidence HTTP/1.1\r\nContent-Type: text/plain\r\n"
     "Transfer-Encoding: chunked", [b"", b"0\r\n\r\n"], 415),
    ("POST /v1/evidence HTTP/1.1\r\nContent-Type: application/json\r\n"
     "Transfer-Encoding: chunked", [b"20000\r\n" + b"x" * 0x20000 + b"\r\n", b"0\r\n\r\n"], 413),
    ("GET /healthz HTTP/1.1\r\nTransfer-Encoding: chunked", [b"1\r\n0\r\n", b"0\r\n\r\n"],
     200),
    ("POST /v1/evidence HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 1", [b"0"],
     415),
    ("GET /v1/agents/%00/report HTTP/1.1\r\nContent-Length: 1", [b"0"], 404),
], ids=["415-chunked", "415-empty-chunked", "413-mid-chunked", "get-chunked",
        "415-length", "404-length"])
async def test_an_answer_before_the_body_keeps_the_connection_in_step(
        bureau: BureauUnderTest, head: str, body: list[bytes], first: int) -> None:
    """A handler that answers before reading the body (wrong type, too large, a route
    without a body) leaves the rest of it — a chunked terminator ``0``, a body ``0`` —
    to be read and dropped, never parsed as the next request on the same connection
    (issue 12: tests/hardening/test_schemathesis.py once saw ``400 Invalid method
    encountered: b'0'``)."""
    parts = [f"{head}\r\nHost: bureau\r\n\r\n".encode(), *body[:-1], body[-1] + _NEXT]
    assert await _keep_alive_exchange(bureau, parts) == [first, 200]


# ------------------------------------------------------------------ slow loris


async def _trickle(bureau: BureauUnderTest, path: str, content_type: str,
                   declared: int, interval: float, give_up: float) -> tuple[float, bytes]:
    """Declare ``declared`` bytes, then send one byte every ``interval`` s; return when
    the server answers (elapsed seconds, raw answer) or after ``give_up`` s."""
    reader, writer = await asyncio.open_connection(*host_port(bureau))
    start = time.monotonic()

    async def drip() -> None:
        writer.write(_head(path, content_type, f"Content-Length: {declared}\r\n"))
        for _ in range(declared):
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(interval)

    dripper = asyncio.create_task(drip())
    try:
        raw = b""
        try:
            async with asyncio.timeout(give_up):
                while b"\r\n\r\n" not in raw or not raw.rstrip().endswith(b"}"):
                    chunk = await reader.read(65536)
                    if not chunk:
                        break
                    raw += chunk
        except TimeoutError:
            pass
        return time.monotonic() - start, raw
    finally:
        dripper.cancel()
        await asyncio.gather(dripper, return_exceptions=True)
        writer.close()


@pytest.mark.parametrize(("path", "content_type"), [
    ("/v1/evidence", "application/json"), ("/v1/evidence/batch", "application/x-ndjson")])
async def test_slow_loris_upload_is_cut_off(bureau: BureauUnderTest, path: str,
                                            content_type: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A body trickled a byte a second is cut off by the server's body deadline
    (``intake_routes.BODY_TIMEOUT_SECONDS``, 60 s in service; 2 s here) and answered
    ``408 MALFORMED_ENVELOPE`` in the one error shape."""
    monkeypatch.setattr(intake_routes, "BODY_TIMEOUT_SECONDS", 2.0)
    elapsed, raw = await _trickle(bureau, path, content_type, declared=1000, interval=1.0,
                                  give_up=10)
    assert raw, f"no answer after {elapsed:.1f} s: the trickle was never cut off"
    status, headers, body = parse_response(raw)
    assert_error_shape(status, json_body(body, headers), "MALFORMED_ENVELOPE", (408,))
    assert 1.5 < elapsed < 6, elapsed


# ------------------------------------------------------------------ over the caps


async def _chunked_post(bureau: BureauUnderTest, path: str, content_type: str,
                        total: int, chunk: int) -> tuple[int, Any]:
    part = b"x" * chunk
    parts = [b"%x\r\n" % chunk + part + b"\r\n" for _ in range(total // chunk)] + [b"0\r\n\r\n"]
    raw = await raw_exchange(bureau, _head(path, content_type, "Transfer-Encoding: chunked\r\n"),
                             parts, timeout=10)
    status, headers, body = parse_response(raw)
    return status, json_body(body, headers)


async def test_chunked_envelope_over_the_cap_is_too_large(bureau: BureauUnderTest) -> None:
    """No Content-Length to check up front: the streamed body is counted as it comes."""
    assert_error_shape(*await _chunked_post(bureau, "/v1/evidence", "application/json",
                                            200 * 1024, 8 * 1024), "TOO_LARGE", (413,))


async def test_chunked_batch_over_8_mib_is_too_large(bureau: BureauUnderTest) -> None:
    assert_error_shape(*await _chunked_post(bureau, "/v1/evidence/batch",
                                            "application/x-ndjson", 9 * 1024 * 1024,
                                            256 * 1024), "TOO_LARGE", (413,))


async def test_huge_declared_content_length_is_refused_before_reading(
        bureau: BureauUnderTest) -> None:
    raw = await raw_exchange(bureau, _head("/v1/evidence/batch", "application/x-ndjson",
                                           f"Content-Length: {10**15}\r\n"), timeout=5)
    status, headers, body = parse_response(raw)
    assert_error_shape(status, json_body(body, headers), "TOO_LARGE", (413,))


async def test_batch_with_one_huge_line_refuses_only_that_line(bureau: BureauUnderTest) -> None:
    """A 7.5 MiB line fits the batch cap but not the envelope cap: that line is
    ``TOO_LARGE``; the next line is judged on its own and admitted."""
    rep = await bureau.reporter()
    huge = b'{"payload": "' + b"A" * (7 * 1024 * 1024 + 512 * 1024) + b'"}'
    good = wire.sign_payload(rep, "fact", fact_payload("after-huge", SUBJECT))
    results = await bureau.batch([huge, good])
    assert [r.get("code", r["status"]) for r in results] == ["TOO_LARGE", "accepted"]


# ------------------------------------------------------------------ keys and signatures


def _keyid_of(raw: bytes) -> str:
    return wire.KEY_ID_PREFIX + wire.b64url_nopad(raw)


def _non_canonical_y(point: bytes) -> bytes:
    """The same x-sign with y + p: an encoding of y that is not reduced mod p (only
    possible for y < 19; here the identity's y = 1 becomes p + 1)."""
    y = int.from_bytes(point, "little") & ((1 << 255) - 1)
    return (y + FIELD_P).to_bytes(32, "little")


def _bad_key_cases(key: nacl.signing.SigningKey) -> dict[str, str]:
    public = bytes(key.verify_key)
    valid = wire.signing_key_id(key)
    return {
        "key-31-bytes": _keyid_of(public[:31]),
        "key-33-bytes": _keyid_of(public + b"\x00"),
        "key-64-bytes": _keyid_of(bytes(key) + public),
        "key-empty": wire.KEY_ID_PREFIX,
        "key-padded-base64url": valid + "=",
        # a character of the standard alphabet that base64url does not have
        "key-standard-base64": valid[:12] + "+" + valid[13:],
        "key-uppercase-prefix": valid.replace("ed25519:", "ED25519:"),
        "key-no-prefix": valid.removeprefix("ed25519:"),
        "key-trailing-space": valid + " ",
        # regression: a non-ASCII key id was a 500 (the content key hashed it as ASCII);
        # found by tests/hardening/test_schemathesis.py
        "key-non-ascii": valid[:-1] + "é",
        "key-small-order": _keyid_of(IDENTITY_POINT),
        "key-mixed-order": _keyid_of(nacl.bindings.crypto_core_ed25519_add(public,
                                                                           ORDER_8_POINT)),
        "key-non-canonical-y": _keyid_of(_non_canonical_y(IDENTITY_POINT)),
        "key-not-on-curve": _keyid_of(bytes([2]) + bytes(31)),
    }


def _cases(rep: nacl.signing.SigningKey, other: nacl.signing.SigningKey
           ) -> list[tuple[str, dict[str, Any] | bytes, str]]:
    """(name, line, expected code) — one batch line each."""
    fact = fact_payload("hostile-1", SUBJECT)
    body = json.dumps(fact).encode()
    good = wire.sign_payload(rep, "fact", fact)
    sig = wire.b64decode_canonical(good["signatures"][0]["sig"])
    ptype = wire.payload_type("fact")
    out: list[tuple[str, dict[str, Any] | bytes, str]] = [
        (name, with_signature(good, keyid=keyid), "BAD_KEY")
        for name, keyid in _bad_key_cases(rep).items()]

    def sig_case(name: str, s: bytes) -> None:
        out.append((name, with_signature(good, sig=s), "BAD_SIGNATURE"))

    sig_case("sig-empty", b"")
    sig_case("sig-32-bytes", sig[:32])
    sig_case("sig-65-bytes", sig + b"\x00")
    sig_case("sig-128-bytes", sig + sig)
    sig_case("sig-by-another-key", other.sign(wire.pae(ptype, body)).signature)
    sig_case("sig-over-another-type", rep.sign(wire.pae(wire.payload_type("probe"),
                                                       body)).signature)
    sig_case("sig-pae-length-off-by-one", rep.sign(
        b"DSSEv1 %d %s %d %s" % (len(ptype), ptype.encode(), len(body) + 1, body)).signature)
    sig_case("sig-small-order-r", IDENTITY_POINT + sig[32:])
    sig_case("sig-all-ones", b"\xff" * 64)
    out += [
        ("sig-not-a-string", {**good, "signatures": [{"keyid": good["signatures"][0]["keyid"],
                                                      "sig": 5}]}, "MALFORMED_ENVELOPE"),
        ("keyid-not-a-string", {**good, "signatures": [{"keyid": None,
                                                        "sig": b64(sig)}]},
         "MALFORMED_ENVELOPE"),
        ("sig-base64url", with_signature(good, sig_text=b64(sig).replace("+", "-")
                                         .replace("/", "_") + "-_"), "MALFORMED_ENVELOPE"),
        ("sig-unpadded", with_signature(good, sig_text=b64(sig).rstrip("=")),
         "MALFORMED_ENVELOPE"),
        ("sig-with-newline", with_signature(good, sig_text=b64(sig)[:40] + "\\n"
                                            + b64(sig)[40:]), "MALFORMED_ENVELOPE"),
        ("many-signatures", {**good, "signatures": good["signatures"] * 500},
         "SIGNATURE_COUNT"),
        ("type-trailing-space", {**good, "payloadType": ptype + " "}, "UNKNOWN_PAYLOAD_TYPE"),
        ("type-other-case", {**good, "payloadType": ptype.upper()}, "UNKNOWN_PAYLOAD_TYPE"),
        ("type-v2", {**good, "payloadType": ptype.replace(".v1+", ".v2+")},
         "UNKNOWN_PAYLOAD_TYPE"),
        ("payload-empty", signed_raw(rep, "fact", b""), "MALFORMED_PAYLOAD"),
        ("payload-nul", signed_raw(rep, "fact", body.replace(b'"hostile-1"',
                                                              b'"hostile\\u0000"')), "SCHEMA"),
        ("envelope-duplicate-keys",
         b'{"payloadType": "x", "payloadType": "%s", "payload": "%s", "signatures": []}'
         % (ptype.encode(), good["payload"].encode()), "MALFORMED_ENVELOPE"),
        ("envelope-nan", b'{"payloadType": NaN}', "MALFORMED_ENVELOPE"),
        ("envelope-deep", b"[" * 40_000 + b"]" * 40_000, "MALFORMED_ENVELOPE"),
        ("envelope-huge-int", b'{"payload": ' + b"1" * 5000 + b"}", "MALFORMED_ENVELOPE"),
        ("envelope-latin1", '{"payloadType": "é"}'.encode("latin-1"), "MALFORMED_ENVELOPE"),
        ("envelope-null", b"null", "MALFORMED_ENVELOPE"),
        ("envelope-string", b'"' + good["payload"].encode() + b'"', "MALFORMED_ENVELOPE"),
    ]
    return out


async def test_wrong_keys_and_signatures_each_get_their_code(bureau: BureauUnderTest) -> None:
    """One batch, one hostile envelope a line: each line is refused with its own code,
    with the error shape plus ``index``, and nothing is written."""
    rep, other = await bureau.reporter(), await bureau.reporter()
    cases = _cases(rep, other)
    before = await entry_count(bureau.database_url)
    results = await bureau.batch([line for _, line, _ in cases])
    assert len(results) == len(cases)
    listed = {c.value for c in Code}
    for (name, _, code), result in zip(cases, results, strict=True):
        assert set(result) == {"status", "code", "path", "detail", "index"}, (name, result)
        assert result["code"] in listed, (name, result)
        assert result["code"] == code, (name, result)
    assert await entry_count(bureau.database_url) == before


@pytest.mark.parametrize("name", ["key-33-bytes", "key-mixed-order", "key-non-canonical-y"])
async def test_bad_keys_over_the_single_route(bureau: BureauUnderTest, name: str) -> None:
    rep = await bureau.reporter()
    env = with_signature(wire.sign_payload(rep, "fact", fact_payload("k-1", SUBJECT)),
                         keyid=_bad_key_cases(rep)[name])
    status, body = await bureau.post(env)
    assert_error_shape(status, body, "BAD_KEY", (422,))
    assert body["path"] == "/signatures/0/keyid"


async def test_every_error_answer_says_json(bureau: BureauUnderTest) -> None:
    """Errors are JSON whatever the request asked for (Accept is ignored)."""
    transforms: list[Callable[[dict[str, str]], None]] = [
        lambda h: h.update(Accept="text/html"), lambda h: h.update(Accept="*/*")]
    for change in transforms:
        headers = {"Content-Type": "application/json"}
        change(headers)
        async with bureau.session.post(bureau.url + "/v1/evidence", data=b"{",
                                       headers=headers) as resp:
            assert resp.content_type == "application/json"
            assert_error_shape(resp.status, await resp.json(), "MALFORMED_ENVELOPE", (400,))
