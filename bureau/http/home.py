"""The home page (``GET /``): the agents ranked by ``score.low`` with a search by name
or key, a page at a time, and the bureau's public facts; and the page a browser gets
for an address that has nothing (404). Pure functions of what the views read: no
request header reaches them, and every link is relative."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from bureau.http.pages import PageSite, badge, epoch_dates, escape, layout, stale_notice
from bureau.reads.ranking import PAGE_SIZE, Ranked, RankedPage


def _short(key: str) -> str:
    """A key id short enough for a phone's table (the link and the title hold it all)."""
    return key[:16] + "…"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _row(rank: int, row: Ranked) -> str:
    name = escape(row.name) if row.name else f"<code>{escape(_short(row.agent))}</code>"
    scored = bool(row.interactions) and row.low is not None
    if scored:
        interval = f"{_num(row.low)} – {_num(row.high)}"
    else:  # never a bare 0.5: say why there is no number
        interval = "observed, not scored yet" if row.observed else "no evidence yet"
    return (f"<tr><td class=\"num\">{rank}</td>"
            f"<td><a href=\"/agents/{escape(row.agent)}\">{name}</a> "
            f"{badge(row.name is not None)}<br>"
            f"<code title=\"{escape(row.agent)}\">{escape(_short(row.agent))}</code></td>"
            f"<td class=\"num\">{_num(row.value) if scored else '—'}</td>"
            f"<td class=\"num\">{interval}</td>"
            f"<td class=\"num\">{'—' if row.observed is None else row.observed}</td>"
            f"<td class=\"num\">{row.interactions or 0}</td>"
            "</tr>")


def _link(query: str | None, page: int) -> str:
    params = {k: v for k, v in (("q", query), ("page", str(page) if page > 1 else None)) if v}
    return "/" + ("?" + urlencode(params) if params else "") + "#agents"


@dataclass(frozen=True, slots=True)
class Listing:
    """The ranked list as a reader asked for it: one page of it (``ranked``), page
    number ``page`` of the agents whose name or key contains ``query`` (None: every
    agent)."""

    ranked: RankedPage
    query: str | None = None
    page: int = 1


def _agents(listing: Listing, epoch_seconds: int) -> str:
    ranked, query, page = listing.ranked, listing.query, listing.page
    form = ("<form class=\"search\" method=\"get\" action=\"/\" role=\"search\">"
            "<label for=\"q\" class=\"muted\" style=\"align-self:center\">Search</label>"
            f"<input id=\"q\" name=\"q\" type=\"search\" value=\"{escape(query or '')}\" "
            "placeholder=\"a name or a key id\" maxlength=\"200\">"
            "<button type=\"submit\">Find</button></form>")
    if ranked.epoch is None:
        return form + "<p>No epoch has been sealed yet: there are no reports to list.</p>"
    intro = (f"<p>From the signed reports of {escape(epoch_dates(ranked.epoch, epoch_seconds))}."
             " Ranked by the low end of each score's 95% interval: the bureau lists first "
             "the agents it is surest are good, so a newcomer seen a few times does not "
             "outrank a long good record. Scores run from 0 (always bad) to 1 (always "
             "good); 0.5 is no evidence either way. Observed counts every interaction "
             "the reporters saw; Scored only those a check, a probe or a caller's verdict "
             "judged.</p>")
    if not ranked.rows:
        found = (f"<p id=\"no-match\">No agent's name or key contains "
                 f"<strong>{escape(query)}</strong>.</p>" if query else
                 "<p>No agent on this page.</p>")
        return form + intro + found
    first = (page - 1) * PAGE_SIZE + 1
    rows = "".join(_row(first + i, row) for i, row in enumerate(ranked.rows))
    pager = "".join((
        f"<a rel=\"prev\" href=\"{escape(_link(query, page - 1))}\">← Previous</a>"
        if page > 1 else "<span></span>",
        f"<a rel=\"next\" href=\"{escape(_link(query, page + 1))}\">Next →</a>"
        if ranked.more else "<span></span>"))
    return (form + intro +
            "<div class=\"wide\"><table id=\"ranked\"><thead><tr><th class=\"num\">#</th>"
            "<th>Agent</th>"
            "<th class=\"num\">Score</th><th class=\"num\">95% interval</th>"
            "<th class=\"num\" title=\"interactions the bureau's reporters observed, "
            "judged or not\">Observed</th><th class=\"num\" title=\"interactions with a "
            "scored outcome: a check, a probe or a caller's verdict\">Scored</th>"
            "</tr></thead>"
            f"<tbody>{rows}</tbody></table></div><nav class=\"pager\" aria-label=\"Pages\">"
            f"{pager}</nav>")


def index_page(site: PageSite, policy_hash: str, checkpoint: dict[str, Any] | None,
               listing: Listing, settlements: str = "") -> str:
    """The bureau's front page: its agents, ranked, and its key, policy and latest
    checkpoint; ``settlements``, the evaluators' pool section
    (:mod:`bureau.http.settlement_page`), when there is one."""
    bureau_key, epoch_seconds, ranked = site.bureau_key, site.epoch_seconds, listing.ranked
    if checkpoint is None:
        cp = "<p>No epoch has been sealed yet.</p>"
    else:
        dates = epoch_dates(checkpoint["epoch"], epoch_seconds)
        cp = (f"<p>{escape(dates[0].upper() + dates[1:])} "
              f"sealed at entry {escape(checkpoint['seq'])} of {escape(checkpoint['entries'])}; "
              f"head <code>{escape(checkpoint['head'])}</code>. "
              "<a href=\"/v1/checkpoints/latest\">Signed checkpoint</a>.</p>")
    hours = f" ({epoch_seconds / 3600:g} hours)" if epoch_seconds % 3600 == 0 else ""
    body = f"""
<h1>Agent Reputation Bureau</h1>
<p>Reputation for AI agents that scores nothing it cannot trace to a witnessed
interaction. Reports are signed; check them yourself.</p>
<section><h2 id="agents">Agents</h2>
{stale_notice(ranked.epoch, epoch_seconds, site.now) if ranked.epoch is not None else ""}
{_agents(listing, epoch_seconds)}
</section>
{settlements}
<section><h2 id="bureau">This bureau</h2>
<table>
<tr><th scope="row">Signing key</th><td><code>{escape(bureau_key)}</code></td></tr>
<tr><th scope="row">Scoring policy</th>
<td><a href="/v1/policies/{escape(policy_hash)}"><code>{escape(policy_hash)}</code></a></td></tr>
<tr><th scope="row">Epoch length</th><td>{epoch_seconds} s{hours}: reports are
published once an epoch is over</td></tr>
</table>
<h2>Latest checkpoint</h2>
{cp}
<h2>Read more</h2>
<p>An agent's page is at <code>/agents/&lt;key id&gt;</code>; its signed report at
<code>/v1/agents/&lt;key id&gt;/report</code>. The API is described at
<a href="/openapi.json">/openapi.json</a>.</p>
</section>"""
    return layout("Agent Reputation Bureau", body)


def not_found_page(detail: str) -> str:
    """What a browser gets for a page address with nothing behind it."""
    body = f"""
<h1>Not found</h1>
<p id="not-found">{escape(detail)}.</p>
<p>An agent has a report once an epoch in which it was enrolled or seen at work is
over. <a href="/">Search the agents</a> by name or key.</p>"""
    return layout("Not found — Agent Reputation Bureau", body)
