"""Helpers for the reads tests: signed GETs, and a small world of parties and evidence."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import nacl.signing
import yarl

from reporters.httpsig import REQUIRED_COMPONENTS, signed_get
from tests import support
from tests.support import BureauUnderTest, fact_payload, interaction_id, kid, lib_signed_headers
from tests.support import attestation as attestation  # re-exported for these tests

Key = nacl.signing.SigningKey
ERROR_FIELDS = {"status", "code", "path", "detail"}


def lib_headers(key: Key, url: str, *, kid_: str | None = None, created: int | None = None,
                nonce: str | None = None,
                components: tuple[str, ...] = REQUIRED_COMPONENTS) -> dict[str, str]:
    """Sign a GET with the library's own signer, not the project's wrapper: now, with a
    fresh nonce, unless told otherwise."""
    return lib_signed_headers(
        key, url, keyid=kid_, components=components,
        created=created if created is not None else int(time.time()),
        nonce=nonce if nonce is not None else secrets.token_urlsafe(16))


async def get_raw(bureau: BureauUnderTest, path_qs: str,
                  headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """GET ``path_qs`` exactly as written (no re-encoding); JSON body when there is one."""
    async with bureau.session.get(yarl.URL(bureau.url + path_qs, encoded=True),
                                  headers=headers or {}) as resp:
        raw = await resp.read()
        if resp.content_type == "application/json":
            return resp.status, json.loads(raw)
        return resp.status, raw.decode("utf-8", "replace")


async def get_signed(bureau: BureauUnderTest, key: Key, path_qs: str) -> tuple[int, Any]:
    """GET ``path_qs`` signed by ``key`` with the project's client helper."""
    async with signed_get(bureau.session, key, bureau.url + path_qs) as resp:
        return resp.status, await resp.json()


def assert_error(status: int, body: Any, expected_status: int, code: str,
                 path: str = "") -> None:
    assert status == expected_status, body
    assert isinstance(body, dict) and set(body) == ERROR_FIELDS, body
    assert body["status"] == "rejected" and body["code"] == code, body
    assert body["path"] == path, body


def enrollment(operator: str | None = None) -> dict[str, Any]:
    return support.enrollment(operator=operator or None)


async def enroll(bureau: BureauUnderTest, operator: str | None = None) -> Key:
    return await support.enroll(bureau, enrollment(operator))


async def fact(bureau: BureauUnderTest, reporter: Key, subject: Key,
               caller: Key | None = None) -> tuple[str, int]:
    """A new fact; returns (interaction, seq)."""
    ia = interaction_id()
    body = await bureau.accepted(reporter, "fact", fact_payload(
        ia, kid(subject), kid(caller) if caller else None))
    return ia, int(body["seq"])


async def read_all(bureau: BureauUnderTest, reader: Key, base: str,
                   limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every entry and refusal of a file, page by page, as docs/reading.md says to:
    each cursor is the last seq (ref) already held."""
    entries: list[dict[str, Any]] = []
    refusals: list[dict[str, Any]] = []
    after, ref_after = 0, 0
    while True:
        status, page = await get_signed(
            bureau, reader, f"{base}?after={after}&limit={limit}&refusals_after={ref_after}")
        assert status == 200, page
        assert len(page["entries"]) <= limit and len(page["refusals"]) <= limit
        entries += page["entries"]
        refusals += page["refusals"]
        if page["entries"]:
            after = page["entries"][-1]["seq"]
        if page["refusals"]:
            ref_after = page["refusals"][-1]["ref"]
        if page["next_after"] is None and page["next_refusals_after"] is None:
            return entries, refusals
