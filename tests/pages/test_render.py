"""The public pages as pure functions of a report (no server needed)."""

from __future__ import annotations

import re
from typing import Any

from bureau.http.pages import agent_page, index_page, outcome_chart


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
    page = agent_page(report(), b'{"payloadType":"x"}', "ed25519:" + "B" * 43,
                      "http://bureau.example")
    assert "0.812" in page and "0.610 – 0.920" in page
    assert "<svg" in page and 'role="img"' in page and "ACCEPTED: 5" in page
    assert "NO_RESPONSE" not in page.split("<svg")[1].split("</svg>")[0]  # zero bars hidden
    assert "ed25519:" + "B" * 43 in page and "VerifyKey" in page
    assert "p95-under-2s" in page and "88.9%" in page
    assert '<meta name="viewport"' in page and "<script" not in page


def test_the_page_says_where_the_weight_came_from_and_since_when() -> None:
    page = agent_page(report(), b"{}", "k", "http://x")
    assert "61.5% of this score's weight comes from checks the bureau's reporters made" in page
    assert "15.4% from callers the bureau has not yet measured" in page
    assert "first saw this agent at work in epoch 3." in page
    never = agent_page(report(first_seen_epoch=None), b"{}", "k", "http://x")
    assert "has not yet seen this agent at work" in never
    now = agent_page(report(first_seen_epoch=7), b"{}", "k", "http://x")
    assert "in epoch 7 (this epoch)." in now


def test_ledger_text_is_escaped() -> None:
    page = agent_page(report(name="<script>alert(1)</script>"), b"{}", "k", "http://x")
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_no_score_is_said_plainly() -> None:
    page = agent_page(report(score=None, outcomes={}), b"{}", "k", "http://x")
    assert "No score" in page and "<svg" not in page


def test_chart_bars_are_proportional() -> None:
    svg = outcome_chart({"ACCEPTED": 4, "FAILED_ADMITTED": 2})
    widths = [int(w) for w in re.findall(r'class="bar"[^>]*width="(\d+)"', svg)]
    assert widths[0] == 2 * widths[1]


def test_index_page() -> None:
    page = index_page("ed25519:key", "ff" * 32, 21600,
                      {"epoch": 3, "seq": 10, "head": "aa" * 32, "entries": 10})
    assert "ed25519:key" in page and "Epoch 3 sealed at entry 10" in page
    assert "No epoch has been sealed yet" in index_page("k", "p", 60, None)
