"""Pages for people: ``GET /`` and ``GET /agents/{agent}`` (SPEC §9).

Rendering is a pure function of the signed report and the bureau's public facts: no
JavaScript, no external assets, an inline SVG chart with a text equivalent, and a layout
that reads on a phone. Every piece of text from the ledger is escaped.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from dataclasses import dataclass
from typing import Any

from bureau.report_text import epoch_start
from reporters._internal.wording import count


@dataclass(frozen=True, slots=True)
class PageSite:
    """What a page says of the bureau beside what it shows: the key id that signs its
    reports, its epoch length, its public URL (None: not configured; the commands to
    check a report then say ``URL``) and the clock reading the page is made at (None:
    not said, and no page says its report is stale)."""

    bureau_key: str
    epoch_seconds: int
    public_url: str | None = None
    now: dt.datetime | None = None


_STYLE = """
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fdfdfc; --muted: #59636e;
  --accent: #0b5cad; --bar: #0b5cad; --line: #d0d7de; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117;
  --muted: #9198a1; --accent: #4493f8; --bar: #4493f8; --line: #30363d; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 46rem; padding: 1rem; font: 1rem/1.5 system-ui,
  -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 1.5rem; margin: .5rem 0; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin-top: 1.75rem; border-bottom: 1px solid var(--line); }
.score { font-size: 2.5rem; font-weight: 700; margin: .25rem 0; }
.muted, figcaption { color: var(--muted); }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85rem;
  overflow-wrap: anywhere; }
pre { white-space: pre-wrap; background: rgba(127,127,127,.08); padding: .75rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
svg text { fill: var(--fg); font-size: 13px; }
svg rect.bar { fill: var(--bar); }
a { color: var(--accent); }
header nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; padding-bottom: .5rem;
  border-bottom: 1px solid var(--line); font-size: .95rem; }
header nav a.home { font-weight: 700; margin-right: auto; }
@media (max-width: 30rem) { header nav { gap: .15rem .9rem; }
  header nav a.home { flex-basis: 100%; }
  th, td { padding: .3rem .25rem; font-size: .85rem; } }
.wide { overflow-x: auto; }
.badge { display: inline-block; font-size: .75rem; font-weight: 600; padding: 0 .4rem;
  border: 1px solid var(--line); border-radius: 1rem; vertical-align: middle;
  white-space: nowrap; }
.badge.enrolled { color: var(--accent); border-color: var(--accent); }
.notice { border-left: 3px solid var(--accent); padding: .25rem .75rem;
  background: rgba(127,127,127,.08); }
.explain { background: rgba(127,127,127,.08); padding: .5rem .75rem; border-radius: 4px; }
form.search { display: flex; gap: .5rem; margin: .75rem 0; }
form.search input { flex: 1; min-width: 0; font: inherit; padding: .35rem .5rem; }
form.search button { font: inherit; padding: .35rem .75rem; }
.pager { display: flex; justify-content: space-between; margin: .75rem 0; }
#not-found { overflow-wrap: anywhere; }
"""


def escape(value: object) -> str:
    return html.escape(str(value), quote=True)


_e = escape


_NAV = ("<header><nav aria-label=\"Site\"><a class=\"home\" href=\"/\">Agent Reputation "
        "Bureau</a> <a href=\"/#agents\">Agents</a> <a href=\"/#bureau\">This bureau</a> "
        "<a href=\"/v1/checkpoints/latest\">Checkpoint</a> "
        "<a href=\"/openapi.json\">API</a></nav></header>")


def layout(title: str, body: str) -> str:
    """A whole page: every page has the same head, navigation and style."""
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{_NAV}<main>{body}</main></body></html>\n"
    )


def epoch_dates(epoch: int, epoch_seconds: int) -> str:
    """``epoch 7 (2026-12-01 00:00 – 06:00 UTC)``: the span an epoch covers."""
    start = epoch_start(epoch, epoch_seconds)
    end = epoch_start(epoch + 1, epoch_seconds)
    shape = "%Y-%m-%d %H:%M:%S" if epoch_seconds % 60 else "%Y-%m-%d %H:%M"
    until = end.strftime(shape[9:] if end.date() == start.date() else shape)
    return f"epoch {epoch} ({start.strftime(shape)} – {until} UTC)"


def badge(enrolled: bool) -> str:
    """Whether the agent enrolled (a name, an anchor, promises) or is only seen at work."""
    return ("<span class=\"badge enrolled\">enrolled</span>" if enrolled else
            "<span class=\"badge\">not enrolled</span>")


def stale_notice(epoch: int, epoch_seconds: int, now: dt.datetime | None) -> str:
    """"No activity since …" once a whole epoch has gone by after the latest sealed one:
    an epoch in which nothing was recorded is never sealed, so without it a quiet bureau
    looks as if the sealed epoch were recent."""
    end = epoch_start(epoch + 1, epoch_seconds)
    if now is None or (now - end).total_seconds() < epoch_seconds:
        return ""
    shape = "%Y-%m-%d %H:%M:%S" if epoch_seconds % 60 else "%Y-%m-%d %H:%M"
    return (f"<p class=\"notice\" id=\"stale\">No activity since {end.strftime(shape)} UTC: "
            "no epoch after this one has been sealed. An epoch in which nothing is recorded "
            "is never sealed, so this is still the latest report.</p>")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def outcome_chart(outcomes: dict[str, int]) -> str:
    """A horizontal bar chart of outcome counts, as inline SVG with a text equivalent."""
    rows = [(code, n) for code, n in outcomes.items() if n]
    if not rows:
        return "<p class=\"muted\">No scored outcomes yet.</p>"
    top = max(n for _, n in rows)
    # a narrow viewBox keeps labels legible on a phone; max-width keeps them sane on a desk
    bar_h, gap, label_w, width = 20, 8, 190, 360
    height = len(rows) * (bar_h + gap)
    summary = ", ".join(f"{code}: {n}" for code, n in rows)
    parts = [f"<svg role=\"img\" aria-labelledby=\"chart-title\" viewBox=\"0 0 {width} "
             f"{height}\" width=\"100%\" style=\"max-width:34rem\" "
             "preserveAspectRatio=\"xMinYMin meet\">",
             f"<title id=\"chart-title\">Outcomes — {_e(summary)}</title>"]
    for i, (code, n) in enumerate(rows):
        y = i * (bar_h + gap)
        w = max(2, round((width - label_w - 50) * n / top))
        parts.append(
            f"<text x=\"0\" y=\"{y + 15}\">{_e(code)}</text>"
            f"<rect class=\"bar\" x=\"{label_w}\" y=\"{y}\" width=\"{w}\" height=\"{bar_h}\""
            f" rx=\"2\"></rect>"
            f"<text x=\"{label_w + w + 6}\" y=\"{y + 15}\">{n}</text>")
    parts.append("</svg>")
    return "<figure>" + "".join(parts) + "<figcaption>Scored outcomes by code.</figcaption>" \
        "</figure>"


def _score_block(score: dict[str, Any] | None, observed: int) -> str:
    if score is None or not score["interactions"]:
        seen = ("" if not observed else
                f" The bureau observed {count(observed, 'interaction')} (see Reliability "
                "below), none of which has a scored outcome yet: no check, probe or "
                "caller's verdict judged it, and being answered on time is not a score.")
        return ("<p class=\"score\">No score</p><p id=\"no-score\">No scored evidence yet: "
                f"the bureau does not make up a number.{seen}</p>")
    low, high = score["low"], score["high"]
    return (f"<p class=\"score\" id=\"score\">{score['value']:.3f}</p>"
            f"<p>95% interval <strong>{low:.3f} – {high:.3f}</strong>, "
            f"from {count(score['interactions'], 'scored interaction')} with total weight "
            f"{score['weight']:.2f}.</p>"
            "<div class=\"explain\" id=\"meaning\"><p><strong>What the number means.</strong> "
            "It runs from 0 (every scored interaction went badly) to 1 (every one went "
            "well); 0.5 means no evidence either way, and every agent starts there."
            "</p><p><strong>How sure it is.</strong> The bureau is 95% sure the agent's "
            f"true figure lies between {low:.3f} and {high:.3f}; the more evidence, the "
            "narrower that range. Lists rank agents by its lower end, "
            f"{low:.3f}, so an agent seen a few times never outranks a long good record."
            "</p><p><strong>The evidence behind it.</strong> "
            f"{count(score['interactions'], 'interaction')} "
            f"{'was' if score['interactions'] == 1 else 'were'} scored. Each counts by the "
            "weight "
            "of what judged it: a check the bureau's own reporters made counts 1, a "
            "caller's verdict counts as much as that caller has proved reliable, so "
            f"together they weigh {score['weight']:.2f}. Interactions nobody judged "
            "appear under Reliability below but do not move the score.</p></div>")


def _evidence_words(report: dict[str, Any], epoch_seconds: int) -> str:
    """Where the weight came from and how long the bureau has watched, in plain words."""
    first = report.get("first_seen_epoch")
    watched = ("The bureau has not yet seen this agent at work: no reporter has recorded "
               "a call to it." if first is None else
               f"The bureau first saw this agent at work in {epoch_dates(first, epoch_seconds)}"
               + (", this report's epoch." if first == report.get("epoch") else "."))
    return (f"<p>{_pct(report.get('ground_truth_share'))} of this score's weight comes "
            "from checks the bureau's reporters made themselves (probes with known answers "
            "and deliverable checks); "
            f"{_pct(report.get('value_judgment_share'))} from buyers' value judgments; "
            f"{_pct(report.get('provisional_share'))} from callers the bureau has not yet "
            f"measured.</p><p>{watched}</p>")


def _reliability(rel: dict[str, Any]) -> str:
    lat = rel.get("latency_ms") or {}
    rows = [("Interactions observed (judged or not)", rel.get("observed")),
            ("Answered", _pct(rel.get("answer_rate"))),
            ("Well formed", _pct(rel.get("well_formed_rate"))),
            ("Latency p50", "—" if lat.get("p50") is None else f"{lat['p50']} ms"),
            ("Latency p95", "—" if lat.get("p95") is None else f"{lat['p95']} ms")]
    body = "".join(f"<tr><th scope=\"row\">{_e(k)}</th><td class=\"num\">{_e(v)}</td></tr>"
                   for k, v in rows)
    promises = rel.get("promises") or {}
    if promises:
        body += "".join(
            f"<tr><th scope=\"row\">Promise <code>{_e(pid)}</code></th><td class=\"num\">"
            f"{c['kept']} kept, {c['broken']} broken</td></tr>"
            for pid, c in sorted(promises.items()))
    return f"<table>{body}</table>"


def _evidence_block(report: dict[str, Any], public_url: str | None) -> str:
    """How to hold the report to the log and to the agent's own file (the address, like
    the snippet's, is the configured public URL, never the request's ``Host``)."""
    base_url = public_url if public_url is not None else "URL"
    root = (report.get("evidence") or {}).get("root")
    agent, seq = report["agent"], report["ledger"]["seq"]
    evidence = "" if root is None else (
        f" Its evidence root <code>{_e(root)}</code> is the Merkle root of the entries of "
        f"the agent's own file up to entry {_e(seq)}: the agent checks it against the file "
        f"it reads with <code>bureau-check file {_e(base_url)} --key AGENT.key</code>.")
    return (f"<p>With the bureau's client installed (<code>pip install ./client</code> "
            "from the bureau's repository), "
            f"<code>bureau-check report {_e(base_url)} {_e(agent)}</code> checks this report, "
            "its epoch's signed checkpoint and tree head, and that the bureau's published "
            f"log still extends that tree.{evidence}</p>")


def _how_to_confirm(link: dict[str, Any], agent: str, base_url: str) -> str:
    """What a reader does to confirm one link from the other side, in words."""
    kind = link.get("kind")
    check = f"<code>bureau-check links {_e(base_url)} {_e(agent)}</code>"
    if kind == "erc8004":
        chain, address = str(link.get("registry", "::")).split(":")[1:3]
        return (f"ERC-8004 agent <code>{_e(link.get('agent_id'))}</code> in the Identity "
                f"Registry <code>{_e(address)}</code> on chain {_e(chain)}. To confirm: "
                f"call <code>tokenURI({_e(link.get('agent_id'))})</code> there; the "
                f"registration file it names should list <code>{_e(agent)}</code> among "
                f"its services. {check} prints these steps.")
    if kind == "a2a":
        return (f"A2A agent card <code>{_e(link.get('card'))}</code>. To confirm: the card "
                f"should name <code>{_e(agent)}</code> in this bureau's extension or in its "
                f"signatures; {check} fetches it and checks.")
    return (f"MCP server <code>{_e(link.get('server'))}</code>. To confirm: its entry in "
            f"the MCP registry should name <code>{_e(agent)}</code> in its "
            f"<code>_meta</code>; {check} looks it up.")


def _links_block(report: dict[str, Any], public_url: str | None) -> str:
    """The agent's links, as what they are: its own claims, and how to confirm each."""
    links = report.get("links") or []
    if not links:
        return ("<p class=\"muted\">This agent links no identity elsewhere (ERC-8004, "
                "A2A, MCP).</p>")
    base_url = public_url if public_url is not None else "URL"
    items = "".join(f"<li>{_how_to_confirm(link, report['agent'], base_url)}</li>"
                    for link in links)
    return ("<p>These are the agent's <strong>own claims</strong>: the bureau checked "
            "their form only, not that the other side agrees. Until you confirm one, do not "
            f"take it as the agent's identity there.</p><ul id=\"links\">{items}</ul>")


def _verify_snippet(agent: str, bureau_key: str, public_url: str | None) -> str:
    """Python that fetches the report and checks its signature. The page never says
    where it was fetched from (a ``Host`` header is the client's to choose, and a cache
    keyed on the path alone would serve one client's snippet to everyone): the address
    is the operator's configured public URL, or the reader's to give."""
    if public_url is not None:
        base = f"base = {public_url!r}\n"
    else:
        base = "base = sys.argv[1]  # this bureau's address: this page's URL before /agents/\n"
    return (
        "import base64, json, sys, urllib.request\n"
        "from nacl.signing import VerifyKey\n\n"
        + base +
        f"env = json.load(urllib.request.urlopen(base + '/v1/agents/{agent}/report'))\n"
        f"key = '{bureau_key}'  # GET /v1/bureau\n"
        "raw = base64.urlsafe_b64decode(key.split(':')[1] + '=')\n"
        "body = base64.b64decode(env['payload'])\n"
        "ptype = env['payloadType'].encode()\n"
        "pae = b'DSSEv1 %d %s %d %s' % (len(ptype), ptype, len(body), body)\n"
        "VerifyKey(raw).verify(pae, base64.b64decode(env['signatures'][0]['sig']))\n"
        "print(json.loads(body)['score'])")


def agent_page(report: dict[str, Any], envelope: bytes, site: PageSite) -> str:
    """The public page of one agent's latest report: a pure function of the signed
    report and the bureau's configuration, never of the request."""
    bureau_key, public_url, epoch_seconds = site.bureau_key, site.public_url, site.epoch_seconds
    agent = report["agent"]
    name = report.get("name") or agent
    unscored = {k: v for k, v in (report.get("unscored") or {}).items() if v}
    excluded = report.get("excluded") or {}
    probes = report.get("probes") or {}
    verify_snippet = _verify_snippet(agent, bureau_key, public_url)
    body = f"""
<p class="muted">Report for {_e(epoch_dates(report['epoch'], epoch_seconds))}, the latest
sealed epoch</p>
{stale_notice(report['epoch'], epoch_seconds, site.now)}
<h1 id="agent-name">{_e(name)} {badge(report.get("name") is not None)}</h1>
<p><code>{_e(agent)}</code></p>
<section aria-labelledby="score-h"><h2 id="score-h">Score</h2>
{_score_block(report.get("score"), (report.get("reliability") or {}).get("observed") or 0)}
{_evidence_words(report, epoch_seconds)}
</section>
<section aria-labelledby="outcomes-h"><h2 id="outcomes-h">Outcomes</h2>
{outcome_chart(report.get("outcomes") or {})}
<p>Probes: {probes.get("passed", 0)} passed, {probes.get("failed", 0)} failed.
Unscored: {_e(", ".join(f"{k} {v}" for k, v in unscored.items()) or "none")}.
Excluded evidence: {excluded.get("self_dealing", 0)} self-dealing,
{excluded.get("disputed", 0)} after disputes, {excluded.get("distrusted", 0)} from reporters
the bureau no longer trusts.</p>
</section>
<section aria-labelledby="rel-h"><h2 id="rel-h">Reliability</h2>
{_reliability(report.get("reliability") or {})}
</section>
<section aria-labelledby="links-h"><h2 id="links-h">Links the agent claims</h2>
{_links_block(report, public_url)}
</section>
<section aria-labelledby="verify-h"><h2 id="verify-h">Verify this report</h2>
<p>This page shows a report signed by the bureau. Do not trust the page: check the
signature. The report is a DSSE envelope signed with the bureau key
<code>{_e(bureau_key)}</code> over the payload type
<code>application/vnd.bureau.report.v1+json</code>, computed under scoring policy
<code>{_e(report.get("policy"))}</code>
(<a href="/v1/policies/{_e(report.get("policy"))}">the policy document</a>)
from the ledger up to entry {_e(report["ledger"]["seq"])}
(head <code>{_e(report["ledger"]["head"])}</code>).</p>
<p>The signed report itself is at <a href="/v1/agents/{_e(agent)}/report">
<code>/v1/agents/{_e(agent)}/report</code></a>. This Python checks it; it needs
PyNaCl (<code>pip install pynacl</code>):</p>
<pre><code>{_e(verify_snippet)}</code></pre>
{_evidence_block(report, public_url)}
<details><summary>The signed envelope</summary><pre><code>{_e(envelope.decode())}</code></pre>
</details>
</section>"""
    return layout(f"{name} — Agent Reputation Bureau", body)


def payload_of(envelope: bytes) -> dict[str, Any]:
    """The payload of a bureau-signed envelope we stored ourselves."""
    import base64

    doc = json.loads(envelope)
    data: dict[str, Any] = json.loads(base64.b64decode(doc["payload"]))
    return data
