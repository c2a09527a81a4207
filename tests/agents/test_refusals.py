"""Refusals of correctly signed envelopes from known parties are kept as evidence about
the signer; refusals that cannot be attributed are not (SPEC §5)."""

from __future__ import annotations

import base64
import json

import asyncpg

from reporters import wire
from tests.agents.support import (
    attestation,
    enroll,
    interaction_id,
    refused,
    stored_refusals,
    witness,
)
from tests.support import BureauUnderTest, fact_payload, issued, kid


async def test_admission_refusals_from_known_parties_are_kept_with_signer_and_code(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="Acme")
    buyer = await enroll(bureau)
    shill = await enroll(bureau, operator="ACME")
    ia = await witness(bureau, rep, seller, buyer)

    await refused(bureau, rep, "fact", fact_payload(ia, kid(seller), kid(shill)))
    await refused(bureau, buyer, "attestation", attestation(rep, interaction_id(), seller))
    await bureau.accepted(buyer, "attestation", attestation(rep, ia, seller))
    await refused(bureau, buyer, "attestation", attestation(rep, ia, seller, "DECLINED"))
    ia2 = await witness(bureau, rep, seller, shill)
    await refused(bureau, shill, "attestation", attestation(rep, ia2, seller))

    mine = {kid(rep), kid(buyer), kid(shill)}
    kept = [row for row in await stored_refusals(bureau) if row[0] in mine]
    assert kept == [(kid(rep), "CONFLICTING_FACT"), (kid(buyer), "UNWITNESSED"),
                    (kid(buyer), "DUPLICATE_VERDICT"), (kid(shill), "SELF_DEALING")]


async def test_a_kept_refusal_holds_the_envelope_as_submitted(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    buyer, seller = await enroll(bureau), await enroll(bureau)
    env = wire.sign_payload(buyer, "attestation", attestation(rep, interaction_id(), seller))
    status, body = await bureau.post(env)
    assert status == 422, body
    conn = await asyncpg.connect(bureau.database_url)
    try:
        row = await conn.fetchrow(
            "SELECT kind, code, path, envelope FROM refusals WHERE signer = $1", kid(buyer))
    finally:
        await conn.close()
    assert row is not None
    assert (row["kind"], row["code"], row["path"]) == ("attestation", "UNWITNESSED",
                                                       "/interaction")
    assert json.loads(bytes(row["envelope"])) == env


async def test_a_refusal_from_an_unknown_key_is_not_kept(bureau: BureauUnderTest) -> None:
    stranger = wire.generate_key()
    agent = await enroll(bureau)
    await refused(bureau, stranger, "fact", fact_payload(interaction_id(), kid(agent)))
    await refused(bureau, stranger, "amendment", {"issued_at": issued(), "name": "who am I"})
    assert [row for row in await stored_refusals(bureau) if row[0] == kid(stranger)] == []


async def test_a_bad_signature_from_a_known_key_is_not_kept(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    agent = await enroll(bureau)
    env = wire.sign_payload(rep, "fact", fact_payload(interaction_id(), kid(agent)))
    sig = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
    sig[0] ^= 1
    env["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    status, body = await bureau.post(env)
    assert (status, body["code"]) == (422, "BAD_SIGNATURE")
    assert [row for row in await stored_refusals(bureau) if row[0] == kid(rep)] == []
