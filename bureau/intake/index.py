"""The admission indexes: what an admitted entry adds to them (SPEC §5).

The index tables (reporters, facts, probes, agents, verdicts, disputes, resolutions,
exclusions) are views of the entries that the rules read through
:class:`bureau.intake.state.GroupState`. An admitted entry goes two places at once: a row for
its table, written when the group commits (:class:`bureau.storage.chain.Writes`), and the same
fact in the group's in-memory state, so the next submission of the same group already
sees it. Which table a kind writes is the kinds table's ``index``; there is one writer
per table here. ``bureau rebuild`` replays every entry through :func:`record_admitted`,
so intake and rebuild cannot disagree about an index row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, cast

from bureau.intake.links import is_favourable
from bureau.intake.state import GroupState, engagement_fact_of
from bureau.kinds import Kind
from bureau.records import EntryRecord, FactRecord, ReporterRecord, VerdictRecord
from bureau.storage.chain import Writes
from reporters.models import (
    DisputePayload,
    FactPayload,
    KeysPayload,
    Payload,
    PolicyPayload,
    PoolPayload,
    ProbePayload,
    ReporterPayload,
    ResolutionPayload,
    parse_timestamp,
)


class Admitted(NamedTuple):
    """One admitted submission, chained: what an index writer reads of it."""

    kind: Kind
    payload: Payload
    signer: str
    key: str  # its content key
    subject: str | None
    entry_id: str
    seq: int


#: A writer of one index table. One ``Admitted`` made an envelope, not nine arguments:
#: ~0.2 µs, measured with bench/judge_bench.py.
Writer = Callable[[GroupState, Writes, Admitted], None]


def record_admitted(st: GroupState, w: Writes, a: Admitted) -> None:
    """Note an admitted submission in the group's state and queue its index row."""
    st.admitted[a.key] = (a.entry_id, a.seq)
    st.entries[a.entry_id] = EntryRecord(a.entry_id, a.kind.name, a.subject)
    if a.kind.index is not None:
        _WRITERS[a.kind.index](st, w, a)


def record_exclusion(st: GroupState, w: Writes, target: str, seq: int, reason: str) -> None:
    """An ``exclusion`` entry (written by the bureau, see bureau.intake.judging) at ``seq``."""
    st.excluded[target] = True
    w.exclusions.append((target, seq, reason))


# --------------------------------------------------------------------------- writers


def _reporters(st: GroupState, w: Writes, a: Admitted) -> None:
    p = cast(ReporterPayload, a.payload)
    issued_at = parse_timestamp(p.issued_at)
    st.reporters[p.reporter] = ReporterRecord(p.reporter, frozenset(p.roles), issued_at)
    distrusted = None if p.distrusted_from is None else parse_timestamp(p.distrusted_from)
    w.reporters.append((p.reporter, p.name, p.operator, list(p.roles), issued_at, distrusted,
                        a.seq))


def _facts(st: GroupState, w: Writes, a: Admitted) -> None:
    p = cast(FactPayload, a.payload)
    st.facts[(a.signer, p.interaction)] = FactRecord(a.key, p.subject, p.caller)
    eng = p.engagement
    if eng is not None:
        st.engagements[(a.signer, eng.id)] = engagement_fact_of(p.model_dump())
    w.facts.append((a.signer, p.interaction, a.seq, a.key, p.subject, p.caller,
                    eng.id if eng else None))


def _probes(st: GroupState, w: Writes, a: Admitted) -> None:
    p = cast(ProbePayload, a.payload)
    st.probes[(a.signer, p.interaction)] = FactRecord(a.key, p.subject, None)
    w.probes.append((a.signer, p.interaction, a.seq, a.key, p.subject))


def _agents(st: GroupState, w: Writes, a: Admitted) -> None:
    """Each row is the agent's whole new state, as the kind's ``agent`` makes it."""
    assert a.kind.agent is not None
    rec = a.kind.agent(a.payload, a.signer, st.agent(a.signer))
    st.agents[a.signer] = rec
    w.agents.append((rec.key, rec.name, rec.operator, rec.anchor_kind, rec.anchor_value,
                     rec.withdrawn, rec.amended_at, a.seq))


def _verdicts(st: GroupState, w: Writes, a: Admitted) -> None:
    assert a.kind.verdict is not None and a.subject is not None
    reporter, ref, said = a.kind.verdict(a.payload)
    st.verdicts[(a.kind.name, a.signer, reporter, ref)] = a.key
    favourable = is_favourable(a.kind.name, said)
    verdict = VerdictRecord(a.entry_id, a.kind.name, a.signer, a.subject, favourable)
    for who in (a.signer, a.subject):
        involving = st.involving.get(who)
        if involving is not None:  # loaded: an enrollment or amendment of the group asks
            involving.append(verdict)
    st.excluded[a.entry_id] = False
    w.verdicts.append((a.seq, a.entry_id, a.kind.name, a.signer, reporter, ref, a.subject, a.key,
                       favourable))


def _disputes(st: GroupState, w: Writes, a: Admitted) -> None:
    p = cast(DisputePayload, a.payload)
    st.disputes[a.entry_id] = p.entry
    st.resolved[a.entry_id] = False
    st.excluded.setdefault(p.entry, False)
    w.disputes.append((a.entry_id, p.entry, a.signer, a.seq))


def _resolutions(st: GroupState, w: Writes, a: Admitted) -> None:
    p = cast(ResolutionPayload, a.payload)
    st.resolved[p.dispute] = True
    w.resolutions.append((p.dispute, a.entry_id, p.decision, a.seq))


def _policies(st: GroupState, w: Writes, a: Admitted) -> None:
    p = cast(PolicyPayload, a.payload)
    st.policy_at = parse_timestamp(p.issued_at)
    w.policies.append((a.seq, p.policy, p.from_epoch, st.policy_at))


def _pools(st: GroupState, w: Writes, a: Admitted) -> None:
    p = cast(PoolPayload, a.payload)
    st.pool_at = parse_timestamp(p.issued_at)
    w.pools.append((a.seq, p.units, p.from_epoch, st.pool_at))


def _ledger_keys(st: GroupState, w: Writes, a: Admitted) -> None:
    """A ``keys`` entry: its set rules from the next entry on, the group's next
    submissions included (SPEC §3 r3)."""
    p = cast(KeysPayload, a.payload)
    st.keys_at = parse_timestamp(p.issued_at)
    st.admin_keys = frozenset(p.admins)
    w.ledger_keys.append((a.seq + 1, a.seq, p.bureau, sorted(p.admins), st.keys_at))


#: index table -> its writer (bureau.kinds names the table each kind writes)
_WRITERS: dict[str, Writer] = {
    "reporters": _reporters,
    "facts": _facts,
    "probes": _probes,
    "agents": _agents,
    "verdicts": _verdicts,
    "disputes": _disputes,
    "resolutions": _resolutions,
    "policies": _policies,
    "pools": _pools,
    "ledger_keys": _ledger_keys,
}
