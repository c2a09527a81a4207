"""``bureau rebuild`` (SPEC §1.4, §10): every view and report re-derived from the
entries alone comes out byte-identical — called as a function and as the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from bureau.evidence.entries import EntrySpan, decode_entry, read_items
from bureau.scoring.inputs import ReporterUpdate
from bureau.storage.reports import seals
from bureau.views.rebuild import rebuild
from bureau.views.reference import reference_reports
from reporters import wire
from tests.support import BureauUnderTest, issued, kid
from tests.views.support import World, get, next_epoch, now_text


async def busy_ledger(bureau: BureauUnderTest) -> World:
    """Three epochs of everything: engagements, value judgments, probes, a dispute
    upheld as EXCLUDED and a self-dealing link revealed by an amendment."""
    w = await World.make(bureau)
    a, b = await w.agent("alpha"), await w.agent("beta")
    e1, e2 = await w.agent("evaluator one"), await w.agent("evaluator two")
    for i in range(4):
        ia = await w.fact(a, e1, check="PASS" if i % 2 else "FAIL")
        await w.attest(e1, ia, a, "ACCEPTED" if i % 2 else "FAILED_DISCOVERED")
    disputed = await bureau.accepted(w.reporter, "fact", {
        **_fact(w, b, None), "answered": False, "latency_ms": None})
    await w.probe(b, True)
    await next_epoch(bureau)

    eng = {"id": "eng-1", "arrangement": "TIME_AND_MATERIALS", "cap": 10_000_000,
           "spent": 3_000_000, "currency": "USD", "units": [{"unit": "hour", "quantity": 3}],
           "concluded": "COMPLETED"}
    await bureau.accepted(w.reporter, "fact", {**_fact(w, b, e2), "engagement": eng})
    await bureau.accepted(e2, "value-judgment", {
        "reporter": kid(w.reporter), "engagement": "eng-1", "subject": kid(b),
        "judgment": "VALUE_OK", "spent": 3_000_000, "currency": "USD",
        "units": [{"unit": "hour", "quantity": 3}]})
    ia = await w.fact(b, e2)
    await w.attest(e2, ia, b, "ACCEPTED_AFTER_CORRECTIONS", corrections=1)
    dispute = await bureau.accepted(b, "dispute", {"entry": disputed["id"],
                                                   "reason": "that was not me"})
    await bureau.accepted(bureau.admin, "resolution", {
        "dispute": dispute["id"], "decision": "EXCLUDED", "reason": "reporter misrouted"})
    await next_epoch(bureau)

    b_operator = await _operator(bureau, kid(b))
    await bureau.accepted(e2, "amendment", {
        "issued_at": issued(), "operator": b_operator, "name": "renamed"})
    await w.probe(a, False)
    await next_epoch(bureau)
    return w


def _fact(w: World, subject: object, caller: object) -> dict[str, object]:
    from tests.support import fact_payload

    return fact_payload(w.interaction(), kid(subject),  # type: ignore[arg-type]
                        kid(caller) if caller is not None else None)  # type: ignore[arg-type]


async def _operator(bureau: BureauUnderTest, agent: str) -> str:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        op: str = await conn.fetchval("SELECT operator FROM agents WHERE key = $1", agent)
    finally:
        await conn.close()
    return op


async def test_rebuild_gives_identical_bytes(bureau: BureauUnderTest, tmp_path: Path) -> None:
    await busy_ledger(bureau)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        kinds = {r["kind"] for r in await conn.fetch("SELECT DISTINCT kind FROM entries")}
        assert {"exclusion", "seal", "value-judgment", "resolution"} <= kinds
        reasons = {json.loads(r["entry"])["body"]["reason"] for r in await conn.fetch(
            "SELECT entry FROM entries WHERE kind = 'exclusion'")}
        assert reasons == {"self_dealing", "disputed"}

        result = await rebuild(conn, bureau.signing_key, bureau.log_key)
        assert result.identical, result.differences
        assert result.epochs == 3 and result.reports > 0

        # Every stored epoch also equals the reference (whole-ledger) derivation.
        for seal in await seals(conn):
            stored = {r["agent"]: json.loads(r["envelope"])["payload"] for r in await conn.fetch(
                "SELECT agent, envelope FROM reports WHERE epoch = $1", seal.epoch)}
            want = {a: wire.b64encode(p) for a, p in await reference_reports(conn, seal)}
            assert stored == want

        # A tampered report and a tampered index are found, named, and put right.
        await conn.execute("UPDATE reports SET envelope = '{}' WHERE agent = (SELECT min(agent)"
                           " FROM reports) AND epoch = (SELECT min(epoch) FROM reports)")
        await conn.execute("UPDATE agents SET name = 'forged' WHERE name = 'alpha'")
        result = await rebuild(conn, bureau.signing_key, bureau.log_key)
        assert not result.identical
        assert any(d.startswith("reports: epoch=") and "different bytes" in d
                   for d in result.differences)
        assert any(d.startswith("agents: ") for d in result.differences)
        assert (await rebuild(conn, bureau.signing_key, bureau.log_key)).identical
    finally:
        await conn.close()


@pytest.mark.slow
async def test_rebuild_and_report_commands(bureau: BureauUnderTest, tmp_path: Path) -> None:
    w = await busy_ledger(bureau)
    key_file = tmp_path / "signing.key"
    key_file.write_text(wire.key_to_pem(bureau.signing_key))
    env = {"BUREAU_DATABASE_URL": bureau.database_url, "BUREAU_SIGNING_KEY": str(key_file),
           "BUREAU_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "bureau.cli", "rebuild"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "identical" in done.stdout

    agent = next(a for a, name in w.names.items() if name == "alpha")
    done = subprocess.run([sys.executable, "-m", "bureau.cli", "report", agent], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    _, body = await get(bureau, f"/v1/agents/{agent}/report")
    payload = json.loads(wire.b64decode_canonical(json.loads(body)["payload"]))
    assert f"{payload['score']['value']:.6f}" in done.stdout
    assert "alpha" in done.stdout and "probes     passed 0, failed 1" in done.stdout
    assert f"first seen epoch {payload['first_seen_epoch']}" in done.stdout
    assert "from ground truth" in done.stdout and "distrusted 0" in done.stdout

    other = subprocess.run([sys.executable, "-m", "bureau.cli", "rebuild"],
                           env={**env, "BUREAU_SIGNING_KEY": str(tmp_path / "none.key")},
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 2 and "no signing key" in other.stderr


async def test_read_items_gives_every_entry_decoded_and_shards_split_them(
        bureau: BureauUnderTest) -> None:
    await busy_ledger(bureau)
    await bureau.accepted(bureau.admin, "seal", {"requested_at": now_text()})
    conn = await asyncpg.connect(bureau.database_url)
    try:
        top = await conn.fetchval("SELECT seq FROM ledger_head")
        fast = [x async for chunk in read_items(conn, EntrySpan(0, top), chunk=7)
                for x in chunk]
        slow = []
        for r in await conn.fetch("SELECT seq, id, kind, signer, entry, epoch FROM entries"
                                  " ORDER BY seq"):
            item = decode_entry(r, r["id"])
            if item is not None:
                slow.append((r["seq"], item))
        # Shards (bureau.views.shards) split the same items by the agent they are about.
        sharded = [[x async for chunk in read_items(conn, EntrySpan(0, top, (i, 3)), chunk=7)
                    for x in chunk] for i in range(3)]
    finally:
        await conn.close()
    assert fast == slow and len(fast) > 20
    # Reporter updates (distrust) are the ledger's: every shard reads them all; the
    # rest is split.
    updates = [x for x in fast if isinstance(x[1], ReporterUpdate)]
    assert updates and all(
        [x for x in part if isinstance(x[1], ReporterUpdate)] == updates for part in sharded)
    assert sorted((x for part in sharded for x in part
                   if not isinstance(x[1], ReporterUpdate)), key=lambda x: x[0]) == [
        x for x in fast if not isinstance(x[1], ReporterUpdate)]
    owners: dict[str, set[int]] = {}
    for i, part in enumerate(sharded):
        for _, item in part:
            if isinstance(item, ReporterUpdate):
                continue
            who = getattr(item, "subject", None) or getattr(item, "agent", None)
            if who is not None:
                owners.setdefault(who, set()).add(i)
    assert all(len(shards) == 1 for shards in owners.values())
