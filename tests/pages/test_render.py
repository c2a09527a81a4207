"""The public pages as pure functions of a report (no server needed)."""

from __future__ import annotations

import re
from typing import Any

from bureau.http.home import Listing, index_page, not_found_page
from bureau.http.pages import PageSite, agent_page, outcome_chart
from bureau.reads.ranking import Ranked, RankedPage

HOURS_6 = 21600
#: a bureau of 6-hour epochs at a public URL; one of 1-minute epochs
SITE = PageSite("k", HOURS_6, "http://x")
MINUTE = PageSite("k", 60)


def report(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "agent": "ed25519:" + "A" * 43, "name": "Translator <b>&amp;</b>", "epoch": 7,
        "ledger": {"seq": 42, "head": "ab" * 32}, "policy": "cd" * 32,
        "score": {"value": 0.8125, "low": 0.61, "high": 0.92, "weight": 6.5,
                  "interactions": 8},
        "outcomes": {"ACCEPTED": 5, "FAILED_DISCOVERED": 1, "NO_RESPONSE": 0},
        "value_judgment_share": 0.1,
        "reliability": {"observed": 9, "answer_rate": 0.888889, "well_formed_rate": 1.0,
                        "latency_ms": {"p50": 120, "p95": 900},
                        "promises": {"p95-under-2s": {"kept": 8, "broken": 1}}},
        "probes": {"passed": 2, "failed": 1}, "excluded": {"self_dealing": 1, "disputed": 0},
        "unscored": {"DECLINED": 2, "CAP_REACHED": 0, "TERMINATED": 0},
        "first_seen_epoch": 3, "ground_truth_share": 0.615385, "provisional_share": 0.153846,
        "reporters": [],
    }
    base.update(over)
    return base


def test_agent_page_shows_score_interval_chart_and_how_to_verify() -> None:
    page = agent_page(report(), b'{"payloadType":"x"}',
                      PageSite("ed25519:" + "B" * 43, HOURS_6, "http://bureau.example"))
    assert "0.812" in page and "0.610 – 0.920" in page
    assert "<svg" in page and 'role="img"' in page and "ACCEPTED: 5" in page
    assert "NO_RESPONSE" not in page.split("<svg")[1].split("</svg>")[0]  # zero bars hidden
    assert "ed25519:" + "B" * 43 in page and "VerifyKey" in page
    assert "p95-under-2s" in page and "88.9%" in page
    assert '<meta name="viewport"' in page and "<script" not in page


def test_the_page_says_where_the_weight_came_from_and_since_when() -> None:
    page = agent_page(report(), b"{}", SITE)
    assert "61.5% of this score's weight comes from checks the bureau's reporters made" in page
    assert "15.4% from callers the bureau has not yet measured" in page
    assert "first saw this agent at work in epoch 3 (1970-01-01 18:00 – " \
           "1970-01-02 00:00 UTC)." in page
    never = agent_page(report(first_seen_epoch=None), b"{}", SITE)
    assert "has not yet seen this agent at work" in never
    now = agent_page(report(first_seen_epoch=7), b"{}", SITE)
    assert "in epoch 7 (1970-01-02 18:00 – 1970-01-03 00:00 UTC), this report's epoch." in now


def test_ledger_text_is_escaped() -> None:
    page = agent_page(report(name="<script>alert(1)</script>"), b"{}", SITE)
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_no_score_is_said_plainly() -> None:
    page = agent_page(report(score=None, outcomes={}), b"{}", SITE)
    assert "No score" in page and "<svg" not in page


def test_chart_bars_are_proportional() -> None:
    svg = outcome_chart({"ACCEPTED": 4, "FAILED_ADMITTED": 2})
    widths = [int(w) for w in re.findall(r'class="bar"[^>]*width="(\d+)"', svg)]
    assert widths[0] == 2 * widths[1]


def test_index_page() -> None:
    page = index_page(PageSite("ed25519:key", 21600), "ff" * 32,
                      {"epoch": 3, "seq": 10, "head": "aa" * 32, "entries": 10},
                      Listing(RankedPage(3, [], False)))
    assert "ed25519:key" in page
    assert "Epoch 3 (1970-01-01 18:00 – 1970-01-02 00:00 UTC) sealed at entry 10" in page
    assert f'href="/v1/policies/{"ff" * 32}"' in page and "21600 s (6 hours)" in page
    empty = index_page(MINUTE, "p", None, Listing(RankedPage(None, [], False)))
    assert "No epoch has been sealed yet" in empty and "no reports to list" in empty


AGENT = "ed25519:" + "C" * 43


def test_index_lists_agents_in_the_order_given_with_ranks_and_pages() -> None:
    rows = [Ranked(AGENT, "Good <one>", 0.9, 0.8, 0.95, 40),
            Ranked("ed25519:" + "D" * 43, None, None, None, None, None)]
    page = index_page(MINUTE, "p", None, Listing(RankedPage(5, rows, True), "go&od", 2))
    table = page.split('id="ranked"')[1]
    assert table.index("Good &lt;one&gt;") < table.index("not enrolled")
    assert f'href="/agents/{AGENT}"' in table and "0.800 – 0.950" in table
    assert "<td class=\"num\">51</td>" in table  # page 2 starts at rank 51
    assert 'href="/?q=go%26od#agents"' in page  # previous: page 1 of the same search
    assert 'href="/?q=go%26od&amp;page=3#agents"' in page
    assert 'value="go&amp;od"' in page and "no evidence yet" in table
    assert "epoch 5 (1970-01-01 00:05 – 00:06 UTC)" in page
    nothing = index_page(MINUTE, "p", None, Listing(RankedPage(5, [], False), "zz<"))
    assert "No agent's name or key contains <strong>zz&lt;</strong>" in nothing


def test_the_score_is_explained_in_plain_words_next_to_it() -> None:
    page = agent_page(report(), b"{}", SITE)
    meaning = page.split('id="meaning"')[1].split("</div>")[0]
    assert "0.5 means no evidence either way" in meaning
    assert "95% sure" in meaning and "between 0.610 and 0.920" in meaning
    assert "8 interactions were scored" in meaning and "weigh 6.50" in meaning
    assert "Report for epoch 7 (1970-01-02 18:00 – 1970-01-03 00:00 UTC)" in page


def test_the_policy_link_names_the_reports_policy_and_the_snippet_its_needs() -> None:
    page = agent_page(report(), b"{}", SITE)
    assert f'<a href="/v1/policies/{"cd" * 32}">the policy document</a>' in page
    assert "pip install pynacl" in page
    for target in ('href="/"', 'href="/#agents"', 'href="/v1/checkpoints/latest"'):
        assert target in page.split("</nav>")[0]  # the navigation on every page


def test_not_found_page() -> None:
    page = not_found_page("No report for <x> yet")
    assert "<h1>Not found</h1>" in page and "No report for &lt;x&gt; yet." in page
    assert 'href="/"' in page and "<script" not in page


def test_agent_page_says_how_to_hold_the_report_to_the_log_and_the_file() -> None:
    root = "ef" * 32
    page = agent_page(report(evidence={"root": root}), b"{}",
                      PageSite("ed25519:" + "B" * 43, HOURS_6, "http://bureau.example"))
    assert f"bureau-check report http://bureau.example ed25519:{'A' * 43}" in page
    assert root in page and "bureau-check file http://bureau.example" in page
    assert "up to entry 42" in page


def test_the_list_shows_observed_and_scored_and_who_enrolled() -> None:
    seen = "ed25519:" + "E" * 43
    rows = [Ranked(AGENT, "Good <one>", 0.9, 0.8, 0.95, 40, 52),
            Ranked(seen, None, 0.5, 0.1, 0.9, 0, 50)]
    table = index_page(MINUTE, "p", None, Listing(RankedPage(5, rows, False))
                       ).split('id="ranked"')[1]
    assert ">Observed</th>" in table and ">Scored</th>" in table
    good, other = table.split("</tr>")[1:3]
    assert "<td class=\"num\">52</td><td class=\"num\">40</td>" in good
    assert '<span class="badge enrolled">enrolled</span>' in good
    # 50 calls seen, none judged: words, never a bare 0.5
    assert "observed, not scored yet" in other and "0.500" not in other
    assert '<span class="badge">not enrolled</span>' in other
    assert "<td class=\"num\">50</td><td class=\"num\">0</td>" in other
    assert f"<code>{seen[:16]}…</code></a>" in other  # its key id stands for its name


def test_no_activity_since_once_the_latest_seal_is_old() -> None:
    import datetime as dt

    from bureau.http.pages import stale_notice

    end = dt.datetime.fromtimestamp(6 * 60, dt.UTC)  # epoch 5 of 60 s ends at 00:06
    assert stale_notice(5, 60, end + dt.timedelta(seconds=59)) == ""
    old = stale_notice(5, 60, end + dt.timedelta(minutes=10))
    assert "No activity since 1970-01-01 00:06 UTC" in old
    rows = [Ranked(AGENT, "Good", 0.9, 0.8, 0.95, 40, 40)]
    page = index_page(PageSite("k", 60, now=end + dt.timedelta(hours=1)), "p", None,
                      Listing(RankedPage(5, rows, False)))
    assert page.count('id="stale"') == 1
    assert 'id="stale"' not in index_page(PageSite("k", 60, now=end), "p", None,
                                          Listing(RankedPage(5, rows, False)))
    agent = agent_page(report(), b"{}",
                       PageSite("k", HOURS_6, now=dt.datetime(1970, 1, 4, tzinfo=dt.UTC)))
    assert "No activity since 1970-01-03 00:00 UTC" in agent


def test_the_agent_heading_is_its_name_or_key_with_a_badge() -> None:
    page = agent_page(report(), b"{}", PageSite("k", HOURS_6))
    heading = page.split('<h1 id="agent-name">')[1].split("</h1>")[0]
    assert '<span class="badge enrolled">enrolled</span>' in heading
    unenrolled = agent_page(report(name=None, score=None,
                                   reliability={"observed": 7}), b"{}", PageSite("k", HOURS_6))
    heading = unenrolled.split('<h1 id="agent-name">')[1].split("</h1>")[0]
    assert f"ed25519:{'A' * 43}" in heading and "not enrolled" in heading
    assert "(not enrolled)" not in unenrolled
    words = unenrolled.split('id="no-score"')[1].split("</p>")[0]
    assert "observed 7 interactions" in words and "none of which has a scored outcome" in words


def test_the_navigation_fits_a_phone() -> None:
    """At 390 px the navigation is two lines: the bureau's name, then every link (the
    browser test measures it)."""
    page = agent_page(report(), b"{}", PageSite("k", HOURS_6))
    assert "@media (max-width: 30rem)" in page and "a.home { flex-basis: 100%; }" in page
    nav = page.split("<nav")[1].split("</nav>")[0]
    links = re.findall(r">([^<]+)</a>", nav)[1:]
    assert sum(len(text) for text in links) <= 32  # one line at 390 px
