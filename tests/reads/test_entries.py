"""GET /v1/agents/{agent}/entries and GET /v1/reporters/{reporter}/entries (SPEC §9)."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest

from bureau.http.shapes import EntriesPage
from bureau.reads import pages
from reporters import wire
from tests.reads.support import (
    Key,
    assert_error,
    attestation,
    enroll,
    enrollment,
    fact,
    get_raw,
    get_signed,
    read_all,
)
from tests.support import BureauUnderTest, fact_payload, issued, kid


@dataclass
class World:
    """A reporter, agent A (the one whose file is read), its caller C, and B."""

    rep: Key
    a: Key
    b: Key
    c: Key
    a_file: set[int]       # seqs that must be in A's file
    c_file: set[int]       # ... in C's
    rep_file: set[int]     # ... in the reporter's
    not_a: set[int]        # seqs that must not be in A's file
    a_amendment: dict[str, Any]
    a_refused: dict[str, Any]
    rep_refused: dict[str, Any]


async def _seq_of_exclusion(bureau: BureauUnderTest, target: str) -> int:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        rows = await conn.fetch("SELECT seq, entry FROM entries WHERE kind = 'exclusion'")
    finally:
        await conn.close()
    [seq] = [r["seq"] for r in rows if json.loads(r["entry"])["body"]["entry"] == target]
    return int(seq)


async def _world(bureau: BureauUnderTest) -> World:
    rep = await bureau.reporter()
    a = wire.generate_key()
    a_enrollment = (await bureau.accepted(a, "enrollment", enrollment()))["seq"]
    b, c = await enroll(bureau), await enroll(bureau)
    ia1, f1 = await fact(bureau, rep, a, caller=c)                          # A subject
    att_c = await bureau.accepted(c, "attestation", attestation(rep, ia1, a))  # C about A
    probe = await bureau.accepted(rep, "probe", {
        "interaction": ia1, "subject": kid(a), "probe": "p-1", "passed": True,
        "observed_at": fact_payload("x", kid(a))["observed_at"]})
    ia2, f2 = await fact(bureau, rep, b, caller=a)                          # A caller
    att_a = await bureau.accepted(a, "attestation", attestation(rep, ia2, b))  # A signer
    _, unrelated = await fact(bureau, rep, b, caller=c)
    a_amendment = wire.sign_payload(a, "amendment", {"issued_at": issued(), "name": "A, renamed"})
    amended = (await bureau.post(a_amendment))[1]
    # C takes A's operator: its attestation about A becomes self-dealing, and is excluded.
    a_operator = enrollment()["operator"]
    a_amended = await bureau.accepted(a, "amendment", {
        "issued_at": issued(), "operator": a_operator})
    c_amended = await bureau.accepted(c, "amendment", {
        "issued_at": issued(), "operator": a_operator})
    excluded = await _seq_of_exclusion(bureau, att_c["id"])
    dispute = await bureau.accepted(a, "dispute", {"entry": probe["id"], "reason": "flaky"})
    resolution = await bureau.accepted(bureau.admin, "resolution", {
        "dispute": dispute["id"], "decision": "UPHELD", "reason": "the probe is sound"})
    a_refused = wire.sign_payload(a, "enrollment", enrollment())        # ALREADY_ENROLLED
    assert (await bureau.post(a_refused))[0] == 422
    rep_refused = wire.sign_payload(rep, "fact", fact_payload(ia1, kid(b)))  # CONFLICTING
    assert (await bureau.post(rep_refused))[0] == 422
    last = (await bureau.accepted(a, "amendment", {
        "issued_at": issued(), "name": "A again"}))["seq"]
    a_file = {a_enrollment, f1, att_c["seq"], probe["seq"], f2, att_a["seq"], amended["seq"],
              a_amended["seq"], excluded, dispute["seq"], resolution["seq"], last}
    return World(rep, a, b, c, a_file,
                 c_file={f1, att_c["seq"], c_amended["seq"], excluded, unrelated},
                 rep_file={f1, probe["seq"], f2, unrelated},
                 not_a={unrelated, c_amended["seq"]}, a_amendment=a_amendment,
                 a_refused=a_refused, rep_refused=rep_refused)


@pytest.fixture(scope="module")
async def world(bureau: BureauUnderTest) -> World:
    return await _world(bureau)


def _check_chain(entries: list[dict[str, Any]]) -> None:
    """What an agent can check on its own: every id, and prev across consecutive seqs."""
    seqs = [e["seq"] for e in entries]
    assert seqs == sorted(set(seqs))
    for e in entries:
        assert e["id"] == wire.entry_id({k: v for k, v in e.items() if k != "id"})
        assert set(e) in ({"seq", "id", "prev", "kind", "recorded_at", "epoch", "envelope"},
                          {"seq", "id", "prev", "kind", "recorded_at", "epoch", "body"})
    for before, after in itertools.pairwise(entries):
        if after["seq"] == before["seq"] + 1:
            assert after["prev"] == before["id"]


async def test_agent_reads_every_entry_about_itself(bureau: BureauUnderTest,
                                                    world: World) -> None:
    status, body = await get_signed(bureau, world.a, f"/v1/agents/{kid(world.a)}/entries")
    assert status == 200, body
    page = EntriesPage.model_validate(body)
    assert page.next_after is None and page.next_refusals_after is None
    seqs = {e["seq"] for e in body["entries"]}
    assert seqs == world.a_file
    assert not seqs & world.not_a
    _check_chain(body["entries"])
    assert sum(e["kind"] == "exclusion" for e in body["entries"]) == 1
    amendment = [e for e in body["entries"] if e.get("envelope") == world.a_amendment]
    assert len(amendment) == 1, "the envelope is returned exactly as submitted"


async def test_agent_sees_its_refusals_and_no_one_elses(bureau: BureauUnderTest,
                                                        world: World) -> None:
    _, body = await get_signed(bureau, world.a, f"/v1/agents/{kid(world.a)}/entries")
    [refusal] = body["refusals"]
    assert refusal["code"] == "ALREADY_ENROLLED" and refusal["kind"] == "enrollment"
    assert refusal["envelope"] == world.a_refused


async def test_caller_sees_the_exclusion_of_its_attestation(bureau: BureauUnderTest,
                                                            world: World) -> None:
    _, body = await get_signed(bureau, world.c, f"/v1/agents/{kid(world.c)}/entries")
    assert world.c_file <= {e["seq"] for e in body["entries"]}
    _check_chain(body["entries"])


@pytest.mark.parametrize("limit", [1, 2, 5])
async def test_pages_add_up_to_the_whole_file(bureau: BureauUnderTest, world: World,
                                              limit: int) -> None:
    base = f"/v1/agents/{kid(world.a)}/entries"
    entries, refusals = await read_all(bureau, world.a, base, limit)
    _, whole = await get_signed(bureau, world.a, base)
    assert entries == whole["entries"] and refusals == whole["refusals"]


async def test_a_page_stops_at_its_byte_budget(bureau: BureauUnderTest, world: World,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "MAX_PAGE_BYTES", 1)
    base = f"/v1/agents/{kid(world.a)}/entries"
    _, first = await get_signed(bureau, world.a, base + "?limit=1000")
    assert len(first["entries"]) == 1
    assert first["next_after"] == first["entries"][0]["seq"]
    entries, _ = await read_all(bureau, world.a, base, 1000)
    assert {e["seq"] for e in entries} == world.a_file


async def test_reporter_reads_what_it_submitted(bureau: BureauUnderTest,
                                                world: World) -> None:
    status, body = await get_signed(bureau, world.rep,
                                    f"/v1/reporters/{kid(world.rep)}/entries")
    assert status == 200, body
    EntriesPage.model_validate(body)
    assert {e["seq"] for e in body["entries"]} == world.rep_file
    assert all(e["envelope"]["signatures"][0]["keyid"] == kid(world.rep)
               for e in body["entries"])
    _check_chain(body["entries"])
    [refusal] = body["refusals"]
    assert refusal["code"] == "CONFLICTING_FACT" and refusal["envelope"] == world.rep_refused


async def test_admin_reads_any_file(bureau: BureauUnderTest, world: World) -> None:
    _, own = await get_signed(bureau, world.a, f"/v1/agents/{kid(world.a)}/entries")
    status, body = await get_signed(bureau, bureau.admin, f"/v1/agents/{kid(world.a)}/entries")
    assert status == 200 and body == own
    status, body = await get_signed(bureau, bureau.admin,
                                    f"/v1/reporters/{kid(world.rep)}/entries")
    assert status == 200 and len(body["entries"]) == len(world.rep_file)


async def test_another_party_is_forbidden(bureau: BureauUnderTest, world: World) -> None:
    for reader, path in [(world.b, f"/v1/agents/{kid(world.a)}/entries"),
                         (world.rep, f"/v1/agents/{kid(world.a)}/entries"),
                         (world.a, f"/v1/reporters/{kid(world.rep)}/entries")]:
        assert_error(*await get_signed(bureau, reader, path), 403, "FORBIDDEN")


async def test_a_new_key_reads_an_empty_file(bureau: BureauUnderTest) -> None:
    key = wire.generate_key()
    status, body = await get_signed(bureau, key, f"/v1/agents/{kid(key)}/entries")
    assert status == 200
    assert body == {"entries": [], "next_after": None, "refusals": [],
                    "next_refusals_after": None}


async def test_admin_asking_for_a_non_key_gets_404(bureau: BureauUnderTest) -> None:
    status, body = await get_signed(bureau, bureau.admin, "/v1/agents/not-a-key/entries")
    assert_error(status, body, 404, "NOT_FOUND")


@pytest.mark.parametrize(("query", "path"), [
    ("after=-1", "/after"), ("after=abc", "/after"), ("after=1.5", "/after"),
    ("after=", "/after"), ("after=%2B1", "/after"), ("after=1&after=2", "/after"),
    ("after=1000000000000000000", "/after"), ("limit=0", "/limit"),
    ("limit=1001", "/limit"), ("limit=%201", "/limit"), ("refusals_after=x", "/refusals_after"),
    ("offset=3", "/offset"),
])
async def test_bad_query_is_schema_naming_the_parameter(bureau: BureauUnderTest, query: str,
                                                        path: str) -> None:
    key = wire.generate_key()
    url = f"/v1/agents/{kid(key)}/entries?{query}"
    assert_error(*await get_signed(bureau, key, url), 422, "SCHEMA", path)
    # Without a signature the answer is 401, whatever the query.
    assert_error(*await get_raw(bureau, url), 401, "UNAUTHENTICATED")


async def test_limits_at_their_bounds_are_accepted(bureau: BureauUnderTest,
                                                   world: World) -> None:
    base = f"/v1/agents/{kid(world.a)}/entries"
    for query in ("limit=1", "limit=1000", "after=0", "after=999999999999999999"):
        status, body = await get_signed(bureau, world.a, f"{base}?{query}")
        assert status == 200, (query, body)
    _, last = await get_signed(bureau, world.a, f"{base}?after={max(world.a_file)}")
    assert last["entries"] == [] and last["next_after"] is None
