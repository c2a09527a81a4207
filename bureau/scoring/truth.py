"""What both halves of scoring stand on: which entries are excluded, and the ground
truth of each interaction (SPEC §7). Outcomes (:mod:`bureau.scoring.outcomes`) resolve
units against it; evaluators (:mod:`bureau.scoring.evaluators`) are graded against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bureau.scoring.inputs import DISPUTED, PASS, SELF_DEALING, Exclusion, Fact, Probe

#: ``(reporter, interaction, subject)``: how facts, probes and attestations meet.
InteractionKey = tuple[str, str, str]


def excluded_ids(exclusions: Iterable[Exclusion]) -> dict[str, str]:
    """Excluded entry id -> reason. An entry excluded for both reasons is counted once,
    as ``self_dealing`` (the reason that needs no dispute)."""
    out: dict[str, str] = {}
    for ex in exclusions:
        if out.get(ex.target) != SELF_DEALING:
            out[ex.target] = SELF_DEALING if ex.reason == SELF_DEALING else DISPUTED
    return out


def truth_index(
    facts: Iterable[Fact], probes: Iterable[Probe], excluded: Mapping[str, str]
) -> dict[InteractionKey, bool]:
    """Ground truth per interaction: its latest probe result, else its fact's check."""
    truth: dict[InteractionKey, bool] = {}
    for f in facts:
        if f.check is not None and f.entry_id not in excluded:
            truth[(f.reporter, f.interaction, f.subject)] = f.check == PASS
    latest: dict[InteractionKey, Probe] = {}
    for p in probes:
        if p.entry_id in excluded:
            continue
        key = (p.reporter, p.interaction, p.subject)
        prev = latest.get(key)
        if prev is None or p.seq > prev.seq:
            latest[key] = p
    for key, p in latest.items():
        truth[key] = p.passed
    return truth
