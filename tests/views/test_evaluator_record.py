"""``GET /v1/agents/{agent}/evaluator`` (SPEC §9): an agent's own record as an evaluator —
weight and flags, never what would tell it which of its calls were covert probes."""

from __future__ import annotations

from typing import Any

import nacl.signing

from reporters import wire
from reporters.httpsig import sign_request_headers
from tests.support import BureauUnderTest, kid
from tests.views.support import World, next_epoch

FIELDS = {"agent", "epoch", "ledger", "policy", "weight", "provisional", "constant_rater",
          "verdicts_given", "verdicts_ignored"}


async def _record(b: BureauUnderTest, reader: nacl.signing.SigningKey | None, agent: str,
                  query: str = "") -> tuple[int, Any]:
    path = f"/v1/agents/{agent}/evaluator{query}"
    headers = {} if reader is None else sign_request_headers(
        reader, "GET", b.url + path, created=int(b.clock().timestamp()))
    async with b.session.get(b.url + path, headers=headers) as resp:
        return resp.status, await resp.json()


async def test_an_evaluators_record(v3_bureau: BureauUnderTest) -> None:
    """Under v3: the weight from blind probes (v4's meaning is the next test's)."""
    bureau = v3_bureau
    w = await World.make(bureau)
    seller, caller = await w.agent("seller"), await w.agent("caller")
    ias = [await w.fact(seller, caller) for _ in range(3)]
    for ia in ias:
        await w.attest(caller, ia, seller, "ACCEPTED")
    status, body = await bureau.submit(caller, "attestation", {  # a change of mind
        "reporter": kid(w.reporter), "interaction": ias[0], "subject": kid(seller),
        "outcome": "FAILED_DISCOVERED", "corrections": 0})
    assert (status, body["code"]) == (422, "DUPLICATE_VERDICT")
    await w.probe(seller, True, ias[1])  # a covert probe after its verdict
    await next_epoch(bureau)

    status, body = await _record(bureau, caller, kid(caller))
    assert status == 200, body
    assert set(body) == FIELDS  # no n, TPR, TNR or offsets
    assert (body["provisional"], body["constant_rater"]) == (True, False)
    assert (body["verdicts_given"], body["verdicts_ignored"]) == (3, 1)
    # one blind probe, called right: TPR 2/3, TNR 1/2, J = 1/6; (1/6 + 5/4) / 6
    assert body["weight"] == round((1 / 6 + 1.25) / 6, 6)

    status, stranger_body = await _record(bureau, bureau.admin, kid(seller))
    assert status == 200 and stranger_body["verdicts_given"] == 0
    assert stranger_body["weight"] == 0.25 and stranger_body["provisional"] is True
    never = wire.generate_key()  # a key the bureau never saw: an empty record
    status, empty = await _record(bureau, never, kid(never))
    assert status == 200 and (empty["verdicts_given"], empty["weight"]) == (0, 0.25)


async def test_an_evaluators_record_under_v4(bureau: BureauUnderTest) -> None:
    """Under v4 (the default) the weight is what one verdict counts before its voice is
    settled: the default 0.25 while provisional (rated on fewer than 10 verdicts or 3
    established subjects: docs/scoring.md "Policy v4"), 1 once calibrated, 0 for a
    constant rater or one no better than chance. Its rates, like v3's n and offsets, are
    not shown."""
    w = await World.make(bureau)
    caller, constant = await w.agent("caller"), await w.agent("constant")
    others = [await w.agent(f"other-{i}") for i in range(2)]
    sellers = [await w.agent(f"seller-{i}") for i in range(3)]
    for i in range(12):  # 12 checked calls over 3 subjects, each attested right
        seller, good = sellers[i % 3], i % 2 == 0
        ia = await w.fact(seller, caller, check="PASS" if good else "FAIL")
        await w.attest(caller, ia, seller, "ACCEPTED" if good else "FAILED_DISCOVERED")
        ia = await w.fact(seller, constant, check="PASS" if good else "FAIL")
        await w.attest(constant, ia, seller, "ACCEPTED")
    for seller in sellers:  # four raters on each seller: established, so they rate
        for other in others:
            ia = await w.fact(seller, other, check="PASS")
            await w.attest(other, ia, seller, "ACCEPTED")
    await next_epoch(bureau)
    status, body = await _record(bureau, caller, kid(caller))
    assert status == 200 and set(body) == FIELDS
    assert (body["weight"], body["provisional"], body["constant_rater"]) == (1.0, False, False)
    status, body = await _record(bureau, constant, kid(constant))
    # calibrated on the checks it could read, and no better than chance on them
    assert (body["weight"], body["provisional"]) == (0.0, False)
    never = wire.generate_key()
    status, empty = await _record(bureau, never, kid(never))
    assert (empty["verdicts_given"], empty["weight"], empty["provisional"]) == (0, 0.25, True)


async def test_who_may_read_it_and_bad_queries(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    caller, other = await w.agent("caller"), await w.agent("other")
    status, body = await _record(bureau, caller, kid(caller))
    assert (status, body["code"]) == (404, "NOT_FOUND")  # nothing sealed yet
    await w.fact(other, caller)
    await next_epoch(bureau)
    assert (await _record(bureau, None, kid(caller)))[0] == 401
    status, body = await _record(bureau, other, kid(caller))
    assert (status, body["code"]) == (403, "FORBIDDEN")
    assert (await _record(bureau, bureau.admin, kid(caller)))[0] == 200
    status, body = await _record(bureau, caller, kid(caller), "?epoch=x")
    assert (status, body["code"], body["path"]) == (422, "SCHEMA", "/epoch")
    status, body = await _record(bureau, caller, kid(caller), "?epoch=1")
    assert (status, body["code"]) == (404, "NOT_FOUND")
