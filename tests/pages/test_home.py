"""The home page over HTTP: the ranked list follows each newly sealed epoch (each
process keeps it per epoch), searches and pages are checked, and a page address with
nothing behind it answers a browser with a page and a program with the error shape."""

from __future__ import annotations

import aiohttp
import nacl.signing

from bureau.http.keys import SEALER
from reporters import wire
from tests.support import BureauUnderTest, fact_payload, kid

HTML = {"Accept": "text/html,application/xhtml+xml"}


async def _get(bureau: BureauUnderTest, path: str) -> tuple[int, str]:
    async with bureau.session.get(bureau.url + path, headers=HTML) as resp:
        return resp.status, await resp.text()


async def _seen(bureau: BureauUnderTest, rep: nacl.signing.SigningKey, agent: str, n: int,
                tag: str) -> None:
    for i in range(n):
        await bureau.accepted(rep, "fact", fact_payload(f"{tag}-{i}", agent, check="PASS"))


async def _seal(bureau: BureauUnderTest) -> None:
    bureau.clock.advance(bureau.config.epoch_seconds)
    assert await bureau.app[SEALER].seal_once()


async def test_the_list_follows_each_sealed_epoch(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(roles=("facts",))
    first, second = kid(wire.generate_key()), kid(wire.generate_key())
    status, page = await _get(bureau, "/")
    assert status == 200 and "no reports to list" in page
    await _seen(bureau, rep, first, 3, "a")
    await _seal(bureau)
    _, page = await _get(bureau, "/")
    assert first in page and second not in page
    await _seen(bureau, rep, second, 8, "b")
    await _seal(bureau)
    _, page = await _get(bureau, "/")
    table = page.split('id="ranked"')[1]
    assert table.index(second) < table.index(first)  # more evidence: a higher score.low
    _, only = await _get(bureau, "/?q=" + second[8:20])
    assert second in only and first not in only.split('id="ranked"')[1]


async def test_bad_page_and_query_are_refused(bureau: BureauUnderTest) -> None:
    for path, where in (("/?page=0", "/page"), ("/?page=x", "/page"),
                        ("/?page=10001", "/page"), ("/?page=1&page=2", "/page"),
                        ("/?q=" + "a" * 201, "/q"), ("/?q=%00", "/q")):
        async with bureau.session.get(bureau.url + path) as resp:
            body = await resp.json()
            assert (resp.status, body["code"], body["path"]) == (422, "SCHEMA", where), path
    status, page = await _get(bureau, f"/?page=2&q={'z' * 10}")
    assert status == 200 and "no reports to list" in page  # nothing sealed yet


async def test_not_found_is_a_page_for_a_browser(bureau: BureauUnderTest) -> None:
    nobody = kid(wire.generate_key())
    status, page = await _get(bureau, f"/agents/{nobody}")
    assert status == 404 and "<h1>Not found</h1>" in page and 'href="/"' in page
    async with aiohttp.ClientSession() as session, \
            session.get(f"{bureau.url}/agents/{nobody}") as resp:
        assert resp.status == 404 and (await resp.json())["code"] == "NOT_FOUND"
