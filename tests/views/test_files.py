"""An agent's own file, defined once (bureau.reads.files from bureau.kinds): the read
route's SQL, the report builder's SQL and the kinds table's Python definition
(``in_files_of``) agree entry for entry over a real ledger with every kind of entry, and
every report's ``evidence.root`` is the root of the file its agent reads."""

from __future__ import annotations

import asyncpg

from bureau.kinds import BY_NAME, EntryParties, in_files_of
from bureau.reads import pages
from bureau.reads.files import load_files
from reporters.tlog.evidence import evidence_root
from tests.agents.support import StoredEntry, attestation, enroll, stored_entries, witness
from tests.agents.test_disputes import dispute, resolution
from tests.support import BureauUnderTest, kid
from tests.views.support import World, get, next_epoch, open_envelope


async def every_kind_of_entry(bureau: BureauUnderTest) -> list[str]:
    """A ledger with facts (with and without callers), probes, attestations, disputes
    resolved both ways (one exclusion), a withdrawal; returns the keys involved."""
    rep = await bureau.reporter(("facts", "probes"))
    a, b, c, d = [await enroll(bureau) for _ in range(4)]
    ia_ab = await witness(bureau, rep, a, b)
    await witness(bureau, rep, b, c)
    ia_c = await witness(bureau, rep, c, None)
    await witness(bureau, rep, d, a)
    await World(bureau, rep).probe(a, True)
    att = await bureau.accepted(b, "attestation", attestation(rep, ia_ab, a, "FAILED_DISCOVERED"))
    upheld = await bureau.accepted(a, "dispute", dispute(att["id"]))
    await bureau.accepted(bureau.admin, "resolution", resolution(upheld["id"], "EXCLUDED"))
    fact_c = next(e for e in await stored_entries(bureau, "fact")
                  if e.payload["interaction"] == ia_c)
    kept = await bureau.accepted(c, "dispute", dispute(fact_c.id))
    await bureau.accepted(bureau.admin, "resolution", resolution(kept["id"], "UPHELD"))
    await bureau.accepted(d, "withdrawal", {"reason": "closing down"})
    return [kid(k) for k in (a, b, c, d, rep, bureau.admin)]


def model(entries: list[StoredEntry]) -> dict[str, list[int]]:
    """Every file, by the kinds table, from the entries alone."""
    by_id = {e.id: e for e in entries}
    files: dict[str, list[int]] = {}
    for e in entries:
        kind = BY_NAME[e.kind]
        caller = e.payload.get("caller") if e.kind == "fact" else None
        target: tuple[str | None, ...] = ()
        disputer = None
        if e.kind == "exclusion":
            t = by_id[e.body["entry"]]
            target = (t.signer, t.subject, t.payload.get("caller") if t.kind == "fact" else None)
        elif e.kind == "resolution":
            disputer = by_id[e.payload["dispute"]].signer
        parties = EntryParties(e.signer, e.subject, caller, target, disputer)
        for agent in in_files_of(kind, parties):
            files.setdefault(agent, []).append(e.seq)
    return files


async def read_route_file(bureau: BureauUnderTest, agent: str) -> list[int]:
    """The file as the read route pages it (two at a time, to cross page bounds)."""
    pool = await asyncpg.create_pool(bureau.database_url, min_size=1, max_size=1)
    assert pool is not None
    seqs, after = [], 0
    try:
        while True:
            async with pool.acquire() as conn:
                page = await pages.agent_page(conn, agent, after=after, limit=2,
                                              refusals_after=0)
            seqs += [e["seq"] for e in page.entries]
            if page.next_after is None:
                return seqs
            after = page.next_after
    finally:
        await pool.close()


async def test_the_read_route_the_builder_and_the_kinds_table_agree(
        bureau: BureauUnderTest) -> None:
    keys = await every_kind_of_entry(bureau)
    entries = await stored_entries(bureau)
    want = model(entries)
    assert {e.kind for e in entries} >= {"reporter", "enrollment", "fact", "probe",
                                         "attestation", "dispute", "resolution",
                                         "exclusion", "withdrawal"}
    conn = await asyncpg.connect(bureau.database_url)
    try:
        built = await load_files(conn, entries[-1].seq)
    finally:
        await conn.close()
    assert {a: [s for s, _ in f] for a, f in built.items()} == want
    for agent in keys:
        assert await read_route_file(bureau, agent) == want.get(agent, []), agent
    # the exclusion is in the files of the attestation's evaluator and subject
    [exclusion] = [e for e in entries if e.kind == "exclusion"]
    assert sum(exclusion.seq in f for f in want.values()) == 2


async def test_every_report_carries_the_root_of_its_agents_file(
        bureau: BureauUnderTest) -> None:
    keys = await every_kind_of_entry(bureau)
    await next_epoch(bureau)
    entries = await stored_entries(bureau)
    ids = {e.seq: e.id for e in entries}
    files = model(entries)
    checked = 0
    for agent in keys[:4]:
        status, body = await get(bureau, f"/v1/agents/{agent}/report")
        assert status == 200
        report = open_envelope(body, kid(bureau.signing_key))
        file = [{"seq": s, "id": ids[s]} for s in files[agent]]
        assert report["evidence"] == {
            "root": evidence_root(file, report["ledger"]["seq"]).hex()}
        checked += 1
    assert checked == 4
