"""The public page in a real headless browser (Debian's chromium): it renders the
agent's score and its chart; a screenshot is kept in test-artifacts/."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest

from bureau.http.keys import SETTLER
from reporters import wire
from tests.support import BureauUnderTest, fact_payload, kid, now_text

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Flags that keep Chromium from reaching for the network or a display.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (.ci/run installs Debian's chromium; "
                             "elsewhere: apt-get install chromium)")


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
    assert await bureau.app[SETTLER].settle_once()
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
