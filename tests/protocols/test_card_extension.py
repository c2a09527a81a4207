"""The proxy holds an A2A card's bureau extension to the route's key id (docs/proxy.md,
"The agent card: declared promises"; docs/interop.md): a card whose extension names
another agent gives the route no card promises, and is counted."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from google.protobuf.json_format import MessageToDict

import reporters
from reporters.interop import card_extension
from tests.protocols.a2a_agent import card
from tests.protocols.test_mapping_table import post, rpc, send, task
from tests.proxy.support import running_proxy, stored_facts, upstream
from tests.support import BureauUnderTest


def card_naming(agent: str) -> dict[str, Any]:
    doc = MessageToDict(card("http://127.0.0.1/agent/", "1.0"))
    doc["capabilities"]["extensions"] = [
        card_extension("https://bureau.example", "bureau.example+00000000+AAAA", agent)]
    return doc


async def test_a_card_naming_another_agent_gives_no_promises_and_is_counted(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    route_agent = reporters.key_id(reporters.generate_key())
    other = reporters.key_id(reporters.generate_key())
    cards = {"/mine": card_naming(route_agent), "/other": card_naming(other)}

    def agent(prefix: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            if request.method == "GET":
                return web.json_response(cards[prefix])
            return web.json_response(rpc({"task": task("x", "COMPLETED")}))
        return handle

    key = await bureau.reporter(("facts",))
    async with upstream(agent("/mine")) as mine, upstream(agent("/other")) as theirs, \
            running_proxy(bureau, tmp_path, [
                {"prefix": "/mine", "agent": route_agent, "upstream": mine,
                 "protocol": "a2a"},
                {"prefix": "/other", "agent": route_agent, "upstream": theirs,
                 "protocol": "a2a"}], reporter=key) as px:
        assert px.proxy.cards.declared("/mine") is not None
        assert px.proxy.cards.declared("/other") is None
        interaction = await post(px, "completed", send(), route="/other")
        metrics = await px.metrics()
        await px.proxy.settle()
    assert metrics[("bureau_proxy_agent_card_failures_total",
                    (("reason", "other_agent"), ("route", "/other")))] == 1
    assert not any(labels == (("reason", "other_agent"), ("route", "/mine"))
                   for (name, labels) in metrics if name.endswith("card_failures_total"))
    assert interaction is not None  # the route still works
    fact = (await stored_facts(bureau.database_url, reporters.key_id(key)))[interaction]
    assert (fact["claimed"], fact["promises"]) == ("SUCCESS", [])
