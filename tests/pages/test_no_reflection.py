"""The public page never reflects the request (issue 12: the ``Host`` header was copied
into the verification snippet, so a cache keyed on the path alone would serve an
attacker's snippet to everyone). The address in the snippet is the operator's
``BUREAU_PUBLIC_URL``, or none; every link is relative."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bureau.config import Config, public_url
from reporters import wire
from tests.support import BureauUnderTest, kid, start_bureau
from tests.views.support import EPOCH_SECONDS, World, next_epoch

EVIL = "evil.example"


async def _page(bureau: BureauUnderTest) -> tuple[str, str]:
    """An agent's page, fetched with a hostile Host header and forwarding headers."""
    w = await World.make(bureau)
    a = await w.agent("alpha")
    await w.fact(a)
    await next_epoch(bureau)
    path = f"/agents/{kid(a)}"
    async with bureau.session.get(bureau.url + path, headers={
            "Host": EVIL, "X-Forwarded-Host": EVIL, "X-Forwarded-Proto": "gopher",
            "Forwarded": f"host={EVIL};proto=gopher"}) as resp:
        assert resp.status == 200
        return kid(a), await resp.text()


@pytest.fixture
async def bureau(database_url: str, tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS) as b:
        yield b


async def test_the_host_header_never_reaches_the_page(bureau: BureauUnderTest) -> None:
    agent, page = await _page(bureau)
    assert EVIL not in page and "gopher" not in page
    assert "127.0.0.1" not in page  # nor the address the request really came to
    assert f'href="/v1/agents/{agent}/report"' in page
    assert "base = sys.argv[1]" in page


async def test_the_configured_public_url_is_the_one_in_the_snippet(
        database_url: str, tmp_path: Path) -> None:
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS,
                            public_url="https://bureau.example/reputation") as bureau:
        _, page = await _page(bureau)
    assert EVIL not in page
    assert "base = &#x27;https://bureau.example/reputation&#x27;" in page


@pytest.mark.parametrize("bad", ["ftp://bureau.example", "https://bureau.example/?q=1",
                                 "https://b.example/'+__import__('os')+'",
                                 "https://b.example/<script>", "bureau.example"])
def test_a_public_url_that_is_not_a_plain_address_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="BUREAU_PUBLIC_URL"):
        Config.from_env({"BUREAU_PUBLIC_URL": bad})
    assert public_url("https://bureau.example/") == "https://bureau.example"


async def test_no_page_reflects_the_request(bureau: BureauUnderTest) -> None:
    """The home page (with a search and a page number), an agent's page and the page a
    browser gets for an agent without a report."""
    agent, _ = await _page(bureau)
    hostile = {"Host": EVIL, "X-Forwarded-Host": EVIL, "X-Forwarded-Proto": "gopher",
               "Forwarded": f"host={EVIL};proto=gopher", "Accept": "text/html"}
    nobody = kid(wire.generate_key())
    for path in ("/", "/?q=alpha", f"/?q={agent[8:20]}&page=1", f"/agents/{nobody}"):
        async with bureau.session.get(bureau.url + path, headers=hostile) as resp:
            page = await resp.text()
        assert resp.content_type == "text/html", path
        assert EVIL not in page and "gopher" not in page and "127.0.0.1" not in page, path
        assert 'href="http' not in page, path  # every link relative
