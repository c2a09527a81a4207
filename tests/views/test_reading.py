"""Reading signed reports and checkpoints (SPEC §8, §9): public, byte-stable, verifiable,
with one error shape for what does not exist and for a bad ``epoch``."""

from __future__ import annotations

import json

from tests.support import BureauUnderTest, kid
from tests.views.support import World, bureau_key, get, next_epoch, open_envelope


async def test_nothing_is_served_before_the_first_seal(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    a = await w.agent("alpha")
    await w.fact(a)
    for path in (f"/v1/agents/{kid(a)}/report", "/v1/checkpoints/latest",
                 "/v1/checkpoints/0", f"/v1/agents/{kid(a)}/report?epoch=1"):
        status, body = await get(bureau, path)
        doc = json.loads(body)
        assert (status, doc["status"], doc["code"], doc["path"]) == (
            404, "rejected", "NOT_FOUND", ""), path


async def test_a_bad_epoch_is_a_schema_error_at_epoch(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    a = await w.agent("alpha")
    for query, path in (("?epoch=abc", "/epoch"), ("?epoch=-1", "/epoch"),
                        ("?epoch=1.5", "/epoch"), ("?epoch=", "/epoch"),
                        ("?epoch=1&epoch=2", "/epoch"), ("?epoch=1" + "0" * 18, "/epoch"),
                        ("?colour=blue", "/colour")):
        status, body = await get(bureau, f"/v1/agents/{kid(a)}/report{query}")
        doc = json.loads(body)
        assert (status, doc["code"], doc["path"]) == (422, "SCHEMA", path), query
    status, body = await get(bureau, "/v1/checkpoints/abc")
    assert (status, json.loads(body)["code"]) == (404, "NOT_FOUND")


async def test_documents_are_signed_and_the_same_bytes_every_time(
        bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    a, caller = await w.agent("alpha"), await w.agent("caller")
    await w.attest(caller, await w.fact(a, caller, check="PASS"), a, "ACCEPTED")
    [epoch] = await next_epoch(bureau)
    key = await bureau_key(bureau)
    for path in (f"/v1/agents/{kid(a)}/report", f"/v1/agents/{kid(a)}/report?epoch={epoch}",
                 "/v1/checkpoints/latest", f"/v1/checkpoints/{epoch}"):
        first, second = await get(bureau, path), await get(bureau, path)
        assert first == second and first[0] == 200, path
        env = json.loads(first[1])
        assert first[1] == json.dumps(env, separators=(",", ":"), sort_keys=True).encode()
        payload = open_envelope(first[1], key)  # verifies the signature with /v1/bureau's key
        assert payload["epoch"] == epoch
    report = json.loads((await get(bureau, f"/v1/agents/{kid(a)}/report"))[1])
    assert report["payloadType"] == "application/vnd.bureau.report.v1+json"
    async with bureau.session.get(bureau.url + f"/v1/agents/{kid(a)}/report") as resp:
        assert resp.headers["Content-Type"].startswith("application/json")
        assert resp.headers["ETag"]
    # the latest report moves on with the next epoch; the old one stays as it was
    old = await get(bureau, f"/v1/agents/{kid(a)}/report?epoch={epoch}")
    await w.fact(a, answered=False, latency_ms=None)
    assert await next_epoch(bureau) == [epoch + 1]
    assert await get(bureau, f"/v1/agents/{kid(a)}/report?epoch={epoch}") == old
    latest = open_envelope((await get(bureau, f"/v1/agents/{kid(a)}/report"))[1], key)
    assert latest["epoch"] == epoch + 1 and latest["reliability"]["observed"] == 2


async def test_every_agent_enrolled_or_observed_has_a_report(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    enrolled_only = await w.agent("quiet")
    from reporters import wire

    observed = kid(wire.generate_key())  # never enrolled, seen in a fact
    probed = kid(wire.generate_key())  # never enrolled, seen only by a probe
    await w.fact(observed, check="FAIL", claimed="FAILURE")
    await w.probe(probed, False)
    await next_epoch(bureau)
    key = await bureau_key(bureau)
    quiet = open_envelope((await get(bureau, f"/v1/agents/{kid(enrolled_only)}/report"))[1], key)
    assert quiet["name"] == "quiet" and quiet["score"] is None
    assert quiet["reliability"]["answer_rate"] is None
    seen = open_envelope((await get(bureau, f"/v1/agents/{observed}/report"))[1], key)
    assert seen["name"] is None and seen["outcomes"]["FAILED_ADMITTED"] == 1
    tested = open_envelope((await get(bureau, f"/v1/agents/{probed}/report"))[1], key)
    assert tested["probes"] == {"passed": 0, "failed": 1}
    assert tested["outcomes"]["FAILED_DISCOVERED"] == 1
    status, _ = await get(bureau, f"/v1/agents/{kid(wire.generate_key())}/report")
    assert status == 404
    assert (await get(bureau, "/v1/agents/not-a-key/report"))[0] == 404
