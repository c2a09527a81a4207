"""The MCP subregistry view: ``GET /v0/servers`` and ``/v0/servers/{name}`` in the MCP
registry API's shape, each ``server`` valid against the registry's published
``server.json`` schema (vendored, MIT), the bureau's reputation under
``_meta["<reverse-DNS of the bureau>/reputation"]``, and the registry's cursor
pagination walked to the end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jsonschema

from bureau.interop.mcp_view import namespace
from reporters import identity_links
from tests.interop.support import PUBLIC_URL, enroll_linked, get_json
from tests.support import BureauUnderTest, kid
from tests.views.support import World, bureau_key, next_epoch, open_envelope

SERVER_SCHEMA = json.loads((Path(__file__).parent / "vendor" / "server.schema.json")
                           .read_text())
META = "test.example.bureau/reputation"
#: the registry API's ServerList and ServerResponse, as its openapi.yaml lists them
SERVER_LIST = {
    "type": "object", "required": ["servers"],
    "properties": {
        "servers": {"type": "array", "items": {
            "type": "object", "required": ["server"],
            "properties": {"server": {"type": "object"}, "_meta": {"type": "object"}}}},
        "metadata": {"type": "object", "properties": {
            "nextCursor": {"type": "string"}, "count": {"type": "integer"}}}},
}


def test_the_namespace_is_the_reverse_dns_of_the_bureau() -> None:
    assert namespace("https://bureau.example.test") == "test.example.bureau"
    assert namespace("https://rep.example.com:8443/base") == "com.example.rep"


async def _world(bureau: BureauUnderTest) -> dict[str, list[str]]:
    """Agents linking servers (one name claimed by two), one with none; sealed."""
    world = await World.make(bureau)
    claims: dict[str, list[str]] = {}
    plan = [["io.github.a/weather"], ["io.github.a/weather", "com.example/zeta"],
            [f"io.github.many/s{i}" for i in range(5)], []]
    for i, names in enumerate(plan):
        links = [identity_links.mcp(n) for n in names]
        agent = await enroll_linked(bureau, "server agent", links)
        # the first agent's facts carry no check: it has no score yet
        await world.fact(agent, check=None if i == 0 else "PASS")
        for n in names:
            claims.setdefault(n, []).append(kid(agent))
    await next_epoch(bureau)
    return {n: sorted(a) for n, a in sorted(claims.items())}


async def test_the_view_pages_through_every_linked_server(bureau: BureauUnderTest) -> None:
    claims = await _world(bureau)
    key = await bureau_key(bureau)
    seen: list[dict[str, Any]] = []
    scored: set[bool] = set()
    cursor: str | None = None
    pages = 0
    while True:
        query = "?limit=3" + (f"&cursor={quote(cursor, safe='')}" if cursor else "")
        status, page = await get_json(bureau, "/v0/servers" + query)
        assert status == 200, page
        jsonschema.validate(page, SERVER_LIST)
        assert page["metadata"]["count"] == len(page["servers"]) <= 3
        seen.extend(page["servers"])
        pages += 1
        cursor = page["metadata"].get("nextCursor")
        if cursor is None:
            break
    assert pages == 3  # 7 servers, 3 a page
    assert [s["server"]["name"] for s in seen] == list(claims)
    for entry in seen:
        jsonschema.Draft7Validator(SERVER_SCHEMA).validate(entry["server"])
        rep = entry["_meta"][META]
        assert [c["agent"] for c in rep["claims"]] == claims[entry["server"]["name"]]
        for claim in rep["claims"]:
            assert claim["report"] == (f"{PUBLIC_URL}/v1/agents/{claim['agent']}/report"
                                       f"?epoch={rep['epoch']}")
            async with bureau.session.get(bureau.url + claim["report"].removeprefix(
                    PUBLIC_URL)) as resp:
                report = open_envelope(await resp.read(), key)
            score = report["score"]
            if score is None:
                assert claim["score"] is None and claim["interval"] is None
            else:
                assert claim["score"] == score["value"]
                assert claim["interval"] == [score["low"], score["high"]]
            scored.add(score is not None)
            assert identity_links.mcp(entry["server"]["name"]) in report["links"]

    assert scored == {True, False}
    # one server by its URL-encoded name: the same entry
    status, one = await get_json(bureau, "/v0/servers/" + quote("io.github.a/weather", safe=""))
    assert status == 200 and one == seen[[s["server"]["name"] for s in seen].index(
        "io.github.a/weather")]
    assert len(one["_meta"][META]["claims"]) == 2  # contested: both claims, never ranked
    # search, as the registry's substring match on names
    status, page = await get_json(bureau, "/v0/servers?search=many")
    assert [s["server"]["name"] for s in page["servers"]] == [
        f"io.github.many/s{i}" for i in range(5)]


async def test_bad_queries_and_unknown_servers(bureau: BureauUnderTest) -> None:
    status, body = await get_json(bureau, "/v0/servers")
    assert status == 404 and "sealed" in body["detail"]  # nothing sealed yet
    await _world(bureau)
    for bad, path in (("?limit=0", "/limit"), ("?limit=101", "/limit"),
                      ("?limit=01", "/limit"), ("?limit=x", "/limit"),
                      ("?cursor=a&cursor=b", "/cursor"), ("?version=latest", "/version")):
        status, body = await get_json(bureau, "/v0/servers" + bad)
        assert status == 422 and (body["code"], body["path"]) == ("SCHEMA", path), bad
    for name in ("io.github.nobody%2Fx", "not-a-name", "a%2Fb%2Fc"):
        status, body = await get_json(bureau, "/v0/servers/" + name)
        assert status == 404 and body["code"] == "NOT_FOUND", name
    status, page = await get_json(bureau, "/v0/servers?cursor=zzzz")
    assert status == 200 and page == {"servers": [], "metadata": {"count": 0}}


async def test_without_a_public_url_the_views_say_so(database_url: str, tmp_path: Path) -> None:
    from tests.support import start_bureau
    from tests.views.support import EPOCH_SECONDS

    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS) as bureau:
        for path in ("/v0/servers", "/v0/servers/io.github.a%2Fb",
                     "/v1/agents/ed25519:" + "A" * 43 + "/a2a-extension"):
            status, body = await get_json(bureau, path)
            assert status == 404 and "BUREAU_PUBLIC_URL" in body["detail"], path
