"""What both halves of scoring stand on: which entries are excluded, and the ground
truth of each interaction (SPEC §7). Outcomes (:mod:`bureau.scoring.outcomes`) resolve
units against it; evaluators (:mod:`bureau.scoring.evaluators`) are graded against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bureau.scoring.distrust import distrust_in_force, distrusted_ids
from bureau.scoring.inputs import DISPUTED, PASS, SELF_DEALING, Evidence, Exclusion, Fact, Probe

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


def set_aside(evidence: Evidence) -> dict[str, str]:
    """Every entry of ``evidence`` that counts nowhere -> why: the exclusion entries
    (:func:`excluded_ids`), then what the distrust in force sets aside
    (:mod:`bureau.scoring.distrust`)."""
    excluded = excluded_ids(evidence.exclusions)
    distrust = distrust_in_force(evidence.reporter_updates)
    if distrust:
        excluded.update(distrusted_ids(evidence, distrust, excluded))
    return excluded


def latest_probes(probes: Iterable[Probe], excluded: Mapping[str, str]
                  ) -> dict[InteractionKey, Probe]:
    """The latest counted probe of each interaction."""
    latest: dict[InteractionKey, Probe] = {}
    for p in probes:
        if p.entry_id in excluded:
            continue
        key = (p.reporter, p.interaction, p.subject)
        prev = latest.get(key)
        if prev is None or p.seq > prev.seq:
            latest[key] = p
    return latest


#: An interaction's ground truth: (passed, the seq of the probe that says so — 0 when
#: it is the fact's check).
Truth = tuple[bool, int]


def truth_index(
    facts: Iterable[Fact], probes: Iterable[Probe], excluded: Mapping[str, str]
) -> dict[InteractionKey, Truth]:
    """Ground truth per interaction: its latest probe result, else its fact's check."""
    truth: dict[InteractionKey, Truth] = {}
    for f in facts:
        if f.check is not None and f.entry_id not in excluded:
            truth[(f.reporter, f.interaction, f.subject)] = (f.check == PASS, 0)
    for key, p in latest_probes(probes, excluded).items():
        truth[key] = (p.passed, p.seq)
    return truth


def claims_index(facts: Iterable[Fact], excluded: Mapping[str, str]
                 ) -> dict[InteractionKey, str | None]:
    """What the agent claimed on each interaction, by its counted fact (v4 rates a
    verdict against a witnessed admission: :func:`bureau.scoring.rates.rated_truth`)."""
    return {(f.reporter, f.interaction, f.subject): f.claimed for f in facts
            if f.entry_id not in excluded}


def graded_truth(truth: Truth | None, verdict_seq: int, blind: bool) -> bool | None:
    """The ground truth an evaluator's verdict is graded against, if any: any truth
    (v1), or only a probe recorded after the verdict (v2, SPEC §7.1.1 — the caller can
    read the fact's check, and a probe it has seen, before it attests)."""
    if truth is None or (blind and truth[1] <= verdict_seq):
        return None
    return truth[0]
