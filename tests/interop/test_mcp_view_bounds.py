"""``GET /v0/servers`` costs its page, not the epoch (issue 35): it reads rows built at
seal time, never the reports; claims of one name come a bounded page at a time; a search
looks through a bounded window of names. Timing is in bench/servers_bench.py."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import asyncpg
import pytest

from bureau.interop import mcp_view
from reporters import identity_links, wire
from tests.interop.support import get_json
from tests.support import BureauUnderTest, enrollment, kid
from tests.views.support import next_epoch

META = "test.example.bureau/reputation"
HONEST = "io.github.honest/weather"


async def _squatted(bureau: BureauUnderTest, squatters: int) -> list[str]:
    """An honest agent and ``squatters`` others, every one claiming ``HONEST`` (and a
    name of its own); one sealed epoch. The claimants' key ids, sorted."""
    keys = [wire.generate_key() for _ in range(squatters + 1)]
    answers = await bureau.batch([wire.sign_payload(key, "enrollment", {
        **enrollment(f"agent {i}"), "links": [identity_links.mcp(HONEST),
                                               identity_links.mcp(f"io.github.a{i}/s")]})
        for i, key in enumerate(keys)])
    assert all(a["status"] == "accepted" for a in answers), answers[:2]
    await next_epoch(bureau)
    return sorted(kid(k) for k in keys)


async def test_claims_of_one_name_come_a_bounded_page_at_a_time(
        bureau: BureauUnderTest) -> None:
    claimants = await _squatted(bureau, 120)
    status, page = await get_json(bureau, "/v0/servers?search=honest")
    assert status == 200
    [entry] = page["servers"]
    meta = entry["_meta"][META]
    # before: all 121 claims in the entry (4,000 made one 1.2 MB answer)
    assert len(meta["claims"]) == mcp_view.CLAIMS_IN_LIST
    assert meta["claimsTotal"] == 121 and meta["claimsCursor"] == meta["claims"][-1]["agent"]
    walked: list[str] = []
    cursor: str | None = None
    while True:
        path = "/v0/servers/" + quote(HONEST, safe="") + (f"?cursor={cursor}" if cursor else "")
        status, one = await get_json(bureau, path)
        assert status == 200, one
        rep = one["_meta"][META]
        assert len(rep["claims"]) <= mcp_view.CLAIMS_PAGE and rep["claimsTotal"] == 121
        walked += [c["agent"] for c in rep["claims"]]
        cursor = rep.get("claimsCursor")
        if cursor is None:
            break
    assert walked == claimants  # every claim, once, by key id
    status, body = await get_json(bureau, "/v0/servers/" + quote(HONEST, safe="")
                                  + "?cursor=" + "x" * 101)
    assert status == 422 and body["path"] == "/cursor"
    await bureau.verify()


async def test_a_page_never_reads_the_reports(bureau: BureauUnderTest) -> None:
    """With the reports table locked by another session, a page is answered all the same:
    it reads the rows built at seal time (before: every linked report was decoded for
    every request, and this one would wait for the lock)."""
    await _squatted(bureau, 3)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        async with conn.transaction():
            await conn.execute("LOCK TABLE reports IN ACCESS EXCLUSIVE MODE")
            for path in ("/v0/servers?limit=1", "/v0/servers?limit=100&search=a2",
                         "/v0/servers/" + quote(HONEST, safe="")):
                status, page = await asyncio.wait_for(get_json(bureau, path), 20)
                assert status == 200, (path, page)
    finally:
        await conn.close()
    await bureau.verify()


async def test_a_search_looks_through_a_bounded_window_and_says_where_to_go_on(
        bureau: BureauUnderTest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_view, "SEARCH_WINDOW", 4)
    await _squatted(bureau, 9)  # names io.github.a0/s … a9/s and the honest one: 11
    found: list[str] = []
    cursor, pages = None, 0
    while True:
        path = "/v0/servers?search=a&limit=2" + (f"&cursor={quote(cursor)}" if cursor else "")
        status, page = await get_json(bureau, path)
        assert status == 200 and page["metadata"]["count"] <= 2
        found += [s["server"]["name"] for s in page["servers"]]
        cursor, pages = page["metadata"].get("nextCursor"), pages + 1
        if cursor is None:
            break
    assert found == sorted([f"io.github.a{i}/s" for i in range(10)] + [HONEST])
    assert pages >= 6
    status, page = await get_json(bureau, "/v0/servers?search=nothing-like-it")
    assert page["servers"] == [] and "nextCursor" in page["metadata"]  # 4 of 11 looked at
    await bureau.verify()


async def test_a_control_character_in_a_cursor_or_search_is_schema(
        bureau: BureauUnderTest) -> None:
    """``cursor`` and ``search`` now go to the database: a NUL there was a 500 (PostgreSQL's
    text cannot hold one). Every control character is ``SCHEMA`` at its parameter."""
    await _squatted(bureau, 1)
    name = "/v0/servers/" + quote(HONEST, safe="")
    for path, where in (("/v0/servers?cursor=%00", "/cursor"),
                        ("/v0/servers?search=a%00", "/search"),
                        ("/v0/servers?search=%0A", "/search"),
                        (name + "?cursor=%00", "/cursor"),
                        (name + "?cursor=%7F", "/cursor")):
        status, body = await get_json(bureau, path)
        assert (status, body["code"], body["path"]) == (422, "SCHEMA", where), (path, body)
    status, _ = await get_json(bureau, "/v0/servers?search=%C3%A9")  # not a control
    assert status == 200
    await bureau.verify()
