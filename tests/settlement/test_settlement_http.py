"""The evaluators' pool end to end over HTTP (SPEC §3 ``pool``, §8.2, §9): who earns,
what is published, what each evaluator can prove, and that verify and rebuild agree."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import nacl.signing
import pytest

from bureau.intake.clock import epoch_of
from bureau.settlement.split import largest_remainder
from bureau.verify import BadSettlement, BadTree, verify_database
from bureau.views.rebuild import rebuild
from reporters import Admin, wire
from reporters.httpsig import sign_request_headers
from reporters.tlog.merkle import EMPTY_ROOT, leaf_hash
from reporters.tlog.verify import verify_inclusion
from tests.support import BureauUnderTest, issued, kid
from tests.views.support import EPOCH_SECONDS, World, bureau_key, get, next_epoch, open_envelope


def current_epoch(b: BureauUnderTest) -> int:
    return epoch_of(b.clock(), EPOCH_SECONDS)


async def own_row(b: BureauUnderTest, reader: nacl.signing.SigningKey, agent: str,
                  query: str) -> tuple[int, Any]:
    path = f"/v1/agents/{agent}/settlement{query}"
    headers = sign_request_headers(reader, "GET", b.url + path,
                                   created=int(b.clock().timestamp()))
    async with b.session.get(b.url + path, headers=headers) as resp:
        return resp.status, await resp.json()


def j(tp: int, p: int, tn: int, n: int) -> float:
    """Informedness as SPEC §7 defines it, worked out here independently."""
    return max(0.0, min(1.0, (tp + 1) / (p + 2) + (tn + 1) / (n + 2) - 1))


async def test_a_pool_settled_end_to_end(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    seller = await w.agent("seller")
    fair, copier, twice = (await w.agent("fair"), await w.agent("copier"),
                           await w.agent("twice"))
    epoch = current_epoch(bureau)
    async with Admin(bureau.admin, bureau.url) as admin:
        await admin.set_pool(100, epoch)

    # the fair evaluator: six verdicts, each covered by a probe recorded after it
    for passed in (True, True, True, True, False, False):
        ia = await w.fact(seller, fair)
        await w.attest(fair, ia, seller, "ACCEPTED" if passed else "FAILED_DISCOVERED")
        await w.probe(seller, passed, ia)
    # the copier reads the check in its own file, or a probe already recorded, and agrees
    for _ in range(4):
        ia = await w.fact(seller, copier, check="PASS")
        await w.attest(copier, ia, seller, "ACCEPTED")
    ia = await w.probe(seller, True, await w.fact(seller, copier))
    await w.attest(copier, ia, seller, "ACCEPTED")
    # one right verdict, then a second verdict on the same call: refused, and counted
    ia = await w.fact(seller, twice)
    await w.attest(twice, ia, seller, "ACCEPTED")
    status, body = await bureau.submit(twice, "attestation", {
        "reporter": kid(w.reporter), "interaction": ia, "subject": kid(seller),
        "outcome": "ACCEPTED_AFTER_CORRECTIONS", "corrections": 1})
    assert (status, body["code"]) == (422, "DUPLICATE_VERDICT")
    await w.probe(seller, True, ia)
    assert await next_epoch(bureau) == [epoch]

    status, raw = await get(bureau, f"/v1/settlements/{epoch}")
    assert status == 200, raw
    doc = open_envelope(raw, await bureau_key(bureau))
    expected = {kid(fair): round(6 * j(4, 4, 2, 2), 6), kid(twice): round(j(1, 1, 0, 0), 6)}
    units = largest_remainder(100, {k: round(s * 10**6) for k, s in expected.items()})
    assert doc["pool"] == 100 and doc["paid"] == 100 and doc["unpaid"] == 0
    assert doc["evaluators"] == 2
    assert kid(copier).encode() not in raw  # the public sees no key

    root = bytes.fromhex(doc["root"])
    for who in (fair, twice):
        status, mine = await own_row(bureau, who, kid(who), f"?epoch={epoch}")
        assert status == 200, mine
        assert mine["row"] == {"evaluator": kid(who), "units": units[kid(who)],
                               "score": expected[kid(who)]}
        # the client's own Merkle code: the row is a leaf of the signed root
        verify_inclusion(leaf_hash(wire.canonical_json(mine["row"])), mine["leaf_index"],
                         mine["tree_size"], [bytes.fromhex(h) for h in mine["hashes"]], root)
    status, nothing = await own_row(bureau, copier, kid(copier), f"?epoch={epoch}")
    assert status == 200 and nothing == {"epoch": epoch, "evaluator": kid(copier), "units": 0}
    status, record = await own_row(bureau, twice, kid(twice), "")
    assert (status, record["code"], record["path"]) == (422, "SCHEMA", "/epoch")
    status, record = await own_row(bureau, copier, kid(twice), f"?epoch={epoch}")
    assert (status, record["code"]) == (403, "FORBIDDEN")

    path = f"/v1/agents/{kid(twice)}/evaluator"
    headers = sign_request_headers(twice, "GET", bureau.url + path,
                                   created=int(bureau.clock().timestamp()))
    async with bureau.session.get(bureau.url + path, headers=headers) as resp:
        assert (await resp.json())["verdicts_ignored"] == 1

    # a quiet epoch: the pool stands, nobody earns (a copied check only): all unpaid
    quiet = current_epoch(bureau)
    ia = await w.fact(seller, copier, check="PASS")
    await w.attest(copier, ia, seller, "ACCEPTED")
    await next_epoch(bureau)
    status, raw = await get(bureau, f"/v1/settlements/{quiet}")
    assert status == 200
    assert open_envelope(raw, await bureau_key(bureau)) == {
        "epoch": quiet, "pool": 100, "paid": 0, "unpaid": 100, "evaluators": 0,
        "root": EMPTY_ROOT.hex()}
    status, page = await get(bureau, "/")
    assert status == 200
    section = page.split(b'<h2 id="pool">')[1].split(b"</section>")[0].decode()
    assert "quiet: nobody earned; all 100 units unpaid" in section
    assert "<td class=\"num\">100</td><td class=\"num\">0</td><td class=\"num\">2</td>" in (
        section)  # the first epoch: 100 paid, 0 unpaid, 2 evaluators paid
    assert "ed25519:" not in section  # never an evaluator's key

    conn = await asyncpg.connect(bureau.database_url)
    try:
        await verify_database(conn)
        stored = await conn.fetch("SELECT epoch, envelope FROM settlements ORDER BY epoch")
        result = await rebuild(conn, bureau.signing_key, bureau.log_key)
        assert result.identical, result.differences
        assert await conn.fetch("SELECT epoch, envelope FROM settlements ORDER BY epoch"
                                ) == stored
        # signed by a key never in force: verify names the settlement, as for reports
        good = dict(stored)[quiet]
        env = json.loads(good)
        forged = wire.sign_envelope_bytes(wire.generate_key(), env["payloadType"],
                                          wire.b64decode_canonical(env["payload"]))
        await conn.execute("UPDATE settlements SET envelope = $1 WHERE epoch = $2", forged,
                           quiet)
        with pytest.raises(BadTree, match=f"settlement of epoch {quiet}: not signed by"):
            await verify_database(conn)
        await conn.execute("UPDATE settlements SET envelope = $1 WHERE epoch = $2", good,
                           quiet)
        # a row paid more than the document says: verify names the epoch
        await conn.execute("UPDATE settlement_rows SET row = $1 WHERE epoch = $2 AND leaf = 0",
                           wire.canonical_json({**json.loads(wire.canonical_json(
                               {"evaluator": kid(fair), "units": 1, "score": 1.0}))}), epoch)
        with pytest.raises(BadSettlement, match=f"epoch {epoch}"):
            await verify_database(conn)
    finally:
        await conn.close()


async def test_no_pool_no_settlement(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    seller, caller = await w.agent("seller"), await w.agent("caller")
    epoch = current_epoch(bureau)
    ia = await w.fact(seller, caller)
    await w.attest(caller, ia, seller, "ACCEPTED")
    await w.probe(seller, True, ia)
    await next_epoch(bureau)
    status, body = await get(bureau, f"/v1/settlements/{epoch}")
    assert status == 404 and json.loads(body)["code"] == "NOT_FOUND"
    status, mine = await own_row(bureau, caller, kid(caller), f"?epoch={epoch}")
    assert (status, mine["code"]) == (404, "NOT_FOUND")


async def test_pool_entries_are_admitted_as_policy_entries_are(
        bureau: BureauUnderTest) -> None:
    epoch = current_epoch(bureau)

    async def refused(key: nacl.signing.SigningKey, payload: dict[str, Any]) -> tuple[str, str]:
        status, body = await bureau.submit(key, "pool", payload)
        assert status in (403, 422), body
        return body["code"], body["path"]

    at = issued()
    await bureau.accepted(bureau.admin, "pool", {"units": 10**15, "from_epoch": epoch + 1,
                                                 "issued_at": at})
    assert await refused(bureau.admin, {"units": 5, "from_epoch": epoch - 1,
                                        "issued_at": issued()}) == ("STALE_UPDATE",
                                                                    "/from_epoch")
    assert await refused(bureau.admin, {"units": 5, "from_epoch": epoch,
                                        "issued_at": at}) == ("STALE_UPDATE", "/issued_at")
    assert await refused(bureau.admin, {"units": 10**15 + 1, "from_epoch": epoch,
                                        "issued_at": issued()}) == ("SCHEMA", "/units")
    assert await refused(bureau.admin, {"units": 1.5, "from_epoch": epoch,
                                        "issued_at": issued()}) == ("SCHEMA", "/units")
    stranger = wire.generate_key()
    assert (await refused(stranger, {"units": 5, "from_epoch": epoch,
                                     "issued_at": issued()}))[0] == "NOT_ADMIN"
    # setting it back to 0 (no settlement) is a new submission, never a duplicate
    await bureau.accepted(bureau.admin, "pool", {"units": 0, "from_epoch": epoch,
                                                 "issued_at": issued()})
