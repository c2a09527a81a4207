"""RFC 9421 over real HTTP: requests signed by http_message_signatures' own signer."""

from __future__ import annotations

import base64
import time

import pytest

from reporters import wire
from tests.intake.envelopes import non_canonical_s
from tests.reads.support import Key, assert_error, enroll, get_raw, lib_headers
from tests.support import BureauUnderTest, kid


@pytest.fixture(scope="module")
async def agent(bureau: BureauUnderTest) -> Key:
    return await enroll(bureau)


def _path(key: Key, query: str = "?after=0&limit=5") -> str:
    return f"/v1/agents/{kid(key)}/entries{query}"


async def test_library_signature_is_accepted(bureau: BureauUnderTest, agent: Key) -> None:
    path = _path(agent)
    status, body = await get_raw(bureau, path, lib_headers(agent, bureau.url + path))
    assert status == 200, body
    assert [e["kind"] for e in body["entries"]] == ["enrollment"]


async def test_origin_form_signature_is_accepted(bureau: BureauUnderTest, agent: Key) -> None:
    path = _path(agent, "")  # no query at all: "@query" is "?"
    status, body = await get_raw(bureau, path, lib_headers(agent, "http://any.host" + path))
    assert status == 200, body


async def test_another_valid_party_is_403(bureau: BureauUnderTest, agent: Key) -> None:
    other = await enroll(bureau)
    path = _path(agent)
    assert_error(*await get_raw(bureau, path, lib_headers(other, bureau.url + path)),
                 403, "FORBIDDEN")


async def test_signature_not_matching_the_keyid_is_401(bureau: BureauUnderTest,
                                                       agent: Key) -> None:
    path = _path(agent)
    forged = lib_headers(wire.generate_key(), bureau.url + path, kid_=kid(agent))
    assert_error(*await get_raw(bureau, path, forged), 401, "UNAUTHENTICATED")


@pytest.mark.parametrize("components", [("@method", "@path"), ("@path", "@query"),
                                        ("@method", "@query")])
async def test_missing_component_is_401(bureau: BureauUnderTest, agent: Key,
                                        components: tuple[str, ...]) -> None:
    path = _path(agent)
    headers = lib_headers(agent, bureau.url + path, components=components)
    assert_error(*await get_raw(bureau, path, headers), 401, "UNAUTHENTICATED")


# A stale one only grows staler on its way; a future one nears the 60 s allowance while
# it travels (and int() drops up to a second): -61 was accepted on a loaded machine.
@pytest.mark.parametrize("age", [301, 3600, -75])
async def test_stale_or_future_created_is_401(bureau: BureauUnderTest, agent: Key,
                                              age: int) -> None:
    path = _path(agent)
    headers = lib_headers(agent, bureau.url + path, created=int(time.time()) - age)
    status, body = await get_raw(bureau, path, headers)
    assert_error(status, body, 401, "UNAUTHENTICATED")
    assert "created" in body["detail"] or "old" in body["detail"]


async def test_replayed_nonce_is_401(bureau: BureauUnderTest, agent: Key) -> None:
    path = _path(agent)
    headers = lib_headers(agent, bureau.url + path)
    status, _ = await get_raw(bureau, path, headers)
    assert status == 200
    status, body = await get_raw(bureau, path, headers)
    assert_error(status, body, 401, "UNAUTHENTICATED")
    assert "nonce" in body["detail"]


async def test_refused_request_does_not_use_up_its_nonce(bureau: BureauUnderTest,
                                                         agent: Key) -> None:
    path = _path(agent)
    headers = lib_headers(agent, bureau.url + path, nonce="once-only-" + kid(agent)[8:20])
    status, _ = await get_raw(bureau, _path(agent, "?after=1&limit=5"), headers)
    assert status == 401
    status, body = await get_raw(bureau, path, headers)
    assert status == 200, body


async def test_tampered_query_is_401(bureau: BureauUnderTest, agent: Key) -> None:
    headers = lib_headers(agent, bureau.url + _path(agent, "?after=0&limit=5"))
    assert_error(*await get_raw(bureau, _path(agent, "?after=1&limit=5"), headers),
                 401, "UNAUTHENTICATED")


async def test_signature_moved_to_another_path_is_401(bureau: BureauUnderTest,
                                                      agent: Key) -> None:
    victim = await enroll(bureau)
    headers = lib_headers(agent, bureau.url + _path(agent))
    assert_error(*await get_raw(bureau, _path(victim), headers), 401, "UNAUTHENTICATED")


async def test_unsigned_and_garbled_requests_are_401(bureau: BureauUnderTest,
                                                     agent: Key) -> None:
    path = _path(agent)
    assert_error(*await get_raw(bureau, path), 401, "UNAUTHENTICATED")
    good = lib_headers(agent, bureau.url + path)
    for headers in ({"Signature": good["Signature"]},
                    {"Signature-Input": good["Signature-Input"]},
                    {**good, "Signature": "sig1=:AAAA:"},
                    {**good, "Signature-Input": "not a dictionary ((("}):
        assert_error(*await get_raw(bureau, path, headers), 401, "UNAUTHENTICATED")


async def test_small_order_keyid_is_401(bureau: BureauUnderTest) -> None:
    identity = wire.KEY_ID_PREFIX + wire.b64url_nopad(bytes([1]) + bytes(31))
    path = f"/v1/agents/{identity}/entries"
    headers = lib_headers(wire.generate_key(), bureau.url + path, kid_=identity)
    assert_error(*await get_raw(bureau, path, headers), 401, "UNAUTHENTICATED")


async def test_a_non_canonical_signature_is_401(bureau: BureauUnderTest, agent: Key) -> None:
    """S + L satisfies the same equation as S: another spelling of the same signature.
    Refused, as in envelopes (libsodium); the genuine one then reads with its nonce."""
    path = _path(agent)
    headers = lib_headers(agent, bureau.url + path)
    label, _, value = headers["Signature"].partition("=")
    sig = base64.b64decode(value.strip(":"))
    spelt = base64.b64encode(non_canonical_s(sig)).decode()
    assert_error(*await get_raw(bureau, path, {**headers, "Signature": f"{label}=:{spelt}:"}),
                 401, "UNAUTHENTICATED")
    status, body = await get_raw(bureau, path, headers)
    assert status == 200, body
