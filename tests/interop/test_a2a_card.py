"""The A2A card extension: the object the bureau serves, and which key ids a card names
(in the extension or a signature), on cards built with the A2A SDK's own types."""

from __future__ import annotations

from typing import Any

import pytest

from reporters.interop import (
    REPUTATION_EXTENSION_URI,
    card_extension,
    card_key_ids,
    card_key_mismatch,
    card_names_key,
    meta_names_key,
)
from tests.interop.cards import sdk_card
from tests.interop.support import PUBLIC_URL, get_json
from tests.support import BureauUnderTest

KEY = "ed25519:" + "A" * 43
OTHER = "ed25519:" + "B" * 43


def test_a_card_with_the_extension_names_its_key() -> None:
    card = sdk_card([card_extension(PUBLIC_URL, "vkey", KEY)])
    assert card_names_key(card, KEY) and not card_names_key(card, OTHER)
    assert card_key_ids(card) == [KEY]


def test_a_card_signature_names_its_key() -> None:
    card = sdk_card(signature_kids=[KEY])
    assert card_names_key(card, KEY) and not card_names_key(card, OTHER)
    # the unprotected header counts too
    assert card_names_key({"signatures": [{"protected": "", "header": {"kid": OTHER}}]},
                          OTHER)


def test_another_extension_or_another_key_names_nothing() -> None:
    other_uri = {**card_extension(PUBLIC_URL, "vkey", KEY), "uri": "urn:something:else"}
    assert not card_names_key(sdk_card([other_uri]), KEY)
    assert not card_names_key(sdk_card([card_extension(PUBLIC_URL, "vkey", OTHER)]), KEY)
    assert not card_names_key(sdk_card(), KEY)


def test_a_reporter_checks_the_cards_extension_against_its_routes_key() -> None:
    assert card_key_mismatch(sdk_card([card_extension(PUBLIC_URL, "v", KEY)]), KEY) is None
    assert card_key_mismatch(sdk_card(), KEY) is None  # no extension: nothing to check
    assert card_key_mismatch(sdk_card(signature_kids=[OTHER]), KEY) is None
    why = card_key_mismatch(sdk_card([card_extension(PUBLIC_URL, "v", OTHER)]), KEY)
    assert why is not None and OTHER in why and KEY in why
    both = sdk_card([card_extension(PUBLIC_URL, "v", OTHER), card_extension("u", "v", KEY)])
    assert card_key_mismatch(both, KEY) is None


@pytest.mark.parametrize("card", [
    None, [], "card", 7, {"capabilities": None}, {"capabilities": {"extensions": "x"}},
    {"capabilities": {"extensions": [None, 1, {"uri": REPUTATION_EXTENSION_URI}]}},
    {"capabilities": {"extensions": [{"uri": REPUTATION_EXTENSION_URI, "params": [KEY]}]}},
    {"capabilities": {"extensions": [{"uri": REPUTATION_EXTENSION_URI,
                                      "params": {"agent": [KEY]}}]}},
    {"signatures": [None, {"protected": "!!!"}, {"protected": "bm90IGpzb24"},
                    {"protected": 5}, {"header": [KEY]}]},
    {"description": KEY},  # the key id as text somewhere is not naming it
])
def test_malformed_cards_name_nothing_and_never_raise(card: Any) -> None:
    assert not card_names_key(card, KEY)


def test_an_mcp_entry_names_the_key_in_its_meta() -> None:
    entry = {"server": {"name": "io.github.u/s", "description": KEY, "_meta": {
        "io.modelcontextprotocol.registry/publisher-provided": {"bureau": {"agent": KEY}}}},
        "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active"}}}
    assert meta_names_key(entry, KEY) and not meta_names_key(entry, OTHER)
    assert not meta_names_key({"server": {"description": KEY}}, KEY)
    assert meta_names_key({"name": "a/b", "_meta": {"x": [KEY]}}, KEY)  # a bare server.json
    assert not meta_names_key([KEY], KEY)


async def test_the_bureau_serves_the_extension_object(bureau: BureauUnderTest) -> None:
    status, ext = await get_json(bureau, f"/v1/agents/{KEY}/a2a-extension")
    assert status == 200
    assert ext["uri"] == REPUTATION_EXTENSION_URI and ext["required"] is False
    assert ext["params"] == {"bureau": PUBLIC_URL, "vkey": bureau.log_key.vkey, "agent": KEY}
    # an agent pastes it into its card as is: the SDK's types take it, and it is found
    assert card_names_key(sdk_card([ext]), KEY)
    status, body = await get_json(bureau, f"/v1/agents/{KEY}/a2a-extension?x=1")
    assert status == 422 and body["path"] == "/x"
    status, body = await get_json(bureau, "/v1/agents/ed25519:short/a2a-extension")
    assert status == 404
