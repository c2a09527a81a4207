"""A party's file as typed models, read from the real bureau: decoded payloads, bodies,
refusals, pages; and the raw entries still verify."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

import reporters
from reporters import wire
from reporters.files import Entry, ExclusionBody, FilePage, GenesisBody, SealBody
from reporters.models import (
    AmendmentPayload,
    AttestationPayload,
    EnrollmentPayload,
    FactPayload,
)
from tests.support import BureauUnderTest, fact_payload


async def test_an_agents_file_decoded(bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",))
    gw = reporters.key_id(gateway)
    async with (reporters.Agent(reporters.generate_key(), bureau.url) as caller,
                reporters.Agent(reporters.generate_key(), bureau.url) as worker):
        await caller.enroll("caller", "ops@caller.example", "Caller Inc")
        await worker.enroll("worker", "worker.example", "Worker Ltd")
        await bureau.accepted(gateway, "fact", fact_payload("i-1", worker.key_id,
                                                            caller.key_id, latency_ms=840))
        attested = await caller.attest(gw, "i-1", worker.key_id, "ACCEPTED")
        with pytest.raises(reporters.Rejected):
            await caller.attest(gw, "i-1", worker.key_id, "FAILED_DISCOVERED")
        # The caller takes the worker's operator: its favourable attestation becomes
        # self-dealing, and the bureau writes an exclusion of it into both files.
        await caller.amend(operator="Worker Ltd")
        page = await caller.entries()

    assert isinstance(page, FilePage) and page.complete
    by_kind = {e.kind: e for e in page.entries}
    assert set(by_kind) == {"enrollment", "fact", "attestation", "amendment", "exclusion"}
    enrollment = by_kind["enrollment"]
    assert isinstance(enrollment.payload, EnrollmentPayload)
    assert enrollment.payload.anchor.value == "ops@caller.example"
    assert enrollment.signer == caller.key_id and enrollment.body is None
    fact = by_kind["fact"]
    assert isinstance(fact.payload, FactPayload)
    assert (fact.signer, fact.payload.caller, fact.payload.latency_ms) == (
        gw, caller.key_id, 840)
    attestation = by_kind["attestation"]
    assert isinstance(attestation.payload, AttestationPayload)
    assert (attestation.seq, attestation.id) == (attested.seq, attested.id)
    assert attestation.payload.outcome == "ACCEPTED"
    assert isinstance(by_kind["amendment"].payload, AmendmentPayload)
    exclusion = by_kind["exclusion"]
    assert exclusion.envelope is None and exclusion.signer is None and exclusion.payload is None
    assert isinstance(exclusion.body, ExclusionBody)
    assert exclusion.body.entry == attested.id and exclusion.body.reason == "self_dealing"

    [refusal] = page.refusals
    assert (refusal.code, refusal.kind, refusal.signer) == ("DUPLICATE_VERDICT", "attestation",
                                                            caller.key_id)
    assert isinstance(refusal.payload, AttestationPayload)
    assert refusal.payload.outcome == "FAILED_DISCOVERED"

    # What verification needs is kept: the entries as served.
    reporters.verify_chain(page.entries)
    reporters.verify_chain(page.raw_entries)
    for entry in page.entries:
        assert entry.raw["id"] == wire.entry_id({k: v for k, v in entry.raw.items()
                                                 if k != "id"})
        assert entry.document is not None
    with pytest.raises(pydantic.ValidationError):  # frozen: a read model is not edited
        fact.seq = 1  # type: ignore[misc]


async def test_pages_follow_the_cursors_to_the_end(bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",))
    async with reporters.Agent(reporters.generate_key(), bureau.url) as agent:
        await agent.enroll("paged", "paged.example", "Paged Ltd")
        for i in range(5):
            await bureau.accepted(gateway, "fact", fact_payload(f"p-{i}", agent.key_id))
        for name in ("one", "two", "three"):  # three refusals: ALREADY_ENROLLED each
            with pytest.raises(reporters.Rejected):
                await agent.enroll(name, "paged.example", "Paged Ltd")
        pages = [p async for p in agent.pages(limit=2)]
        whole = await agent.entries(limit=100)
    assert len(pages) >= 3 and pages[-1].complete and not pages[0].complete
    assert [e.seq for p in pages for e in p.entries] == [e.seq for e in whole.entries]
    assert [r.ref for p in pages for r in p.refusals] == [r.ref for r in whole.refusals]
    assert len(whole.entries) == 6 and len(whole.refusals) == 3


async def test_a_reporters_file_decoded(bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    subject = reporters.key_id(reporters.generate_key())
    await bureau.accepted(key, "fact", fact_payload("r-1", subject, latency_ms=10))
    assert (await bureau.submit(key, "fact", fact_payload("r-1", subject,
                                                          latency_ms=11)))[0] == 422
    async with reporters.Reporter(key, bureau.url, tmp_path / "spool") as reporter:
        page = await reporter.entries()
        pages = [p async for p in reporter.pages(limit=1)]
    [entry] = page.entries
    assert isinstance(entry.payload, FactPayload) and entry.payload.latency_ms == 10
    [refusal] = page.refusals
    assert refusal.code == "CONFLICTING_FACT"
    assert isinstance(refusal.payload, FactPayload) and refusal.payload.latency_ms == 11
    assert [e.seq for p in pages for e in p.entries] == [entry.seq]


def _raw_entry(seq: int, **content: object) -> dict[str, object]:
    entry: dict[str, object] = {"seq": seq, "prev": wire.ZERO_ID, "recorded_at":
                                "2026-11-30T00:00:00.000000Z", "epoch": 0, **content}
    entry["id"] = wire.entry_id(entry)
    return entry


def test_bodies_of_what_the_bureau_writes_and_what_this_client_does_not_know() -> None:
    head = "ab" * 32
    key = wire.generate_key()
    future = wire.sign_payload(key, "forecast", {"tomorrow": "sunny"})  # a kind added later
    page = FilePage.from_raw({"entries": [
        _raw_entry(1, kind="genesis", body={"policy": head, "epoch_seconds": 60,
                                            "origin": "bureau-x"}),
        _raw_entry(2, kind="seal", body={"epoch": 3, "seq": 1, "head": head}),
        _raw_entry(3, kind="forecast", envelope=future),
        _raw_entry(4, kind="audit", body={"anything": [1, 2]}),
    ], "refusals": [{"ref": 1, "kind": "fact", "code": "SCHEMA", "path": "/subject",
                     "detail": "…", "refused_at": "2026-11-30T00:00:00.000000Z",
                     "content_key": "cd" * 32}],
        "next_after": None, "next_refusals_after": None})
    genesis, seal, forecast, audit = page.entries
    assert genesis.body == GenesisBody(policy=head, epoch_seconds=60, origin="bureau-x")
    assert seal.body == SealBody(epoch=3, seq=1, head=head)
    assert forecast.payload is None and forecast.document == {"tomorrow": "sunny"}
    assert forecast.signer == wire.signing_key_id(key)
    assert forecast.envelope is not None and forecast.envelope.name == "forecast"
    assert audit.body is None and audit.document == {"anything": [1, 2]}
    [refusal] = page.refusals  # a decode-stage refusal keeps no envelope (SPEC §5)
    assert refusal.envelope is None and refusal.payload is None
    assert refusal.content_key == "cd" * 32


@pytest.mark.parametrize("raw", [
    [], {"entries": "no"}, {"entries": [1], "refusals": []},
    {"entries": [{"seq": "first"}], "refusals": []},
])
def test_what_is_not_a_file_is_protocol(raw: object) -> None:
    with pytest.raises(reporters.BureauClientError) as info:
        FilePage.from_raw(raw)
    assert info.value.code == "PROTOCOL" and info.value.status is None


def test_entry_keeps_raw_exactly() -> None:
    raw = _raw_entry(7, kind="seal", body={"epoch": 1, "seq": 6, "head": "00" * 32})
    assert Entry.from_raw(raw).raw == raw
