"""Refusal storage is bounded (SPEC §5 r2; issue 12, "an enrolled agent can store
arbitrary bytes forever"): a decode-stage refusal keeps only the content key, code, path
and time; any other refusal keeps its envelope for the first 1,000 refusals of its
signer in an epoch, then only those four fields. The signer's file, and the client
library's read models, show both kinds."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import pytest

import reporters
from bureau.intake import refusals
from reporters import wire
from tests.agents.support import enroll, interaction_id
from tests.support import BureauUnderTest, fact_payload, issued, kid


async def _kept(bureau: BureauUnderTest, signer: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        return await conn.fetch(
            "SELECT content_key, code, path, detail, envelope, refused_at FROM refusals"
            " WHERE signer = $1 ORDER BY ref", signer)
    finally:
        await conn.close()


async def test_a_60_kb_junk_amendment_is_refused_and_its_record_holds_no_envelope(
        bureau: BureauUnderTest) -> None:
    agent = await enroll(bureau)
    payload = {"issued_at": issued(), "name": "a name", "junk": "x" * 60_000}
    env = wire.sign_payload(agent, "amendment", payload)
    status, body = await bureau.post(env)
    assert (status, body["code"], body["path"]) == (422, "SCHEMA", "/junk")
    [row] = await _kept(bureau, kid(agent))
    body_bytes = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    assert row["content_key"] == wire.content_key(kid(agent), wire.payload_type("amendment"),
                                                  wire.b64decode_canonical(env["payload"]))
    assert len(body_bytes) > 60_000
    assert (row["code"], row["path"], row["detail"], row["envelope"]) == (
        "SCHEMA", "/junk", None, None)
    async with reporters.Agent(agent, bureau.url) as client:
        page = await client.entries()
    [refusal] = page.refusals
    assert (refusal.code, refusal.path, refusal.envelope, refusal.detail, refusal.payload) == (
        "SCHEMA", "/junk", None, None, None)
    assert refusal.content_key == row["content_key"]
    assert refusal.raw["envelope"] is None


async def test_a_malformed_payload_keeps_no_envelope_either(bureau: BureauUnderTest) -> None:
    agent = await enroll(bureau)
    env = wire.sign_envelope(agent, wire.payload_type("amendment"),
                             b'{"issued_at": "' + b"y" * 50_000)
    status, body = await bureau.post(env)
    assert (status, body["code"]) == (422, "MALFORMED_PAYLOAD")
    [row] = await _kept(bureau, kid(agent))
    assert (row["code"], row["detail"], row["envelope"]) == ("MALFORMED_PAYLOAD", None, None)


def _conflicts(rep: Any, n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``n`` facts, and ``n`` different facts for the same interactions (each refused
    CONFLICTING_FACT, a refusal that keeps its envelope)."""
    ias = [interaction_id() for _ in range(n)]
    subject = kid(reporters.generate_key())
    first = [wire.sign_payload(rep, "fact", fact_payload(ia, subject)) for ia in ias]
    second = [wire.sign_payload(rep, "fact", fact_payload(ia, subject, latency_ms=9))
              for ia in ias]
    return first, second


async def test_other_refusals_keep_their_envelope_up_to_the_budget_of_the_epoch(
        bureau: BureauUnderTest, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the budget lowered to 3: of 6 refusals of one signer in an epoch (some in
    one batch, some alone), the first 3 keep envelope and detail, the others only the
    four fields; another signer has a budget of its own."""
    monkeypatch.setattr(refusals, "MAX_ENVELOPES_PER_EPOCH", 3)
    rep, other = await bureau.reporter(), await bureau.reporter()
    first, second = _conflicts(rep, 6)
    await bureau.batch(first)
    await bureau.post(second[0])
    lines = await bureau.batch(second[1:5])
    assert {line["code"] for line in lines} == {"CONFLICTING_FACT"}
    await bureau.post(second[5])
    rows = await _kept(bureau, kid(rep))
    assert [r["envelope"] is not None for r in rows] == [True] * 3 + [False] * 3
    assert [r["detail"] is not None for r in rows] == [True] * 3 + [False] * 3
    assert all(r["code"] == "CONFLICTING_FACT" and r["path"] == "/interaction" for r in rows)
    kept = json.loads(rows[0]["envelope"])
    assert kept == second[0]
    other_first, other_second = _conflicts(other, 1)
    await bureau.post(other_first[0])
    await bureau.post(other_second[0])
    [row] = await _kept(bureau, kid(other))
    assert row["envelope"] is not None
    async with reporters.Reporter(rep, bureau.url, bureau.config.home / "spool") as client:
        page = await client.entries()
    assert [r.envelope is not None for r in page.refusals] == [True] * 3 + [False] * 3
    assert page.refusals[0].payload is not None and page.refusals[5].payload is None
