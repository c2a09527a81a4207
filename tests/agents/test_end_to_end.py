"""The bureau's story end to end, with no person in the loop: a seller agent claims
success on work its gateway's deliverable check failed, the buyer agent attests, and
the next buyer looks the seller up before hiring it.

The next buyer can see the evidence in the ledger itself, and, once the epoch is sealed,
reads the seller's bureau-signed report — checking the signature first.
"""

from __future__ import annotations

import json

from bureau.http.keys import SEALER
from reporters import verify_report, wire
from tests.agents.support import StoredEntry, attestation, enrollment, stored_entries
from tests.support import BureauUnderTest, fact_payload, kid


def _about(entries: list[StoredEntry], agent: str) -> list[StoredEntry]:
    return [e for e in entries if e.subject == agent]


async def test_a_confident_failure_is_on_record_for_the_next_buyer(
        bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",), operator="Agent Gateway Inc")
    seller, buyer, next_buyer = (wire.generate_key() for _ in range(3))
    for key, operator, domain in ((seller, "Quickfix AI", "quickfix.example"),
                                  (buyer, "Buyer One", "buyer-one.example"),
                                  (next_buyer, "Buyer Two", "buyer-two.example")):
        await bureau.accepted(key, "enrollment", enrollment(operator, ("domain", domain)))

    # The gateway carried the job: the seller said SUCCESS, the deliverable check FAILed.
    # It reports the fact; the buyer attests in the same batch, as soon as it can.
    results = await bureau.batch([
        wire.sign_payload(gateway, "fact", fact_payload(
            "job-4711", kid(seller), kid(buyer), claimed="SUCCESS", check="FAIL",
            derived="SWITCHED_AGENT", latency_ms=1900)),
        wire.sign_payload(buyer, "attestation",
                          attestation(gateway, "job-4711", seller, "FAILED_DISCOVERED")),
    ])
    assert [r["status"] for r in results] == ["accepted", "accepted"]

    # The next buyer looks the seller up before hiring it.
    record = _about(await stored_entries(bureau), kid(seller))
    assert [e.kind for e in record] == ["enrollment", "fact", "attestation"]
    _, fact, verdict = record
    assert (fact.signer, fact.payload["claimed"], fact.payload["check"]) == (
        kid(gateway), "SUCCESS", "FAIL")
    assert (verdict.signer, verdict.payload["outcome"]) == (kid(buyer), "FAILED_DISCOVERED")
    assert verdict.payload["interaction"] == fact.payload["interaction"]
    assert not [e for e in await stored_entries(bureau, "exclusion")
                if e.body["entry"] in (fact.id, verdict.id)]
    confident_failure = fact.payload["claimed"] == "SUCCESS" and fact.payload["check"] == "FAIL"
    assert confident_failure  # so the next buyer hires someone else

    # The epoch ends; the bureau seals it and signs every report. The next buyer reads the
    # seller's report, as anyone may, and checks the bureau's signature before using it.
    bureau.clock.advance(bureau.config.epoch_seconds)
    assert await bureau.app[SEALER].seal_once()
    async with bureau.session.get(f"{bureau.url}/v1/bureau") as resp:
        bureau_key = (await resp.json())["key"]
    async with bureau.session.get(f"{bureau.url}/v1/agents/{kid(seller)}/report") as resp:
        assert resp.status == 200
        report = verify_report(json.loads(await resp.read()), bureau_key)
    assert report["outcomes"]["FAILED_DISCOVERED"] == 1
    assert report["outcomes"]["ACCEPTED"] == 0
    # one confident failure under v4 (docs/scoring.md "Policy v4"): reliability r from a
    # uniform prior and one wrong call, candour s from its prior Beta(2, 1) and one call
    # not admitted, each the mean over the 24 cells' midpoints m:
    # r = sum m(1-m) / sum (1-m), s = sum m³ / sum m²; the value s·r + 0.15·(1 - s).
    # (v1-v3: (1*0 + 1) / (1 + 2).)
    mids = [(i + 0.5) / 24 for i in range(24)]
    r = sum(m * (1 - m) for m in mids) / sum(1 - m for m in mids)
    s = sum(m ** 3 for m in mids) / sum(m * m for m in mids)
    assert report["score"]["value"] == round(s * r + 0.15 * (1 - s), 6)
    assert kid(buyer) not in json.dumps(report)  # reports name no caller or evaluator
