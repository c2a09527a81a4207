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
from typing import cast

from bureau.intake.links import is_favourable
from bureau.intake.records import EntryRecord, FactRecord, ReporterRecord, VerdictRecord
from bureau.intake.state import GroupState, engagement_fact_of
from bureau.kinds import Kind
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

#: A writer of one index table: (state, writes, kind, payload, signer, content key,
#: subject, entry id, seq). Positional, not one record object: making a seven-field
#: object costs ~0.2 µs an envelope, 2 % of judging one (bench/judge_bench.py).
Writer = Callable[[GroupState, Writes, Kind, Payload, str, str, "str | None", str, int], None]


def record_admitted(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
                    key: str, subject: str | None, entry_id: str, seq: int) -> None:
    """Note an admitted submission, chained as entry ``seq``, in the group's state and
    queue its index row."""
    st.admitted[key] = (entry_id, seq)
    st.entries[entry_id] = EntryRecord(entry_id, kind.name, subject)
    if kind.index is not None:
        _WRITERS[kind.index](st, w, kind, payload, signer, key, subject, entry_id, seq)


def record_exclusion(st: GroupState, w: Writes, target: str, seq: int, reason: str) -> None:
    """An ``exclusion`` entry (written by the bureau, see bureau.intake.ledger) at ``seq``."""
    st.excluded[target] = True
    w.exclusions.append((target, seq, reason))


# --------------------------------------------------------------------------- writers


def _reporters(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
               key: str, subject: str | None, entry_id: str, seq: int) -> None:
    p = cast(ReporterPayload, payload)
    issued_at = parse_timestamp(p.issued_at)
    st.reporters[p.reporter] = ReporterRecord(p.reporter, frozenset(p.roles), issued_at)
    distrusted = None if p.distrusted_from is None else parse_timestamp(p.distrusted_from)
    w.reporters.append((p.reporter, p.name, p.operator, list(p.roles), issued_at, distrusted,
                        seq))


def _facts(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
           key: str, subject: str | None, entry_id: str, seq: int) -> None:
    p = cast(FactPayload, payload)
    st.facts[(signer, p.interaction)] = FactRecord(key, p.subject, p.caller)
    eng = p.engagement
    if eng is not None:
        st.engagements[(signer, eng.id)] = engagement_fact_of(p.model_dump())
    w.facts.append((signer, p.interaction, seq, key, p.subject, p.caller,
                    eng.id if eng else None))


def _probes(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
            key: str, subject: str | None, entry_id: str, seq: int) -> None:
    p = cast(ProbePayload, payload)
    st.probes[(signer, p.interaction)] = FactRecord(key, p.subject, None)
    w.probes.append((signer, p.interaction, seq, key, p.subject))


def _agents(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
            key: str, subject: str | None, entry_id: str, seq: int) -> None:
    """Each row is the agent's whole new state, as the kind's ``agent`` makes it."""
    assert kind.agent is not None
    rec = kind.agent(payload, signer, st.agent(signer))
    st.agents[signer] = rec
    w.agents.append((rec.key, rec.name, rec.operator, rec.anchor_kind, rec.anchor_value,
                     rec.withdrawn, rec.amended_at, seq))


def _verdicts(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
              key: str, subject: str | None, entry_id: str, seq: int) -> None:
    assert kind.verdict is not None and subject is not None
    reporter, ref, said = kind.verdict(payload)
    st.verdicts[(kind.name, signer, reporter, ref)] = key
    favourable = is_favourable(kind.name, said)
    verdict = VerdictRecord(entry_id, kind.name, signer, subject, favourable)
    for who in (signer, subject):
        involving = st.involving.get(who)
        if involving is not None:  # loaded: an enrollment or amendment of the group asks
            involving.append(verdict)
    st.excluded[entry_id] = False
    w.verdicts.append((seq, entry_id, kind.name, signer, reporter, ref, subject, key,
                       favourable))


def _disputes(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
              key: str, subject: str | None, entry_id: str, seq: int) -> None:
    p = cast(DisputePayload, payload)
    st.disputes[entry_id] = p.entry
    st.resolved[entry_id] = False
    st.excluded.setdefault(p.entry, False)
    w.disputes.append((entry_id, p.entry, signer, seq))


def _resolutions(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
                 key: str, subject: str | None, entry_id: str, seq: int) -> None:
    p = cast(ResolutionPayload, payload)
    st.resolved[p.dispute] = True
    w.resolutions.append((p.dispute, entry_id, p.decision, seq))


def _policies(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
              key: str, subject: str | None, entry_id: str, seq: int) -> None:
    p = cast(PolicyPayload, payload)
    st.policy_at = parse_timestamp(p.issued_at)
    w.policies.append((seq, p.policy, p.from_epoch, st.policy_at))


def _pools(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
           key: str, subject: str | None, entry_id: str, seq: int) -> None:
    p = cast(PoolPayload, payload)
    st.pool_at = parse_timestamp(p.issued_at)
    w.pools.append((seq, p.units, p.from_epoch, st.pool_at))


def _ledger_keys(st: GroupState, w: Writes, kind: Kind, payload: Payload, signer: str,
                 key: str, subject: str | None, entry_id: str, seq: int) -> None:
    """A ``keys`` entry: its set rules from the next entry on, the group's next
    submissions included (SPEC §3 r3)."""
    p = cast(KeysPayload, payload)
    st.keys_at = parse_timestamp(p.issued_at)
    st.admin_keys = frozenset(p.admins)
    w.ledger_keys.append((seq + 1, seq, p.bureau, sorted(p.admins), st.keys_at))


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
