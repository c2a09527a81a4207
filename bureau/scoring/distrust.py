"""Reporter distrust (SPEC §3): which facts and probes count nowhere, and which verdicts
fall with them.

A ``reporter`` update with ``distrusted_from: T`` declares the reporter's evidence
untrustworthy from ``T`` on. A report applies the distrust in force at its seal: the
reporter's latest update up to the seal (``issued_at`` orders updates, and admission
only takes a later one, so the latest by seq is the one in force). Then a fact or probe
of that reporter is set aside when

* its ``observed_at`` is at or after ``T``, or
* it was recorded (by seq) after the update that *began* the distrust: the first of
  the unbroken run of updates, ending with the one in force, that all declare some
  ``distrusted_from``.

Why the run's first update and not the latest: an admin who re-issues a distrusted
registration (to change its name or roles, or to move ``T``) must not let evidence
escape that the earlier update already caught, and a reporter that backdates
``observed_at`` is caught by the seq however often the registration is re-issued. Only
``distrusted_from: null`` ends the run, and it lifts the distrust for later seals.

An attestation or value judgment is set aside with its witnesses: when every fact that
witnesses it (for an attestation, the fact of its interaction; for a value judgment, the
facts of its engagement) counts nowhere and at least one of them is distrusted. Entries
already excluded by an ``exclusion`` entry keep that reason: one reason per entry, in
the order self_dealing, disputed, distrusted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bureau.scoring.inputs import (
    DISTRUSTED,
    Evidence,
    Fact,
    Probe,
    ReporterUpdate,
)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)


def instant(timestamp: str) -> int:
    """An RFC 3339 UTC timestamp as integer microseconds since 1970 (exact, and
    comparable whatever the number of fraction digits)."""
    return (dt.datetime.fromisoformat(timestamp) - _EPOCH) // _MICROSECOND


@dataclass(frozen=True, slots=True)
class Distrust:
    """One reporter's distrust in force."""

    since: int  # distrusted_from, as :func:`instant`
    after_seq: int  # seq of the update that began it


def distrust_in_force(updates: Iterable[ReporterUpdate]) -> dict[str, Distrust]:
    """Reporter -> its distrust, for every reporter whose latest update declares one."""
    state: dict[str, Distrust | None] = {}
    for u in sorted(updates, key=lambda u: u.seq):
        state[u.reporter] = step(state.get(u.reporter), u)
    return {r: d for r, d in state.items() if d is not None}


def step(before: Distrust | None, update: ReporterUpdate) -> Distrust | None:
    """A reporter's distrust after one more update (in seq order)."""
    if update.distrusted_from is None:
        return None
    began = before.after_seq if before is not None else update.seq
    return Distrust(instant(update.distrusted_from), began)


def is_distrusted(entry: Fact | Probe, distrust: Mapping[str, Distrust]) -> bool:
    d = distrust.get(entry.reporter)
    return d is not None and (entry.seq > d.after_seq or instant(entry.observed_at) >= d.since)


def distrusted_ids(evidence: Evidence, distrust: Mapping[str, Distrust],
                   excluded: Mapping[str, str]) -> dict[str, str]:
    """Entry id -> ``distrusted`` for every entry of ``evidence`` (its facts, probes,
    attestations and value judgments) distrust sets aside that no exclusion entry
    already does. Empty (and cheap) when no reporter of these facts and probes is
    distrusted."""
    out: dict[str, str] = {}
    if not distrust:
        return out
    facts, probes = evidence.facts, evidence.probes
    #: witness keys -> [facts, counted facts, distrusted facts]
    witnesses: dict[tuple[str, ...], list[int]] = {}
    for f in facts:
        bad = f.reporter in distrust and f.entry_id not in excluded and is_distrusted(
            f, distrust)
        if bad:
            out[f.entry_id] = DISTRUSTED
        counted = f.entry_id not in excluded and not bad
        keys: list[tuple[str, ...]] = [("i", f.reporter, f.interaction, f.subject)]
        if f.engagement is not None:
            keys.append(("e", f.reporter, f.engagement.id, f.subject))
        for key in keys:
            w = witnesses.setdefault(key, [0, 0, 0])
            w[0] += 1
            w[1] += counted
            w[2] += bad
    for p in probes:
        if p.reporter in distrust and p.entry_id not in excluded and is_distrusted(
                p, distrust):
            out[p.entry_id] = DISTRUSTED
    verdicts: list[tuple[str, tuple[str, ...]]] = [
        (a.entry_id, ("i", a.reporter, a.interaction, a.subject))
        for a in evidence.attestations]
    verdicts += [(v.entry_id, ("e", v.reporter, v.engagement, v.subject))
                 for v in evidence.value_judgments]
    for entry_id, key in verdicts:
        seen = witnesses.get(key)
        if seen is not None and seen[1] == 0 and seen[2] > 0 and entry_id not in excluded:
            out[entry_id] = DISTRUSTED
    return out
