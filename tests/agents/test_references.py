"""Every entry that refers to another names it by id, and every reference resolves to an
earlier entry of the right kind (SPEC §3, §5, §9)."""

from __future__ import annotations

from reporters import wire
from tests.agents.support import (
    StoredEntry,
    attestation,
    engagement,
    enroll,
    enrollment,
    interaction_id,
    stored_entries,
    value_judgment,
)
from tests.support import BureauUnderTest, fact_payload, issued, kid, now_text


async def _busy_scenario(bureau: BureauUnderTest) -> None:
    """Facts, probes, attestations, value judgments, retroactive and disputed exclusions,
    some in batches, some one by one."""
    rep = await bureau.reporter()
    sellers = [wire.generate_key() for _ in range(3)]
    buyers = [await enroll(bureau, operator=f"Buyer Co {i}") for i in range(3)]
    attestations: dict[tuple[int, int], str] = {}
    for s, seller in enumerate(sellers):
        lines = []
        for b, buyer in enumerate(buyers):
            ia = interaction_id()
            lines += [
                wire.sign_payload(rep, "fact", fact_payload(
                    ia, kid(seller), kid(buyer), check="PASS" if b else "FAIL")),
                wire.sign_payload(buyer, "attestation", attestation(rep, ia, seller)),
            ]
        lines.append(wire.sign_payload(rep, "probe", {
            "interaction": interaction_id(), "subject": kid(seller), "probe": "p1",
            "passed": s % 2 == 0, "observed_at": now_text()}))
        results = await bureau.batch(lines)
        assert all(r["status"] == "accepted" for r in results), results
        for b in range(len(buyers)):
            attestations[(s, b)] = results[2 * b + 1]["id"]

    await bureau.accepted(rep, "fact", fact_payload(
        interaction_id(), kid(sellers[2]), kid(buyers[1]), engagement=engagement("eng-busy")))
    await bureau.accepted(buyers[1], "value-judgment",
                          value_judgment(rep, "eng-busy", sellers[2]))

    # seller 0 turns out to share buyer 0's operator; seller 1 enrolls unlinked, then
    # amends into buyer 1's operator and, in the same batch, into buyer 2's as well.
    await bureau.accepted(sellers[0], "enrollment", enrollment("buyer co 0"))
    results = await bureau.batch([
        wire.sign_payload(sellers[1], "enrollment", enrollment("Seller One")),
        wire.sign_payload(sellers[1], "amendment", {
            "issued_at": issued(), "operator": " BUYER CO 1"}),
        wire.sign_payload(sellers[1], "amendment", {
            "issued_at": issued(), "operator": "Buyer Co 2"}),
    ])
    assert [r["status"] for r in results] == ["accepted"] * 3
    # seller 2 enrolls linked to buyer 1: both its attestation and its value judgment go
    await bureau.accepted(sellers[2], "enrollment", enrollment("buyer co 1"))

    # seller 0 disputes buyer 2's attestation (upheld) and buyer 1's (excluded)
    for b, decision in ((2, "UPHELD"), (1, "EXCLUDED")):
        d = await bureau.accepted(sellers[0], "dispute",
                                  {"entry": attestations[(0, b)], "reason": "unfair"})
        await bureau.accepted(bureau.admin, "resolution",
                              {"dispute": d["id"], "decision": decision, "reason": "ok"})


def _check_chain(entries: list[StoredEntry]) -> None:
    prev = "0" * 64
    for n, e in enumerate(entries, start=1):
        assert e.seq == n == e.doc["seq"]
        assert e.doc["prev"] == prev
        assert wire.blake3_hex(wire.canonical_json(e.doc)) == e.id
        prev = e.id


async def test_every_reference_names_an_earlier_entry_of_the_right_kind(
        bureau: BureauUnderTest) -> None:
    await _busy_scenario(bureau)
    entries = await stored_entries(bureau)
    _check_chain(entries)
    by_id = {e.id: e for e in entries}
    checked = {"exclusion": 0, "dispute": 0, "resolution": 0}

    def earlier(ref: str, than: StoredEntry) -> StoredEntry:
        assert ref in by_id, f"entry {than.seq} refers to {ref}, which does not exist"
        target = by_id[ref]
        assert target.seq < than.seq, f"entry {than.seq} refers forward to {target.seq}"
        return target

    for e in entries:
        if e.kind == "exclusion":
            target, cause = earlier(e.body["entry"], e), earlier(e.body["cause"], e)
            assert target.kind in ("attestation", "value-judgment")
            assert e.subject == target.subject
            if e.body["reason"] == "self_dealing":
                assert cause.kind in ("enrollment", "amendment")
            else:
                assert (e.body["reason"], cause.kind) == ("disputed", "resolution")
            # appended right after its cause: only its cause's other exclusions between
            between = entries[cause.seq:e.seq - 1]
            assert all(x.kind == "exclusion" and x.body["cause"] == cause.id for x in between)
        elif e.kind == "dispute":
            earlier(e.payload["entry"], e)
        elif e.kind == "resolution":
            assert earlier(e.payload["dispute"], e).kind == "dispute"
        else:
            continue
        checked[e.kind] += 1

    # 1 (seller 0) + 2 (seller 1) + 2 (seller 2: attestation and value judgment) + 1 disputed
    assert checked == {"exclusion": 6, "dispute": 2, "resolution": 2}
    targets = [e.body["entry"] for e in entries if e.kind == "exclusion"]
    assert len(targets) == len(set(targets)), "an entry was excluded twice"
