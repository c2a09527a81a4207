"""Links (SPEC §3 r3): each rule of their form, one test each, in the model both sides
use, and at the bureau (``SCHEMA`` at the item); reports carry the links in force at the
seal, in the order given; an amendment replaces them whole."""

from __future__ import annotations

from typing import Any

import pytest

from reporters import Agent, BureauClientError, identity_links
from reporters.models import AmendmentPayload, EnrollmentPayload, PayloadInvalid, validate_payload
from tests.interop.support import IDENTITY, enroll_linked, get_json, links_for
from tests.support import BureauUnderTest, get, issued, kid
from tests.views.support import World, enrollment, next_epoch, open_envelope

REGISTRY = f"eip155:1:{IDENTITY}"
GOOD_LINKS = [
    pytest.param({"kind": "erc8004", "registry": REGISTRY, "agent_id": "22"}, id="erc8004"),
    pytest.param({"kind": "erc8004", "registry": REGISTRY, "agent_id": "0"}, id="agent-id-0"),
    pytest.param({"kind": "erc8004", "registry": REGISTRY, "agent_id": str(2**256 - 1)},
                 id="agent-id-uint256-max"),
    pytest.param({"kind": "erc8004", "registry": "eip155:8453:0x" + "ab" * 20,
                  "agent_id": "1"}, id="lowercase-address-other-chain"),
    pytest.param({"kind": "erc8004", "registry": "eip155:" + "9" * 32 + ":0x" + "A" * 40,
                  "agent_id": "1"}, id="chain-id-32-digits"),
    pytest.param({"kind": "a2a", "card": "https://agent.example/.well-known/agent-card.json"},
                 id="a2a"),
    pytest.param({"kind": "a2a", "card": "https://agent.example:8443/c?x=1&y=%20#f"},
                 id="a2a-port-query-escape"),
    pytest.param({"kind": "a2a", "card": "https://a.example/" + "x" * (2048 - 18)},
                 id="a2a-2048-characters"),
    pytest.param({"kind": "mcp", "server": "io.github.user/weather"}, id="mcp"),
    pytest.param({"kind": "mcp", "server": "a/b"}, id="mcp-shortest"),
    pytest.param({"kind": "mcp", "server": "com.example/" + "s" * 188}, id="mcp-200"),
]
BAD_LINKS = [
    # kinds and shapes
    pytest.param({"kind": "ens", "name": "agent.eth"}, id="unknown-kind"),
    pytest.param({"registry": REGISTRY, "agent_id": "1"}, id="no-kind"),
    pytest.param({"kind": ["mcp"], "server": "a/b"}, id="kind-not-a-string"),
    pytest.param("io.github.user/weather", id="not-an-object"),
    pytest.param(None, id="null"),
    pytest.param({"kind": "mcp", "server": "a/b", "note": "x"}, id="unknown-field"),
    pytest.param({"kind": "a2a", "server": "a/b"}, id="another-kinds-field"),
    # erc8004
    pytest.param({"kind": "erc8004", "registry": REGISTRY}, id="erc8004-no-agent-id"),
    pytest.param({"kind": "erc8004", "agent_id": "1"}, id="erc8004-no-registry"),
    pytest.param({"kind": "erc8004", "registry": REGISTRY, "agent_id": 22},
                 id="agent-id-a-number"),
    pytest.param({"kind": "erc8004", "registry": REGISTRY, "agent_id": "022"},
                 id="agent-id-leading-zero"),
    pytest.param({"kind": "erc8004", "registry": REGISTRY, "agent_id": "-1"},
                 id="agent-id-negative"),
    pytest.param({"kind": "erc8004", "registry": REGISTRY, "agent_id": "1 "},
                 id="agent-id-trailing-space"),
    pytest.param({"kind": "erc8004", "registry": REGISTRY, "agent_id": "١"},
                 id="agent-id-arabic-digit"),
    pytest.param({"kind": "erc8004", "registry": "eip155:1:0x" + "a" * 39, "agent_id": "1"},
                 id="address-39-hex"),
    pytest.param({"kind": "erc8004", "registry": "eip155:1:0x" + "a" * 41, "agent_id": "1"},
                 id="address-41-hex"),
    pytest.param({"kind": "erc8004", "registry": "eip155:1:" + "a" * 40, "agent_id": "1"},
                 id="address-without-0x"),
    pytest.param({"kind": "erc8004", "registry": "eip155:1:0x" + "g" * 40, "agent_id": "1"},
                 id="address-not-hex"),
    pytest.param({"kind": "erc8004", "registry": "eip155:01:" + IDENTITY, "agent_id": "1"},
                 id="chain-leading-zero"),
    pytest.param({"kind": "erc8004", "registry": "eip155:" + "9" * 33 + ":" + IDENTITY,
                  "agent_id": "1"}, id="chain-33-digits"),
    pytest.param({"kind": "erc8004", "registry": "solana:1:" + IDENTITY, "agent_id": "1"},
                 id="not-eip155"),
    pytest.param({"kind": "erc8004", "registry": "eip155:" + IDENTITY, "agent_id": "1"},
                 id="no-chain"),
    pytest.param({"kind": "erc8004", "registry": REGISTRY + " ", "agent_id": "1"},
                 id="registry-trailing-space"),
    # a2a
    pytest.param({"kind": "a2a", "card": "http://agent.example/card.json"}, id="http"),
    pytest.param({"kind": "a2a", "card": "HTTPS://agent.example/"}, id="scheme-uppercase"),
    pytest.param({"kind": "a2a", "card": "https://"}, id="no-host"),
    pytest.param({"kind": "a2a", "card": "https:///path"}, id="empty-host"),
    pytest.param({"kind": "a2a", "card": "https://u:p@agent.example/"}, id="credentials"),
    pytest.param({"kind": "a2a", "card": "https://agent.example:99999/"}, id="bad-port"),
    pytest.param({"kind": "a2a", "card": "https://agent.example/a b"}, id="space"),
    pytest.param({"kind": "a2a", "card": "https://agént.example/"}, id="not-ascii"),
    pytest.param({"kind": "a2a", "card": "https://agent.example/<x>"}, id="angle-brackets"),
    pytest.param({"kind": "a2a", "card": "https://a.example/" + "x" * (2049 - 18)},
                 id="a2a-2049-characters"),
    pytest.param({"kind": "a2a", "card": "ftp://agent.example/"}, id="ftp"),
    # mcp
    pytest.param({"kind": "mcp", "server": "weather"}, id="mcp-no-slash"),
    pytest.param({"kind": "mcp", "server": "a/b/c"}, id="mcp-two-slashes"),
    pytest.param({"kind": "mcp", "server": "/weather"}, id="mcp-no-namespace"),
    pytest.param({"kind": "mcp", "server": "io.github.user/"}, id="mcp-no-name"),
    pytest.param({"kind": "mcp", "server": "io github/x"}, id="mcp-space"),
    pytest.param({"kind": "mcp", "server": "io_github/x"}, id="mcp-underscore-namespace"),
    pytest.param({"kind": "mcp", "server": "com.example/" + "s" * 189}, id="mcp-201"),
    pytest.param({"kind": "mcp", "server": "io.github.user/wéather"}, id="mcp-not-ascii"),
]


def _enrollment(links: Any) -> dict[str, Any]:
    return {**enrollment("linker"), "links": links}


def _refused(model: Any, doc: dict[str, Any]) -> PayloadInvalid:
    with pytest.raises(PayloadInvalid) as caught:
        validate_payload(model, doc)
    return caught.value


@pytest.mark.parametrize("link", GOOD_LINKS)
def test_a_link_of_the_right_form_is_accepted(link: dict[str, str]) -> None:
    payload = validate_payload(EnrollmentPayload, _enrollment([link]))
    assert [x.model_dump() for x in payload.links] == [link]


@pytest.mark.parametrize("link", BAD_LINKS)
def test_a_bad_link_is_schema_at_the_item(link: Any) -> None:
    good = {"kind": "mcp", "server": "io.github.user/ok"}
    err = _refused(EnrollmentPayload, _enrollment([good, link]))
    assert err.path == "/links/1", err.detail
    err = _refused(AmendmentPayload, {"issued_at": issued(), "links": [link]})
    assert err.path == "/links/0", err.detail


def test_at_most_16_links_and_the_17th_is_refused_at_its_item() -> None:
    """SPEC §3 r4: a 17th item is ``SCHEMA`` at ``/links/16`` (issue 35)."""
    links = [identity_links.mcp(f"io.github.u/s{i}") for i in range(16)]
    assert len(validate_payload(EnrollmentPayload, _enrollment(links)).links) == 16
    err = _refused(EnrollmentPayload, _enrollment([*links, identity_links.mcp("a/b")]))
    assert err.path == "/links/16" and "16" in err.detail
    # however many follow, and whatever they are: the 17th is named, none is read
    err = _refused(AmendmentPayload, {"issued_at": issued(), "links": [*links, *[None] * 500]})
    assert err.path == "/links/16"


def test_a_duplicate_link_is_refused_at_the_later_item() -> None:
    """SPEC §3 r4: a second link equal to an earlier one is ``SCHEMA`` at the later item."""
    link = identity_links.a2a("https://agent.example/card.json")
    err = _refused(EnrollmentPayload, _enrollment([link, identity_links.mcp("a/b"), link]))
    assert err.path == "/links/2" and "distinct" in err.detail and "item 0" in err.detail
    # the same target under another kind, or another agent id, is another link
    validate_payload(EnrollmentPayload, _enrollment([
        identity_links.erc8004(1, IDENTITY, 1), identity_links.erc8004(1, IDENTITY, 2)]))


@pytest.mark.parametrize(("first", "again"), [
    pytest.param(identity_links.erc8004(1, IDENTITY, 7),
                 identity_links.erc8004(1, IDENTITY.lower(), 7), id="address-case"),
    pytest.param(identity_links.a2a("https://agent.example/card.json"),
                 identity_links.a2a("https://Agent.EXAMPLE:443/card.json"), id="host-case-port"),
    pytest.param(identity_links.a2a("https://agent.example"),
                 identity_links.a2a("https://agent.example/"), id="empty-path"),
])
def test_two_spellings_of_one_link_are_a_duplicate(first: dict[str, str],
                                                   again: dict[str, str]) -> None:
    """One token, one card: an address differs only in its checksum case (the bureau then
    gave two feedbacks for one token each epoch), a host in case or in https's default
    port. Paths, queries and other ports still tell links apart."""
    err = _refused(EnrollmentPayload, _enrollment([first, again]))
    assert err.path == "/links/1" and "item 0" in err.detail
    validate_payload(EnrollmentPayload, _enrollment([
        identity_links.a2a("https://agent.example/Card.json"),
        identity_links.a2a("https://agent.example/card.json"),
        identity_links.a2a("https://agent.example:8443/card.json")]))


@pytest.mark.parametrize("agent_id", [str(2**256), "9" * 78, "1" * 79, "1" + "0" * 400])
def test_an_agent_id_above_uint256_is_refused_at_its_agent_id(agent_id: str) -> None:
    """SPEC §3 r4: ``agent_id`` is at most 2^256 - 1, else ``SCHEMA`` at the item's
    ``/agent_id``."""
    good = {"kind": "mcp", "server": "io.github.user/ok"}
    link = {"kind": "erc8004", "registry": REGISTRY, "agent_id": agent_id}
    err = _refused(EnrollmentPayload, _enrollment([good, link]))
    assert err.path == "/links/1/agent_id" and "2^256" in err.detail, err
    err = _refused(AmendmentPayload, {"issued_at": issued(), "links": [link]})
    assert err.path == "/links/0/agent_id"


def test_links_are_a_list() -> None:
    assert _refused(EnrollmentPayload, _enrollment({"kind": "mcp"})).path == "/links"
    assert _refused(AmendmentPayload, {"issued_at": issued(), "links": None}).path == "/links"


def test_links_are_optional_and_an_amendment_may_clear_them() -> None:
    assert validate_payload(EnrollmentPayload, enrollment("none")).links == []
    amendment = validate_payload(AmendmentPayload, {"issued_at": issued(), "links": []})
    assert amendment.links == []


def test_a_control_character_in_a_link_is_schema_at_that_string() -> None:
    err = _refused(EnrollmentPayload, _enrollment([{"kind": "mcp", "server": "a/b\x00"}]))
    assert err.path == "/links/0/server"


async def test_the_client_refuses_a_bad_link_before_sending(bureau: BureauUnderTest) -> None:
    async with Agent(_key(), bureau.url) as agent:
        with pytest.raises(BureauClientError) as caught:
            await agent.enroll("a", "a.example", "A Ltd", links=[{"kind": "mcp",
                                                                  "server": "weather"}])
        assert (caught.value.code, caught.value.path) == ("SCHEMA", "/links/0")


def _key() -> Any:
    from reporters import generate_key

    return generate_key()


async def test_the_bureau_refuses_a_bad_link_at_the_item(bureau: BureauUnderTest) -> None:
    status, body = await bureau.submit(_key(), "enrollment", _enrollment(
        [identity_links.mcp("io.github.u/ok"), {"kind": "a2a", "card": "http://x.example/"}]))
    assert status == 422 and (body["code"], body["path"]) == ("SCHEMA", "/links/1"), body


async def test_the_bureau_holds_the_link_limits_at_the_item(bureau: BureauUnderTest) -> None:
    """SPEC §3 r4 at the bureau: a 17th link, a repeated one, a token id above a uint256."""
    many = [identity_links.mcp(f"io.github.u/s{i}") for i in range(17)]
    repeated = [identity_links.mcp("a/b"), identity_links.mcp("c/d"), identity_links.mcp("a/b")]
    big = [{"kind": "erc8004", "registry": REGISTRY, "agent_id": str(2**256)}]
    for links, path in ((many, "/links/16"), (repeated, "/links/2"),
                        (big, "/links/0/agent_id")):
        status, body = await bureau.submit(_key(), "enrollment", _enrollment(links))
        assert status == 422 and (body["code"], body["path"]) == ("SCHEMA", path), body
    await bureau.verify()


async def test_reports_carry_the_links_in_force_at_the_seal(bureau: BureauUnderTest) -> None:
    world = await World.make(bureau)
    links = links_for()
    agent = await enroll_linked(bureau, "linker", links)
    plain = await world.agent("plain")
    await world.fact(agent)
    await world.fact(plain)
    first = (await next_epoch(bureau))[-1]
    key = await _bureau_key(bureau)

    async def report(who: str, epoch: int) -> dict[str, Any]:
        status, body = await get(bureau, f"/v1/agents/{who}/report?epoch={epoch}")
        assert status == 200
        return open_envelope(body, key)

    assert (await report(kid(agent), first))["links"] == links  # in the order given
    assert (await report(kid(plain), first))["links"] == []
    observed = "ed25519:" + "A" * 43  # observed, never enrolled
    await world.fact(observed)

    # an amendment of the name keeps the links; one of the links replaces them whole
    async with Agent(agent, bureau.url) as client:
        await client.amend(name="renamed")
        second = (await next_epoch(bureau))[-1]
        assert (await report(kid(agent), second))["links"] == links
        assert (await report(observed, second))["links"] == []
        await client.set_links([links[2], links[0]])
        third = (await next_epoch(bureau))[-1]
        assert (await report(kid(agent), third))["links"] == [links[2], links[0]]
        await client.set_links([])
        fourth = (await next_epoch(bureau))[-1]
        assert (await report(kid(agent), fourth))["links"] == []
    # a sealed report never changes
    assert (await report(kid(agent), first))["links"] == links


async def _bureau_key(bureau: BureauUnderTest) -> str:
    status, info = await get_json(bureau, "/v1/bureau")
    assert status == 200
    key: str = info["key"]
    return key
