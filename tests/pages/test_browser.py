"""The public page in a real headless browser (Debian's chromium): it renders the
agent's score and its chart; a screenshot is kept in test-artifacts/."""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from bureau.http.keys import SEALER
from reporters import wire
from tests.support import BureauUnderTest, fact_payload, kid, now_text

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Flags that keep Chromium from reaching for the network or a display.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]

pytestmark = [pytest.mark.thirdparty, pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (.ci/run installs Debian's chromium; "
                             "elsewhere: apt-get install chromium)")]


async def _chromium(*args: str) -> bytes:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="bureau-chromium-") as profile:
        proc = await asyncio.create_subprocess_exec(
            CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=90)
    assert proc.returncode == 0
    return out


async def _agent_with_a_report(bureau: BureauUnderTest) -> str:
    rep = await bureau.reporter(roles=("facts", "probes"))
    agent = wire.generate_key()
    await bureau.accepted(agent, "enrollment", {
        "name": "Translator <Nine>", "anchor": {"kind": "domain", "value": "nine.example"},
        "operator": "Nine Ltd", "promises": []})
    for i in range(6):
        await bureau.accepted(rep, "fact", fact_payload(
            f"page-{i}", kid(agent), check="PASS" if i % 3 else "FAIL", latency_ms=100 * i))
    await bureau.accepted(rep, "probe", {"interaction": "page-1", "subject": kid(agent),
                                         "probe": "known-1", "passed": True,
                                         "observed_at": now_text()})
    bureau.clock.advance(bureau.config.epoch_seconds)
    assert await bureau.app[SEALER].seal_once()
    return kid(agent)


async def test_agent_page_renders_score_and_chart(bureau: BureauUnderTest) -> None:
    agent = await _agent_with_a_report(bureau)
    url = f"{bureau.url}/agents/{agent}"
    dom = (await _chromium("--dump-dom", url)).decode()
    assert "Translator &lt;Nine&gt;" in dom
    assert 'id="score"' in dom and "<svg" in dom and 'class="bar"' in dom
    assert "ACCEPTED: 4" in dom and "FAILED_DISCOVERED: 2" in dom
    ARTIFACTS.mkdir(exist_ok=True)
    for name, size in (("agent-page-phone.png", "390,1400"), ("agent-page.png", "1100,1300")):
        shot = ARTIFACTS / name
        shot.unlink(missing_ok=True)
        await _chromium(f"--screenshot={shot}", f"--window-size={size}", url)
        assert shot.stat().st_size > 10_000  # a real rendering, not a blank page


async def test_front_page_renders(bureau: BureauUnderTest) -> None:
    await _agent_with_a_report(bureau)
    dom = (await _chromium("--dump-dom", bureau.url + "/")).decode()
    assert "Agent Reputation Bureau" in dom and "sealed at entry" in dom


async def _screenshots(url: str, name: str) -> None:
    """``name.png`` at desktop width and ``name-phone.png`` at a phone's."""
    ARTIFACTS.mkdir(exist_ok=True)
    for suffix, size in (("-phone", "390,1400"), ("", "1100,1300")):
        shot = ARTIFACTS / f"{name}{suffix}.png"
        shot.unlink(missing_ok=True)
        await _chromium(f"--screenshot={shot}", f"--window-size={size}", url)
        assert shot.stat().st_size > 10_000  # a real rendering, not a blank page


async def test_agent_page_explains_the_score_and_dates_the_epoch(
        bureau: BureauUnderTest) -> None:
    agent = await _agent_with_a_report(bureau)
    dom = (await _chromium("--dump-dom", f"{bureau.url}/agents/{agent}")).decode()
    assert "What the number means." in dom and "0.5 means no evidence either way" in dom
    assert "How sure it is." in dom and "95% sure" in dom
    assert re.search(r"Report for epoch \d+ \(\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? – ", dom)
    assert "UTC)" in dom and "pip install pynacl" in dom
    assert re.search(r'href="/v1/policies/[0-9a-f]{64}"', dom)


async def _ranked_agents(bureau: BureauUnderTest) -> dict[str, str]:
    """Three agents, one epoch: a long good record, a short good one, a bad one."""
    rep = await bureau.reporter(roles=("facts",))
    keys: dict[str, str] = {}
    for name, checks in (("Short Good", ["PASS"] * 2), ("Long Good", ["PASS"] * 12),
                         ("Often Wrong", ["FAIL"] * 5 + ["PASS"])):
        agent = wire.generate_key()
        await bureau.accepted(agent, "enrollment", {
            "name": name, "anchor": {"kind": "domain",
                                     "value": name.lower().replace(" ", "") + ".example"},
            "operator": name + " Ltd", "promises": []})
        for i, check in enumerate(checks):
            await bureau.accepted(rep, "fact", fact_payload(f"{name[:4]}-{i}", kid(agent),
                                                            check=check))
        keys[name] = kid(agent)
    bureau.clock.advance(bureau.config.epoch_seconds)
    assert await bureau.app[SEALER].seal_once()
    return keys


async def test_home_page_ranks_by_score_low_and_searches(bureau: BureauUnderTest) -> None:
    keys = await _ranked_agents(bureau)
    dom = (await _chromium("--dump-dom", bureau.url + "/")).decode()
    table = dom.split('id="ranked"')[1]
    # the long record first although the short one's score may be as high: by score.low
    assert table.index("Long Good") < table.index("Short Good") < table.index("Often Wrong")
    assert re.search(r"From the signed reports of epoch \d+ \(\d{4}-\d\d-\d\d ", dom)
    await _screenshots(bureau.url + "/", "home-page")

    found = (await _chromium("--dump-dom", bureau.url + "/?q=good")).decode()
    table = found.split('id="ranked"')[1]
    assert "Long Good" in table and "Short Good" in table and "Often Wrong" not in table
    by_key = (await _chromium("--dump-dom",
                              bureau.url + "/?q=" + keys["Often Wrong"][8:30])).decode()
    assert "Often Wrong" in by_key.split('id="ranked"')[1]
    assert "Long Good" not in by_key.split('id="ranked"')[1]
    none = (await _chromium("--dump-dom", bureau.url + "/?q=nobody")).decode()
    assert 'id="no-match"' in none
    await _screenshots(bureau.url + "/?q=good", "home-page-search")


async def test_a_browser_gets_a_page_for_an_agent_without_a_report(
        bureau: BureauUnderTest) -> None:
    nobody = kid(wire.generate_key())
    url = f"{bureau.url}/agents/{nobody}"
    dom = (await _chromium("--dump-dom", url)).decode()
    assert "<h1>Not found</h1>" in dom and f"No report for {nobody} yet" in dom
    await _screenshots(url, "not-found-page")
    # a program asking for JSON gets the error shape, with the same status
    async with bureau.session.get(url, headers={"Accept": "application/json"}) as resp:
        assert resp.status == 404 and (await resp.json())["code"] == "NOT_FOUND"
    async with bureau.session.get(url, headers={"Accept": "text/html"}) as resp:
        assert resp.status == 404 and resp.content_type == "text/html"


#: measures the page as laid out, from inside the frame it is shown in: how many rows
#: the navigation's links take, and whether anything is wider than the frame
_MEASURE = (
    "<script>const links = [...document.querySelectorAll('header nav a')];"
    "const rest = links.filter(a => !a.classList.contains('home'));"
    "const out = parent.document.body.dataset;"
    "out.navRows = new Set(links.map(a => a.offsetTop)).size;"
    "out.linkRows = new Set(rest.map(a => a.offsetTop)).size;"
    "out.overflow = document.documentElement.scrollWidth > innerWidth;"
    "out.width = innerWidth;</script>")


async def _measured(bureau: BureauUnderTest, path: str, width: int,
                    shot: str | None = None) -> dict[str, str]:
    """The bureau's page at ``path`` laid out by Chromium in a frame ``width`` px wide
    (headless Chromium's windows are at least 500 px wide, so a phone is a frame), with
    :data:`_MEASURE`'s figures. The page itself has no script: a loopback server of
    this test serves it, with the script appended, beside the frame that shows it."""
    from aiohttp import web

    from tests.support import serving

    async def page(request: web.Request) -> web.Response:
        async with bureau.session.get(bureau.url + path) as resp:
            text = await resp.text()
        return web.Response(text=text.replace("</body>", _MEASURE + "</body>"),
                            content_type="text/html")

    async def frame(request: web.Request) -> web.Response:
        return web.Response(text=f"<!doctype html><html><body style=\"margin:0\"><iframe "
                            f"src=\"/page\" width=\"{width}\" height=\"900\" "
                            "style=\"border:0\"></iframe></body></html>",
                            content_type="text/html")

    app = web.Application()
    app.router.add_get("/", frame)
    app.router.add_get("/page", page)
    async with serving(app) as url:
        dom = (await _chromium("--dump-dom", "--window-size=1200,1000", url + "/")).decode()
        if shot is not None:  # the page as a phone shows it, in its frame
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / shot).unlink(missing_ok=True)
            await _chromium(f"--screenshot={ARTIFACTS / shot}", "--window-size=600,900",
                            url + "/")
            assert (ARTIFACTS / shot).stat().st_size > 10_000
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None
    figures = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    assert figures.get("width") == str(width), figures  # measured in the frame
    return figures


async def test_navigation_fits_a_phone_and_a_desk(bureau: BureauUnderTest) -> None:
    agent = await _agent_with_a_report(bureau)
    for path, name in (("/", "home-page-390.png"), (f"/agents/{agent}", "agent-page-390.png")):
        phone = await _measured(bureau, path, 390, name)
        assert phone["link-rows"] == "1", (path, phone)  # the links on one line
        assert phone["nav-rows"] == "2" and phone["overflow"] == "false", (path, phone)
        desk = await _measured(bureau, path, 1100)
        assert desk["nav-rows"] == "1" and desk["overflow"] == "false", (path, desk)


async def test_observed_scored_badges_and_one_call_below_a_long_record(
        bureau: BureauUnderTest) -> None:
    keys = await _ranked_agents(bureau)
    # the same epoch: an unenrolled agent with one checked call, one seen but never judged
    rep = await bureau.reporter(roles=("facts",))
    once, seen = wire.generate_key(), wire.generate_key()
    await bureau.accepted(rep, "fact", fact_payload("once-1", kid(once), check="PASS"))
    for i in range(5):
        await bureau.accepted(rep, "fact", fact_payload(f"seen-{i}", kid(seen)))
    await _sealed_next(bureau, keys)  # a new epoch with every agent in it
    dom = (await _chromium("--dump-dom", bureau.url + "/")).decode()
    table = dom.split('id="ranked"')[1]
    rows = {name: row for row in table.split("</tr>")
            for name in ("Long Good", kid(once)[:16], kid(seen)[:16]) if name in row}
    assert table.index("Long Good") < table.index(kid(once)[:16])  # ranked by score.low
    assert '<span class="badge enrolled">enrolled</span>' in rows["Long Good"]
    assert '<span class="badge">not enrolled</span>' in rows[kid(once)[:16]]
    assert "observed, not scored yet" in rows[kid(seen)[:16]]
    assert '<td class="num">5</td><td class="num">0</td>' in rows[kid(seen)[:16]]
    await _screenshots(bureau.url + "/", "home-page-observed-scored")
    page = (await _chromium("--dump-dom", f"{bureau.url}/agents/{kid(seen)}")).decode()
    heading = page.split('<h1 id="agent-name">')[1].split("</h1>")[0]
    assert kid(seen) in heading and "not enrolled" in heading
    assert "none of which has a scored outcome" in page
    await _screenshots(f"{bureau.url}/agents/{kid(seen)}", "agent-page-not-enrolled")


async def _sealed_next(bureau: BureauUnderTest, keys: dict[str, str]) -> None:
    """Every ranked agent seen again in the current epoch, then that epoch sealed."""
    rep = await bureau.reporter(roles=("facts",))
    for name, agent in keys.items():
        await bureau.accepted(rep, "fact", fact_payload(f"again-{name[:4]}", agent,
                                                        check="PASS"))
    bureau.clock.advance(bureau.config.epoch_seconds)
    assert await bureau.app[SEALER].seal_once()


async def test_no_activity_since_when_the_latest_seal_is_old(bureau: BureauUnderTest) -> None:
    agent = await _agent_with_a_report(bureau)
    fresh = (await _chromium("--dump-dom", bureau.url + "/")).decode()
    assert 'id="stale"' not in fresh
    bureau.clock.advance(3 * bureau.config.epoch_seconds)  # nothing recorded since
    for path in ("/", f"/agents/{agent}"):
        dom = (await _chromium("--dump-dom", bureau.url + path)).decode()
        assert re.search(r'id="stale">No activity since \d{4}-\d\d-\d\d \d\d:\d\d UTC', dom)
    await _screenshots(bureau.url + "/", "home-page-stale")
