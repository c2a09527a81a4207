"""The admission state of one group commit: what the rules need, fetched in a few bulk
queries under the ledger lock, plus everything admitted earlier in the same group.

:class:`GroupState` implements :class:`bureau.records.AdmissionState`; what it loads for
each submission is what the submission's kind ``needs`` (:mod:`bureau.kinds`). It only answers
questions about keys it was told about in :meth:`GroupState.load`; asking about any other
key is a programming error and fails loudly rather than silently answering "absent".
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bureau.errors import BureauError
from bureau.intake.envelope import Envelope
from bureau.kinds import SUBMITTED, StateKeys
from bureau.records import (
    AgentRecord,
    EngagementFact,
    EntryRecord,
    FactRecord,
    ReporterRecord,
    VerdictRecord,
)
from bureau.storage import db
from bureau.storage.admission import AdmissionStore, FirstRead
from bureau.transparency.tree import TreeTip, frontier_from
from reporters import wire
from reporters.models import Payload

K = TypeVar("K")
V = TypeVar("V")


@dataclass(slots=True)
class Submission:
    """An envelope past parse and verify; ``payload`` is None when decode refused it."""

    envelope: Envelope
    payload: Payload | None
    refusal: BureauError | None = None

    @property
    def signer(self) -> str:
        return self.envelope.keyid


class _Known(dict[K, V | None]):
    """A cache that distinguishes 'fetched and absent' (None) from 'never asked'."""

    def get_known(self, key: K) -> V | None:
        if key not in self:
            raise AssertionError(f"admission state was not loaded for {key!r}")
        return self[key]


def _pairs(keys: Iterable[tuple[str, str]]) -> tuple[list[str], list[str]]:
    ks = sorted(set(keys))
    return [a for a, _ in ks], [b for _, b in ks]


@dataclass(frozen=True, slots=True)
class ChainTip:
    """The ledger head as the group found it, under the lock."""

    seq: int
    head: str
    recorded_at: dt.datetime | None  # None before the first entry


#: the head of an empty ledger, which entry 1 (the genesis entry) chains after
FIRST = ChainTip(0, wire.ZERO_ID, None)


@dataclass
class GroupState:
    #: the admin set in force (the ledger's, read with the head; SPEC §3 r3)
    admin_keys: frozenset[str] = frozenset()
    reporters: _Known[str, ReporterRecord] = field(default_factory=_Known)
    agents: _Known[str, AgentRecord] = field(default_factory=_Known)
    facts: _Known[tuple[str, str], FactRecord] = field(default_factory=_Known)
    probes: _Known[tuple[str, str], FactRecord] = field(default_factory=_Known)
    engagements: _Known[tuple[str, str], EngagementFact] = field(default_factory=_Known)
    verdicts: _Known[tuple[str, str, str, str], str] = field(default_factory=_Known)
    involving: _Known[str, list[VerdictRecord]] = field(default_factory=_Known)
    entries: _Known[str, EntryRecord] = field(default_factory=_Known)
    disputes: _Known[str, str] = field(default_factory=_Known)
    resolved: _Known[str, bool] = field(default_factory=_Known)
    excluded: _Known[str, bool] = field(default_factory=_Known)
    #: content key -> (entry id, seq) of every envelope admitted before or in this group
    admitted: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: the ledger head when the state was loaded (read in the same statement)
    head: ChainTip | None = None
    #: the Merkle tree's frontier at that head (bureau.transparency.tree)
    tree: TreeTip | None = None
    #: the epoch this group's entries are recorded in (set by the ledger once it has
    #: read its clock, before anything is judged)
    epoch: int | None = None
    #: the ``issued_at`` of the policy entry in force, once loaded (``policies_loaded``)
    policy_at: dt.datetime | None = None
    policies_loaded: bool = False
    #: the ``issued_at`` of the pool entry in force, once loaded (``pools_loaded``)
    pool_at: dt.datetime | None = None
    pools_loaded: bool = False
    #: the ``issued_at`` of the ``keys`` entry in force (None: the genesis entry's set),
    #: read with the head
    keys_at: dt.datetime | None = None

    # ------------------------------------------------------------------ protocol

    def is_admin(self, key: str) -> bool:
        return key in self.admin_keys

    def reporter(self, key: str) -> ReporterRecord | None:
        return self.reporters.get_known(key)

    def agent(self, key: str) -> AgentRecord | None:
        return self.agents.get_known(key)

    def fact(self, reporter: str, interaction: str) -> FactRecord | None:
        return self.facts.get_known((reporter, interaction))

    def probe(self, reporter: str, interaction: str) -> FactRecord | None:
        return self.probes.get_known((reporter, interaction))

    def engagement_fact(self, reporter: str, engagement: str) -> EngagementFact | None:
        return self.engagements.get_known((reporter, engagement))

    def verdict(self, kind: str, evaluator: str, reporter: str, ref: str) -> str | None:
        return self.verdicts.get_known((kind, evaluator, reporter, ref))

    def verdicts_involving(self, agent: str) -> Iterable[VerdictRecord]:
        return self.involving.get_known(agent) or []

    def entry(self, entry_id: str) -> EntryRecord | None:
        return self.entries.get_known(entry_id)

    def dispute_target(self, dispute_id: str) -> str | None:
        return self.disputes.get_known(dispute_id)

    def is_resolved(self, dispute_id: str) -> bool:
        return bool(self.resolved.get_known(dispute_id))

    def is_excluded(self, entry_id: str) -> bool:
        return bool(self.excluded.get_known(entry_id))

    def policy_issued_at(self) -> dt.datetime | None:
        if not self.policies_loaded:
            raise AssertionError("admission state was not loaded for the policy entries")
        return self.policy_at

    def pool_issued_at(self) -> dt.datetime | None:
        if not self.pools_loaded:
            raise AssertionError("admission state was not loaded for the pool entries")
        return self.pool_at

    def keys_issued_at(self) -> dt.datetime | None:
        return self.keys_at

    def recording_epoch(self) -> int:
        assert self.epoch is not None, "the ledger sets the group's epoch before judging"
        return self.epoch

    # ------------------------------------------------------------------ loading

    @classmethod
    async def load(cls, conn: db.Connection, subs: Sequence[Submission],
                   tree: TreeTip | None = None) -> GroupState:
        """Fetch, in a handful of queries, everything the rules may ask about ``subs``,
        the admin set in force, and the tree's frontier at the head: ``tree`` if it is
        still the head's (a process keeps its own between groups), else read back in the
        same statement."""
        st = cls()
        keys = StateKeys()
        for sub in subs:
            keys.parties.add(sub.signer)
            p = sub.payload
            if p is not None:
                needs = SUBMITTED[sub.envelope.name].needs
                if needs is not None:
                    needs(p, sub.signer, keys)
        party_keys = keys.parties

        st.head, st.tree = await st._load_first(
            conn, [s.envelope.content_key for s in subs], keys, tree)
        await st._load_engagements(conn, keys.engagements)
        await st._load_verdicts(conn, keys.verdicts)
        excluded_candidates = await st._load_involving(conn, keys.involving)
        more = {v.subject for vs in st.involving.values() if vs for v in vs}
        more |= {v.evaluator for vs in st.involving.values() if vs for v in vs}
        await st._load_parties(conn, more - party_keys)
        targets = await st._load_disputes(conn, keys.disputes)
        # Dispute targets too: an exclusion entry is about its target's subject.
        await st._load_entries(conn, keys.entries | targets)
        await st._load_exclusions(conn, excluded_candidates | targets)
        if keys.policies:
            await st._load_policies(conn)
        if keys.pools:
            await st._load_pools(conn)
        return st

    async def _load_policies(self, conn: db.Connection) -> None:
        """The policy entry in force: a group with a ``policy`` submission (rare) asks."""
        self.policy_at = await AdmissionStore(conn).in_force_at("policies")
        self.policies_loaded = True

    async def _load_pools(self, conn: db.Connection) -> None:
        """The pool entry in force: a group with a ``pool`` submission (rare) asks."""
        self.pool_at = await AdmissionStore(conn).in_force_at("pools")
        self.pools_loaded = True

    async def _load_first(self, conn: db.Connection, content_keys: list[str],
                          keys: StateKeys, tree: TreeTip | None,
                          ) -> tuple[ChainTip, TreeTip]:
        """The ledger head and what nearly every group asks about — content keys already
        admitted, ``keys``' facts and probes, reporters and agents — in ONE round trip.
        The group's critical section is a few round trips long, and every process takes
        it in turn, so each one saved is throughput for all of them. The tree's
        frontier comes in the same statement, when ``tree`` is not the head's."""
        self.facts.update(dict.fromkeys(keys.facts))
        self.probes.update(dict.fromkeys(keys.probes))
        parties = sorted(keys.parties)
        self.reporters.update(dict.fromkeys(parties))
        self.agents.update(dict.fromkeys(parties))
        f_reps, f_ints = _pairs(keys.facts)
        p_reps, p_ints = _pairs(keys.probes)
        head: ChainTip | None = None
        nodes: dict[tuple[int, int], bytes] = {}
        known = (tree.size, tree.head) if tree is not None else (-1, "")
        for r in await AdmissionStore(conn).first(FirstRead(
                content_keys, (f_reps, f_ints), (p_reps, p_ints), parties, known)):
            what = r["what"]
            if what == "fact" or what == "probe":
                table = self.facts if what == "fact" else self.probes
                table[(r["reporter"], r["interaction"])] = FactRecord(
                    r["content_key"], r["subject"], r["caller"])
            elif what == "admitted":
                self.admitted[r["content_key"]] = (r["entry_id"], r["seq"])
            elif what == "head":
                head = ChainTip(seq=r["seq"], head=r["head"], recorded_at=r["recorded_at"])
            elif what == "node":
                nodes[(r["level"], r["seq"])] = bytes(r["node_hash"])
            elif what == "admins":
                self.admin_keys = frozenset(r["roles"])
                self.keys_at = r["issued_at"]
            else:
                self._take_party(r)
        assert head is not None
        if tree is None or (tree.size, tree.head) != (head.seq, head.head):
            tree = TreeTip(head.head, frontier_from(head.seq, nodes))
        return head, tree

    async def _load_parties(self, conn: db.Connection, keys: set[str]) -> None:
        if not keys:
            return
        wanted = sorted(keys)
        self.reporters.update(dict.fromkeys(wanted))
        self.agents.update(dict.fromkeys(wanted))
        for r in await AdmissionStore(conn).parties(wanted):
            self._take_party(r)

    def _take_party(self, r: db.Row) -> None:
        """A 'reporter' or 'agent' row (see ``_ROW_COLUMNS``)."""
        if r["what"] == "reporter":
            self.reporters[r["party"]] = ReporterRecord(r["party"], frozenset(r["roles"]),
                                                        r["issued_at"])
        else:
            self.agents[r["party"]] = AgentRecord(r["party"], r["name"], r["operator"],
                                                  r["anchor_kind"], r["anchor_value"],
                                                  r["withdrawn"], r["issued_at"])

    async def _load_engagements(self, conn: db.Connection,
                                engagement_keys: set[tuple[str, str]]) -> None:
        self.engagements.update(dict.fromkeys(engagement_keys))
        for reporter, engagement in sorted(engagement_keys):
            entry = await AdmissionStore(conn).latest_engagement_fact(reporter, engagement)
            if entry is not None:
                fact = fact_payload_of_entry(entry)
                self.engagements[(reporter, engagement)] = engagement_fact_of(fact)

    async def _load_verdicts(self, conn: db.Connection,
                             keys: set[tuple[str, str, str, str]]) -> None:
        self.verdicts.update(dict.fromkeys(keys))
        if not keys:
            return
        ks = sorted(keys)
        rows = await AdmissionStore(conn).verdicts(
            [k[0] for k in ks], [k[1] for k in ks], [k[2] for k in ks], [k[3] for k in ks])
        for r in rows:
            self.verdicts[(r["kind"], r["evaluator"], r["reporter"], r["ref"])] = r["content_key"]

    async def _load_involving(self, conn: db.Connection, agents: set[str]) -> set[str]:
        self.involving.update({a: [] for a in agents})
        if not agents:
            return set()
        # Only favourable verdicts can be self-dealing (SPEC §5): the others stay put.
        rows = await AdmissionStore(conn).favourable_verdicts_involving(sorted(agents))
        ids: set[str] = set()
        for r in rows:
            v = VerdictRecord(r["entry_id"], r["kind"], r["evaluator"], r["subject"], True)
            ids.add(v.entry_id)
            # a retroactive exclusion of this verdict is about the verdict's subject
            self.entries[v.entry_id] = EntryRecord(v.entry_id, v.kind, v.subject)
            for who in {v.evaluator, v.subject} & agents:
                lst = self.involving[who]
                assert lst is not None
                lst.append(v)
        return ids

    async def _load_entries(self, conn: db.Connection, ids: set[str]) -> None:
        self.entries.update(dict.fromkeys(ids))
        if not ids:
            return
        for r in await AdmissionStore(conn).entries(sorted(ids)):
            self.entries[r["id"]] = EntryRecord(r["id"], r["kind"], r["subject"])

    async def _load_disputes(self, conn: db.Connection, ids: set[str]) -> set[str]:
        self.disputes.update(dict.fromkeys(ids))
        self.resolved.update(dict.fromkeys(ids, False))
        if not ids:
            return set()
        for r in await AdmissionStore(conn).disputes(sorted(ids)):
            self.disputes[r["entry_id"]] = r["target"]
            self.resolved[r["entry_id"]] = r["resolution"] is not None
        return {t for t in self.disputes.values() if t is not None}

    async def _load_exclusions(self, conn: db.Connection, ids: set[str]) -> None:
        self.excluded.update(dict.fromkeys(ids, False))
        if not ids:
            return
        for r in await AdmissionStore(conn).exclusions(sorted(ids)):
            self.excluded[r["target"]] = True


def fact_payload_of_entry(entry: bytes) -> dict[str, Any]:
    """The decoded payload of a stored envelope entry (trusted bytes from the ledger)."""
    doc = json.loads(entry)
    payload: dict[str, Any] = json.loads(wire.b64decode_canonical(doc["envelope"]["payload"]))
    return payload


def engagement_fact_of(fact: dict[str, Any]) -> EngagementFact:
    eng = fact["engagement"]
    return EngagementFact(
        subject=fact["subject"], caller=fact.get("caller"), arrangement=eng["arrangement"],
        spent=eng["spent"], currency=eng["currency"],
        units=tuple((u["unit"], u["quantity"]) for u in eng["units"]))

