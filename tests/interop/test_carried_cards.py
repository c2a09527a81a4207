"""The reputation card where agents are found (SPEC §9.1 r4): in the A2A card
extension's ``params.card`` and, for a server one agent alone claims, in the MCP
registry entry's publisher-provided ``_meta`` within the registry's 4,096 bytes; each
verifies offline (reporters.verify_card) as the card of that agent and epoch."""

from __future__ import annotations

from urllib.parse import quote

from bureau.interop import mcp_view
from bureau.interop.mcp_view import PUBLISHER_KEY, PUBLISHER_PROVIDED
from bureau.reads.portable import EpochProof
from bureau.storage.reports import Seal
from reporters import verify_card, wire
from reporters.portable import MAX_CARD_BYTES, card_statement
from reporters.tlog.checkpoint import Checkpoint, cosign, log_signer, sign_checkpoint_note
from reporters.tlog.merkle import leaf_hash
from reporters.tlog.note import COSIGNATURE_V1, Signer
from reporters.tlog.tlogproof import TlogProof
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


def test_a_card_as_full_as_it_may_be_still_fits_the_registrys_cap() -> None:
    """A card of 4,000 bytes (a note with many cosignatures, trimmed to fit) wrapped as
    publisher-provided metadata was 4,099 bytes: past the registry's 4,096. The MCP
    view asks for the card in the bytes its wrapping leaves (mcp_view.card_budget)."""
    key = wire.generate_key()
    log_key = log_signer("bureau-test-log", key)
    head = "cd" * 32
    tree = Checkpoint(log_key.name, 1, leaf_hash(bytes.fromhex(head)))
    agent = kid(wire.generate_key())
    payload = wire.canonical_json({"agent": agent, "epoch": 3, "ledger": {"seq": 1, "head": head},
                                   "policy": "ab" * 32, "score": None})
    statement = wire.sign_envelope_bytes(key, wire.payload_type("card"), card_statement(payload))

    def shared_with(witnesses: list[str]) -> EpochProof:
        note = sign_checkpoint_note(tree, log_key)
        for name in witnesses:
            note += cosign(tree, Signer(name, wire.generate_key(), COSIGNATURE_V1),
                           1_700_000_000)
        return EpochProof(Seal(3, 1, 1, head), b"{}", TlogProof(0, (), note), [], [])

    witnesses = [f"w{i}.example" for i in range(20)]
    whole = 10 * MAX_CARD_BYTES  # a budget no card here reaches: nothing trimmed
    short = len(shared_with([*witnesses, "w.example"]).card_bytes(statement, whole))
    assert short < MAX_CARD_BYTES
    # the last witness's name padded so the whole card is exactly as full as it may be
    shared = shared_with([*witnesses, "w" + "x" * (MAX_CARD_BYTES - short) + ".example"])
    assert len(shared.card_bytes(statement)) == MAX_CARD_BYTES
    assert mcp_view.card_budget(agent) < MAX_CARD_BYTES
    card = shared.card(statement, mcp_view.card_budget(agent))
    entry = mcp_view.Entry("io.github.full/x", 1, [mcp_view.Claim(agent, {})], False)
    provided = mcp_view.server_response(entry, 3, PUBLIC_URL, {agent: card})["_meta"][
        PUBLISHER_PROVIDED]
    assert len(wire.canonical_json(provided)) <= mcp_view.PUBLISHER_PROVIDED_BYTES
    verify_card(provided[PUBLISHER_KEY]["card"], [log_key.verifier.vkey], agent=agent)
