"""The evaluators' pool on the home page (SPEC §8.2): each settled epoch's pool, paid,
unpaid and how many evaluators were paid, and the rule in plain words. A pure function
of the signed settlement documents, which name no evaluator, so neither does the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bureau.http.pages import epoch_dates, escape

#: the settled epochs the home page lists, newest first
SHOWN = 8

RULE = ("Each epoch's pool is split among the evaluators whose verdicts were checked "
        "against a probe recorded after they gave them: an evaluator earns one point per "
        "such verdict it got right, times how well its verdicts tell good work from bad "
        "(its informedness). Verdicts it could check for itself first, such as a "
        "deliverable check it could read, earn nothing. The pool is split in whole units "
        "in proportion to the points, the units left over going to the largest "
        "remainders (ties by key id), so the units paid always add up to the pool. When "
        "nobody earns, the whole pool is reported unpaid. The bureau pays nothing "
        "itself: it publishes who is owed what.")


def _row(doc: dict[str, Any], epoch_seconds: int) -> str:
    epoch = int(doc["epoch"])
    if doc["evaluators"] == 0:
        paid = (f"<td colspan=\"3\">quiet: nobody earned; all {escape(doc['pool'])} "
                "units unpaid</td>")
    else:
        paid = (f"<td class=\"num\">{escape(doc['paid'])}</td>"
                f"<td class=\"num\">{escape(doc['unpaid'])}</td>"
                f"<td class=\"num\">{escape(doc['evaluators'])}</td>")
    when = escape(epoch_dates(epoch, epoch_seconds))
    return (f"<tr><td><a href=\"/v1/settlements/{epoch}\">{when}</a></td>"
            f"<td class=\"num\">{escape(doc['pool'])}</td>{paid}</tr>")


def settlements_section(docs: Sequence[dict[str, Any]], epoch_seconds: int) -> str:
    """The section, from settlement payloads newest first; empty without any."""
    if not docs:
        return ""
    rows = "".join(_row(d, epoch_seconds) for d in docs[:SHOWN])
    return ("<section><h2 id=\"pool\">Evaluators' pool</h2>"
            f"<p>{escape(RULE)}</p>"
            "<table id=\"settlements\"><thead><tr><th>Epoch</th><th class=\"num\">Pool</th>"
            "<th class=\"num\">Paid</th><th class=\"num\">Unpaid</th>"
            "<th class=\"num\">Evaluators paid</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            "<p>Each signed settlement carries the Merkle root of its rows; an evaluator "
            "proves its own share with <code>bureau-check settlement</code>.</p></section>")
