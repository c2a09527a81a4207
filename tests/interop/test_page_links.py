"""The agent page shows the links the report carries as the agent's own claims, with how
to confirm each, escaped like every text from the ledger."""

from __future__ import annotations

import html

from bureau.http.pages import PageSite, agent_page
from tests.interop.support import IDENTITY, PUBLIC_URL, Linked
from tests.pages.test_render import HOURS_6, report


def test_links_are_shown_as_claims_with_how_to_confirm() -> None:
    agent = "ed25519:" + "A" * 43
    links = [{"kind": "erc8004", "registry": f"eip155:8453:{IDENTITY}", "agent_id": "22"},
             {"kind": "a2a", "card": "https://agent.example/card?a=1&b=<2>"},
             {"kind": "mcp", "server": "io.github.agent/weather"}]
    page = agent_page(report(agent=agent, links=links), b"{}", PageSite("k", HOURS_6, PUBLIC_URL))
    assert "Links the agent claims" in page and "<strong>own claims</strong>" in page
    assert "checked their form only" in page
    assert "tokenURI(22)" in page and IDENTITY in page and "chain 8453" in page
    assert html.escape("https://agent.example/card?a=1&b=<2>") in page
    assert "<2>" not in page  # escaped, never markup
    assert "io.github.agent/weather" in page
    assert page.count(f"bureau-check links {PUBLIC_URL} {agent}") == 3


def test_no_links_is_said_plainly() -> None:
    page = agent_page(report(links=[]), b"{}", PageSite("k", HOURS_6, PUBLIC_URL))
    assert "links no identity elsewhere" in page
    page = agent_page(report(), b"{}", PageSite("k", HOURS_6))  # a report without the key
    assert "links no identity elsewhere" in page


async def test_the_served_page_shows_the_reports_links(linked: Linked) -> None:
    async with linked.bureau.session.get(f"{linked.bureau.url}/agents/{linked.key_id}",
                                         headers={"Accept": "text/html"}) as resp:
        assert resp.status == 200
        page = await resp.text()
    assert linked.links[2]["server"] in page and html.escape(linked.links[1]["card"]) in page
