"""Policies bound to epochs (SPEC §7.1): a ledger that changes policy keeps the reports
of the epochs before as they were; later epochs are scored by the new policy; rebuild
and report workers come out identical; the policy routes follow the current epoch."""

from __future__ import annotations

import json

import asyncpg
import nacl.signing

from bureau.evidence.entries import load_evidence
from bureau.evidence.policies import EpochPolicy
from bureau.reads.files import load_files
from bureau.scoring.policy import KNOWN_POLICIES, policy_bytes, policy_hash, policy_named
from bureau.storage.reports import seals
from bureau.views.reference import reference_payloads
from reporters import wire
from tests.support import BureauUnderTest, current_epoch, issued, kid
from tests.views.support import (
    World,
    assert_workers_and_rebuild_agree,
    get,
    next_epoch,
)

V1, V2 = policy_hash(KNOWN_POLICIES["v1"]), policy_hash(KNOWN_POLICIES["v2"])


async def _sybils(w: World, subject: nacl.signing.SigningKey, n: int) -> None:
    """n fresh callers, one ACCEPTED each: v1 weighs them 0.25 each, v2 caps them at 1."""
    for i in range(n):
        e = await w.agent(f"fresh {i}")
        await w.attest(e, await w.fact(subject, e), subject, "ACCEPTED")


async def _stored(conn: asyncpg.Connection) -> dict[tuple[int, str], bytes]:
    return {(r["epoch"], r["agent"]): bytes(r["envelope"]) for r in await conn.fetch(
        "SELECT epoch, agent, envelope FROM reports")}


async def test_a_policy_change_applies_from_its_epoch_and_never_before(
        v1_bureau: BureauUnderTest) -> None:
    bureau = v1_bureau
    w = await World.make(bureau)
    a = await w.agent("alpha")
    await _sybils(w, a, 8)
    start = current_epoch(bureau)
    await bureau.accepted(bureau.admin, "policy", {
        "policy": V2, "from_epoch": start + 2, "issued_at": issued()})
    assert json.loads((await get(bureau, "/v1/bureau"))[1])["policy"] == V1
    assert (await get(bureau, "/v1/policy"))[1] == policy_bytes(KNOWN_POLICIES["v1"])
    await next_epoch(bureau)  # seals `start` under v1
    await _sybils(w, a, 2)
    await next_epoch(bureau)  # seals start + 1 under v1; start + 2 is now current
    assert json.loads((await get(bureau, "/v1/bureau"))[1])["policy"] == V2
    assert (await get(bureau, "/v1/policy"))[1] == policy_bytes(KNOWN_POLICIES["v2"])

    conn = await asyncpg.connect(bureau.database_url)
    try:
        before = await _stored(conn)
        await _sybils(w, a, 2)
        await next_epoch(bureau)  # start + 2 under v2
        after = await _stored(conn)
        assert {k: v for k, v in after.items() if k[0] < start + 2} == before
        by_epoch = {}
        for seal in await seals(conn):
            ledger = await load_evidence(conn, seal.last_seq)
            name = "v1" if seal.epoch < start + 2 else "v2"
            scored_by = EpochPolicy(policy_named(name), policy_hash(KNOWN_POLICIES[name]))
            want = reference_payloads(ledger, seal, scored_by,
                                      files=await load_files(conn, seal.last_seq))
            stored = {agent: json.loads(wire.b64decode_canonical(json.loads(env)["payload"]))
                      for (epoch, agent), env in after.items() if epoch == seal.epoch}
            assert stored == dict(want)
            by_epoch[seal.epoch] = stored[kid(a)]
        assert [by_epoch[e]["policy"] for e in sorted(by_epoch)] == [V1, V1, V2]
        assert by_epoch[start]["score"]["weight"] == 2.0  # 8 x 0.25 under v1
        assert by_epoch[start + 2]["score"]["weight"] == 1.0  # capped under v2
        assert by_epoch[start + 2]["provisional_share"] == 1

        # Report workers, started under v1, start over under v2 and agree byte for byte.
        await assert_workers_and_rebuild_agree(conn, bureau, after)
        assert await _stored(conn) == after
    finally:
        await conn.close()


async def test_any_known_policy_is_served_by_hash(bureau: BureauUnderTest) -> None:
    for name, document in KNOWN_POLICIES.items():
        status, body = await get(bureau, f"/v1/policies/{policy_hash(document)}")
        assert status == 200 and body == policy_bytes(document), name
    status, body = await get(bureau, "/v1/policies/" + "0" * 64)
    assert status == 404 and json.loads(body)["code"] == "NOT_FOUND"
    for bad in ("abc", "F" * 64, "0" * 65):
        status, body = await get(bureau, f"/v1/policies/{bad}")
        assert status == 422, bad
        assert (json.loads(body)["code"], json.loads(body)["path"]) == ("SCHEMA", "/hash")


async def test_a_new_ledger_is_scored_by_v4_unless_told_otherwise(
        bureau: BureauUnderTest) -> None:
    assert json.loads((await get(bureau, "/v1/bureau"))[1])["policy"] == policy_hash(
        KNOWN_POLICIES["v4"])
