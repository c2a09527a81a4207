"""Reports and epochs as a person reads them on a terminal (``bureau report``).

Epochs are numbers in the protocol; people read dates, so every epoch shown here is
followed by the UTC time it started (epoch ``E`` covers ``[E·len, (E+1)·len)``).
"""

from __future__ import annotations

import binascii
import datetime as dt
import json
from typing import Any

from reporters._internal.wording import count


def epoch_start(epoch: int, epoch_seconds: int) -> dt.datetime:
    """When epoch ``epoch`` began, in UTC."""
    return dt.datetime.fromtimestamp(epoch * epoch_seconds, dt.UTC)


def epoch_text(epoch: int, epoch_seconds: int) -> str:
    """``epoch 12 (from 2026-12-01 00:00 UTC)`` — seconds shown only when epochs are
    shorter than a minute (the quick-demo mode)."""
    start = epoch_start(epoch, epoch_seconds)
    shape = "%Y-%m-%d %H:%M:%S" if epoch_seconds % 60 else "%Y-%m-%d %H:%M"
    return f"epoch {epoch} (from {start.strftime(shape)} UTC)"


def report_payload(envelope: bytes) -> dict[str, Any]:
    """The payload of a report envelope the bureau signed."""
    data: dict[str, Any] = json.loads(binascii.a2b_base64(json.loads(envelope)["payload"]))
    return data


def report_json(envelope: bytes, epoch_seconds: int) -> dict[str, Any]:
    """``bureau report --json``: the signed envelope as served, its decoded payload, and
    the epoch's UTC start (the one thing a reader would otherwise compute)."""
    payload = report_payload(envelope)
    return {"envelope": json.loads(envelope), "report": payload,
            "epoch_start": epoch_start(payload["epoch"], epoch_seconds)
            .isoformat().replace("+00:00", "Z")}


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items() if v) or "none"


def render_report(envelope: bytes, epoch_seconds: int) -> str:
    """A report envelope, for people."""
    env = json.loads(envelope)
    p = report_payload(envelope)
    lines = [f"agent      {p['agent']}" + (f"  ({p['name']})" if p["name"] else ""),
             f"{epoch_text(p['epoch'], epoch_seconds)}   ledger seq {p['ledger']['seq']}  "
             f"head {p['ledger']['head']}",
             f"signed by  {env['signatures'][0]['keyid']}   policy {p['policy']}"]
    s = p["score"]
    observed = p["reliability"]["observed"]
    if s is None or not s["interactions"]:
        if any(p["outcomes"].values()):
            why = "every scored outcome came from an evaluator of weight 0"
        elif observed:
            why = (f"{count(observed, 'interaction')} observed, none with a scored outcome "
                   "yet: its reliability is below, but only outcomes make a score")
        else:
            why = "nothing scored yet"
        lines.append(f"score      none ({why})")
    else:
        lines.append(f"score      {s['value']:.6f}  (95% interval {s['low']:.6f} .. "
                     f"{s['high']:.6f}; weight {s['weight']} over "
                     f"{count(s['interactions'], 'interaction')})")
        lines.append("           0 is always bad, 1 always good, 0.5 no evidence either way; "
                     "agents rank by the interval's low end")
        lines.append(f"weight     {_pct(p['ground_truth_share'])} from ground truth, "
                     f"{_pct(p['value_judgment_share'])} from value judgments, "
                     f"{_pct(p['provisional_share'])} from provisional evaluators")
    first = p["first_seen_epoch"]
    lines.append("first seen " + ("never (no fact or probe about it)" if first is None
                                  else epoch_text(first, epoch_seconds)))
    r = p["reliability"]
    lines += [f"outcomes   {_counts(p['outcomes'])}",
              f"unscored   {_counts(p['unscored'])}",
              f"reliability observed {r['observed']}, answered {_pct(r['answer_rate'])}, "
              f"well-formed {_pct(r['well_formed_rate'])}, latency p50 "
              f"{r['latency_ms']['p50']} ms, p95 {r['latency_ms']['p95']} ms"]
    for promise, kb in r["promises"].items():
        lines.append(f"promise    {promise}: kept {kb['kept']}, broken {kb['broken']}")
    evidence = p.get("evidence")
    if evidence:
        lines.append(f"evidence   root {evidence['root']} (the agent's own file up to seq "
                     f"{p['ledger']['seq']})")
    lines += [f"probes     passed {p['probes']['passed']}, failed {p['probes']['failed']}",
              f"excluded   self-dealing {p['excluded']['self_dealing']}, disputed "
              f"{p['excluded']['disputed']}, distrusted {p['excluded']['distrusted']}"]
    for row in p["reporters"]:
        mean = "n/a" if row["mean_value"] is None else f"{row['mean_value']:.3f}"
        lines.append(f"reporter   {row['reporter'] or 'the other reporters'}: "
                     f"{count(row['interactions'], 'interaction')}, {row['scored']} scored "
                     "by it, "
                     f"mean {mean}")
    return "\n".join(lines)
