"""``GET /v1/agents/{agent}/explain``: how a score was made, for the agent itself."""

from __future__ import annotations

import json
from typing import Any

import nacl.signing

from reporters import wire
from reporters.httpsig import sign_request_headers
from tests.support import BureauUnderTest, kid
from tests.views.support import World, bureau_key, get, next_epoch, open_envelope


async def _explain(b: BureauUnderTest, reader: nacl.signing.SigningKey | None,
                   agent: str, query: str = "") -> tuple[int, Any]:
    path = f"/v1/agents/{agent}/explain{query}"
    headers = {} if reader is None else sign_request_headers(
        reader, "GET", b.url + path, created=int(b.clock().timestamp()))
    async with b.session.get(b.url + path, headers=headers) as resp:
        return resp.status, await resp.json()


async def _scenario(b: BureauUnderTest) -> tuple[World, Any, Any, Any]:
    w = await World.make(b)
    seller, harsh, fair = await w.agent("seller"), await w.agent("harsh"), await w.agent("fair")
    for passed in (True, True, False):  # ground truth the evaluators are measured on
        for evaluator, outcome in ((harsh, "FAILED_DISCOVERED"),
                                   (fair, "ACCEPTED" if passed else "FAILED_DISCOVERED")):
            ia = await w.fact(seller, evaluator, check="PASS" if passed else "FAIL")
            await w.attest(evaluator, ia, seller, outcome)
    ia = await w.fact(seller, harsh)  # no ground truth: the attestation decides
    await w.attest(harsh, ia, seller, "ACCEPTED_AFTER_CORRECTIONS", corrections=2)
    await w.fact(seller, None, claimed="DECLINED")
    await next_epoch(b)
    return w, seller, harsh, fair


async def test_explanation_adds_up_to_the_report(bureau: BureauUnderTest) -> None:
    _, seller, harsh, fair = await _scenario(bureau)
    status, body = await _explain(bureau, seller, kid(seller))
    assert status == 200, body
    _, raw = await get(bureau, f"/v1/agents/{kid(seller)}/report")
    report = open_envelope(raw, await bureau_key(bureau))
    assert body["score"] == report["score"]
    assert (body["epoch"], body["ledger"], body["policy"]) == (
        report["epoch"], report["ledger"], report["policy"])
    codes = [row["outcome"] for row in body["interactions"]]
    # two facts per ground truth (one per evaluator): the checks decide those six
    assert codes.count("ACCEPTED") == 4 and codes.count("FAILED_DISCOVERED") == 2
    assert "ACCEPTED_AFTER_CORRECTIONS" in codes and "DECLINED" in codes
    # evaluators appear as pseudonyms only: the subject never learns who they are
    text = json.dumps(body)
    assert kid(harsh) not in text and kid(fair) not in text
    assert any("evaluator-" in json.dumps(row) for row in body["interactions"])


async def test_only_the_agent_or_an_admin_may_read_it(bureau: BureauUnderTest) -> None:
    _, seller, harsh, _ = await _scenario(bureau)
    assert (await _explain(bureau, None, kid(seller)))[0] == 401
    status, body = await _explain(bureau, harsh, kid(seller))
    assert (status, body["code"]) == (403, "FORBIDDEN")
    assert (await _explain(bureau, bureau.admin, kid(seller)))[0] == 200


async def test_no_report_and_bad_epoch(bureau: BureauUnderTest) -> None:
    w, seller, _, _ = await _scenario(bureau)
    stranger = wire.generate_key()
    status, body = await _explain(bureau, stranger, kid(stranger))
    assert (status, body["code"]) == (404, "NOT_FOUND")
    status, body = await _explain(bureau, seller, kid(seller), "?epoch=x")
    assert (status, body["code"], body["path"]) == (422, "SCHEMA", "/epoch")
    status, body = await _explain(bureau, seller, kid(seller), "?epoch=1")
    assert (status, body["code"]) == (404, "NOT_FOUND")
    assert w is not None


async def test_each_row_names_its_rule(bureau: BureauUnderTest) -> None:
    """Issue 23 point 4: the rule that decided an interaction by name, not just number."""
    from bureau.scoring.outcomes import RULE_NAMES

    _, seller, _, _ = await _scenario(bureau)
    _, body = await _explain(bureau, seller, kid(seller))
    named = {(row["rule"], row["rule_name"]) for row in body["interactions"]}
    assert all(RULE_NAMES[number] == name for number, name in named)
    assert (1, "ground truth (a probe, else the deliverable check)") in named
    assert (3, "the caller's attestation") in named
    assert (2, "the agent's own witnessed statement") in named
    assert set(RULE_NAMES) == set(range(1, 9))
