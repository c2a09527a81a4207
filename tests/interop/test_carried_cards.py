"""The reputation card where agents are found (SPEC §9.1 r4): in the A2A card
extension's ``params.card`` and, for a server one agent alone claims, in the MCP
registry entry's publisher-provided ``_meta`` within the registry's 4,096 bytes; each
verifies offline (reporters.verify_card) as the card of that agent and epoch."""

from __future__ import annotations

from urllib.parse import quote

from bureau.interop.mcp_view import PUBLISHER_KEY, PUBLISHER_PROVIDED
from reporters import verify_card, wire
from tests.interop.support import PUBLIC_URL, get_json, linked_world, links_for
from tests.support import BureauUnderTest, kid

META = "test.example.bureau/reputation"


async def test_the_a2a_extension_carries_the_card(bureau: BureauUnderTest) -> None:
    linked = await linked_world(bureau)
    status, ext = await get_json(bureau, f"/v1/agents/{linked.key_id}/a2a-extension")
    assert status == 200, ext
    card = ext["params"]["card"]
    assert len(wire.canonical_json(card)) <= 4000
    checked = verify_card(card, [bureau.log_key.vkey], agent=linked.key_id,
                          epoch=linked.epoch)
    assert checked.facts["agent"] == linked.key_id
    status, direct = await get_json(bureau, f"/v1/agents/{linked.key_id}/card")
    assert status == 200 and direct == card
    # an agent with no report yet: the extension, without a card
    stranger = kid(wire.generate_key())
    status, ext = await get_json(bureau, f"/v1/agents/{stranger}/a2a-extension")
    assert status == 200 and "card" not in ext["params"]


async def test_a_sole_claimant_card_is_publisher_provided_metadata(
        bureau: BureauUnderTest) -> None:
    server = "io.github.sole/weather"
    linked = await linked_world(bureau, links_for(server=server))
    status, entry = await get_json(bureau, "/v0/servers/" + quote(server, safe=""))
    assert status == 200, entry
    provided = entry["_meta"][PUBLISHER_PROVIDED]
    assert len(wire.canonical_json(provided)) <= 4096  # the MCP registry's cap
    mine = provided[PUBLISHER_KEY]
    assert mine["agent"] == linked.key_id
    verify_card(mine["card"], [bureau.log_key.vkey], agent=linked.key_id,
                epoch=linked.epoch)
    [claim] = entry["_meta"][META]["claims"]
    assert claim["card"] == (f"{PUBLIC_URL}/v1/agents/{linked.key_id}/card"
                             f"?epoch={linked.epoch}")
    status, page = await get_json(bureau, "/v0/servers?search=sole")
    assert status == 200 and page["servers"] == [entry]


async def test_a_contested_name_carries_no_publisher_card(bureau: BureauUnderTest) -> None:
    from reporters import identity_links
    from tests.interop.support import enroll_linked
    from tests.views.support import World, next_epoch

    world = await World.make(bureau)
    server = "io.github.contested/x"
    for name in ("first", "second"):
        agent = await enroll_linked(bureau, name, [identity_links.mcp(server)])
        await world.fact(agent, check="PASS")
    await next_epoch(bureau)
    status, entry = await get_json(bureau, "/v0/servers/" + quote(server, safe=""))
    assert status == 200 and PUBLISHER_PROVIDED not in entry["_meta"]
    assert len(entry["_meta"][META]["claims"]) == 2
