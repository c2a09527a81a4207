"""Helpers for the agents-and-evaluators tests: agents, evidence payloads, and reading
back what the bureau stored (entries, refusals) straight from its database."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import asyncpg
import nacl.signing

from reporters import wire
from tests import support
from tests.support import BureauUnderTest, fact_payload, kid
from tests.support import attestation as attestation  # re-exported for these tests
from tests.support import interaction_id as interaction_id

Key = nacl.signing.SigningKey


# --------------------------------------------------------------------------- payloads


def enrollment(operator: str | None = None, anchor: tuple[str, str] | None = None,
               name: str = "an agent") -> dict[str, Any]:
    """An enrollment with, by default, an operator and an anchor no one else shares."""
    return support.enrollment(name, operator=operator, anchor=anchor, promises=[
        {"promise": "p95-under-2s", "description": "answers fast"}])


UNITS = [{"unit": "hour", "quantity": 3}]


def _units(units: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """``units``, or a fresh copy of UNITS: a test that edits a payload in place (the
    hostile-text tests do) must not edit UNITS for every test after it."""
    return units if units is not None else [dict(u) for u in UNITS]


def engagement(engagement_id: str, spent: int = 2_000_000, *,
               arrangement: str = "TIME_AND_MATERIALS", currency: str = "USD",
               units: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"id": engagement_id, "arrangement": arrangement, "cap": 10_000_000,
            "spent": spent, "currency": currency, "units": _units(units),
            "concluded": None}


def value_judgment(reporter: Key, engagement_id: str, subject: Key, spent: int = 2_000_000,
                   *, currency: str = "USD", units: list[dict[str, Any]] | None = None,
                   judgment: str = "VALUE_OK") -> dict[str, Any]:
    return {"reporter": kid(reporter), "engagement": engagement_id, "subject": kid(subject),
            "judgment": judgment, "spent": spent, "currency": currency,
            "units": _units(units)}


# --------------------------------------------------------------------------- actions


async def enroll(bureau: BureauUnderTest, operator: str | None = None,
                 anchor: tuple[str, str] | None = None) -> Key:
    """A new key, enrolled as an agent."""
    return await support.enroll(bureau, enrollment(operator, anchor))


async def witness(bureau: BureauUnderTest, reporter: Key, subject: Key, caller: Key | None,
                  interaction: str | None = None, **fields: Any) -> str:
    """Have ``reporter`` record a fact of a new interaction; returns its id."""
    ia = interaction if interaction is not None else interaction_id()
    await bureau.accepted(reporter, "fact", fact_payload(
        ia, kid(subject), kid(caller) if caller is not None else None, **fields))
    return ia


async def refused(bureau: BureauUnderTest, key: Key, name: str,
                  payload: dict[str, Any]) -> tuple[str, str]:
    """Submit and expect a 422; returns (code, path)."""
    status, body = await bureau.submit(key, name, payload)
    assert status == 422, body
    assert body["status"] == "rejected", body
    return body["code"], body["path"]


# --------------------------------------------------------------------------- the database


@dataclass(frozen=True)
class StoredEntry:
    seq: int
    id: str
    kind: str
    signer: str | None
    subject: str | None
    doc: dict[str, Any]  # the entry without its id, as hashed

    @property
    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = self.doc["body"]
        return body

    @property
    def payload(self) -> dict[str, Any]:
        """The decoded payload of an entry that holds an envelope."""
        raw = wire.b64decode_canonical(self.doc["envelope"]["payload"])
        payload: dict[str, Any] = json.loads(raw)
        return payload


async def stored_entries(bureau: BureauUnderTest, kind: str | None = None
                         ) -> list[StoredEntry]:
    """Every entry in the ledger (of ``kind``, when given), in seq order."""
    conn = await asyncpg.connect(bureau.database_url)
    try:
        rows = await conn.fetch(
            "SELECT seq, id, kind, signer, subject, entry FROM entries"
            " WHERE $1::text IS NULL OR kind = $1 ORDER BY seq", kind)
    finally:
        await conn.close()
    return [StoredEntry(r["seq"], r["id"], r["kind"], r["signer"], r["subject"],
                        json.loads(bytes(r["entry"]))) for r in rows]


async def stored_refusals(bureau: BureauUnderTest) -> list[tuple[str, str]]:
    """(signer, code) of every refusal kept, in the order they were kept."""
    conn = await asyncpg.connect(bureau.database_url)
    try:
        rows = await conn.fetch("SELECT signer, code FROM refusals ORDER BY ref")
    finally:
        await conn.close()
    return [(r["signer"], r["code"]) for r in rows]


async def head_seq(bureau: BureauUnderTest) -> int:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        seq: int = await conn.fetchval("SELECT seq FROM ledger_head")
    finally:
        await conn.close()
    return seq
