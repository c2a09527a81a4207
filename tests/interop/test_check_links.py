"""``bureau-check links`` in its own process, against an agent card served over HTTPS
on loopback and an MCP registry entry served beside it: links the other side confirms
pass (exit 0), a card or entry that names another key fails (1), an unreachable card is
inconclusive (2), and the ERC-8004 link is printed as what to look up on chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporters import identity_links
from reporters.interop import card_extension
from tests.client.test_check import check
from tests.interop.cards import sdk_card, self_signed, serving
from tests.interop.support import IDENTITY, PUBLIC_URL, linked_world
from tests.support import BureauUnderTest

pytestmark = pytest.mark.slow

CARD = "/.well-known/agent-card.json"


async def test_links_confirmed_and_not(bureau: BureauUnderTest, tmp_path: Path) -> None:
    context, cafile = self_signed(tmp_path)
    cards: dict[str, object] = {}
    entries: dict[str, object] = {}
    async with serving(cards, context) as card_base, serving(entries) as registry:
        server = "io.github.agent/weather"
        linked = await linked_world(bureau, links=[
            identity_links.erc8004(8453, IDENTITY, 22),
            identity_links.a2a(f"{card_base}/good{CARD}"), identity_links.mcp(server)])
        agent = linked.key_id
        ext = card_extension(PUBLIC_URL, bureau.log_key.vkey, agent)
        cards[f"/good{CARD}"] = sdk_card([ext])
        entry = {"server": {"name": server, "description": "d", "version": "1.0.0",
                            "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {
                                "agent-reputation-bureau": {"agent": agent}}}}}
        entries[f"/v0/servers/{server}"] = entry
        args = ["links", bureau.url, agent, "--cafile", str(cafile), "--mcp-registry", registry]

        ran = await check(*args)
        assert ran.status == 0, ran.out
        assert "a2a link: confirmed" in ran.out and "mcp link: confirmed" in ran.out
        assert "erc8004 link: look_up" in ran.out and "tokenURI(22)" in ran.out
        assert IDENTITY in ran.out and "chain 8453" in ran.out
        doc = (await check(*args, "--json")).json()
        assert doc["ok"] and [r["result"] for r in doc["links"]] == [
            "look_up", "confirmed", "confirmed"]

        # the card names another agent's key: not confirmed, exit 1
        cards[f"/good{CARD}"] = sdk_card([card_extension(PUBLIC_URL, bureau.log_key.vkey,
                                                         "ed25519:" + "Z" * 43)])
        ran = await check(*args)
        assert ran.status == 1 and "FAILED" in ran.out and "no bureau extension" in ran.out
        # named by a signature instead: confirmed again
        cards[f"/good{CARD}"] = sdk_card(signature_kids=[agent])
        assert (await check(*args)).status == 0

        # the registry entry's _meta names nobody: not confirmed
        entries[f"/v0/servers/{server}"] = {"server": {**entry["server"], "_meta": {}}}
        ran = await check(*args)
        assert ran.status == 1 and "no _meta names" in ran.out, ran.out
        entries[f"/v0/servers/{server}"] = entry

        # without trusting the test certificate the card cannot be fetched: exit 2
        ran = await check("links", bureau.url, agent, "--mcp-registry", registry)
        assert ran.status == 2 and "CANNOT CHECK" in ran.out, ran.out
        # and a card that is not there
        del cards[f"/good{CARD}"]
        ran = await check(*args)
        assert ran.status == 2 and "HTTP 404" in ran.out, ran.out


async def test_an_agent_without_links_has_nothing_to_confirm(bureau: BureauUnderTest) -> None:
    linked = await linked_world(bureau, links=[])
    ran = await check("links", bureau.url, linked.key_id)
    assert ran.status == 0 and "no links" in ran.out, ran.out


async def test_a_large_card_is_read_whole_and_a_hostile_one_is_cannot_check(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    """Issue 35, ``bureau-check links`` against hostile answers: an honest card of
    300 KB (many TLS records) is read whole — before, a read of what had arrived so far
    cut it short and it was "not JSON" — while one over 1 MiB, or nested deeper than
    strict JSON allows, ends in CANNOT CHECK on its line, never a traceback."""
    context, cafile = self_signed(tmp_path)
    cards: dict[str, object] = {}
    async with serving(cards, context) as card_base:
        linked = await linked_world(bureau, links=[identity_links.a2a(f"{card_base}{CARD}")])
        agent = linked.key_id
        big = sdk_card(signature_kids=[agent])
        big["description"] = "x" * 300_000
        cards[CARD] = big
        args = ["links", bureau.url, agent, "--cafile", str(cafile)]
        ran = await check(*args)
        assert ran.status == 0 and "a2a link: confirmed" in ran.out, ran.out
        big["description"] = "x" * (2 << 20)
        ran = await check(*args)
        assert ran.status == 2 and "more than 1048576 bytes" in ran.out, ran.out
        nested: object = agent
        for _ in range(500):  # deeper than strictjson.MAX_DEPTH; the server can write it
            nested = [nested]
        cards[CARD] = {"signatures": nested}
        ran = await check(*args)
        assert ran.status == 2 and "did not answer JSON" in ran.out, ran.out
        assert "Traceback" not in ran.out
