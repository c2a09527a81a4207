"""The admission state of one group commit: what the rules need, fetched in a few bulk
queries under the ledger lock, plus everything admitted earlier in the same group.

:class:`GroupState` implements :class:`bureau.admission.AdmissionState`. It only answers
questions about keys it was told about in :meth:`GroupState.load`; asking about any other
key is a programming error and fails loudly rather than silently answering "absent".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import asyncpg

from bureau.admission import (
    AgentRecord,
    EngagementFact,
    EntryRecord,
    FactRecord,
    ReporterRecord,
    VerdictRecord,
)
from bureau.envelope import Envelope
from bureau.errors import BureauError
from reporters import wire
from reporters.models import (
    AttestationPayload,
    DisputePayload,
    FactPayload,
    Payload,
    ProbePayload,
    ReporterPayload,
    ResolutionPayload,
    ValueJudgmentPayload,
)

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


@dataclass
class GroupState:
    admin_keys: frozenset[str]
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

    # ------------------------------------------------------------------ loading

    @classmethod
    async def load(cls, conn: asyncpg.Connection, subs: Sequence[Submission],
                   admin_keys: frozenset[str]) -> GroupState:
        """Fetch, in a handful of queries, everything the rules may ask about ``subs``."""
        st = cls(admin_keys)
        party_keys: set[str] = set()
        fact_keys: set[tuple[str, str]] = set()
        probe_keys: set[tuple[str, str]] = set()
        engagement_keys: set[tuple[str, str]] = set()
        verdict_keys: set[tuple[str, str, str, str]] = set()
        involving_keys: set[str] = set()
        entry_ids: set[str] = set()
        dispute_ids: set[str] = set()
        for sub in subs:
            p, signer = sub.payload, sub.signer
            party_keys.add(signer)
            if type(p) is ReporterPayload:
                party_keys.add(p.reporter)
            elif (type(p) is FactPayload or type(p) is ProbePayload):
                fact_keys.add((signer, p.interaction))
                probe_keys.add((signer, p.interaction))
            elif type(p) is AttestationPayload:
                party_keys.add(p.subject)
                fact_keys.add((p.reporter, p.interaction))
                verdict_keys.add(("attestation", signer, p.reporter, p.interaction))
            elif type(p) is ValueJudgmentPayload:
                party_keys.add(p.subject)
                engagement_keys.add((p.reporter, p.engagement))
                verdict_keys.add(("value-judgment", signer, p.reporter, p.engagement))
            elif type(p) is DisputePayload:
                entry_ids.add(p.entry)
            elif type(p) is ResolutionPayload:
                dispute_ids.add(p.dispute)
            if sub.envelope.name in ("enrollment", "amendment"):
                involving_keys.add(signer)

        await st._load_admitted(conn, [s.envelope.content_key for s in subs])
        await st._load_facts(conn, fact_keys, probe_keys, engagement_keys)
        await st._load_verdicts(conn, verdict_keys)
        excluded_candidates = await st._load_involving(conn, involving_keys)
        party_keys |= {v.subject for vs in st.involving.values() if vs for v in vs}
        party_keys |= {v.evaluator for vs in st.involving.values() if vs for v in vs}
        await st._load_parties(conn, party_keys)
        targets = await st._load_disputes(conn, dispute_ids)
        # Dispute targets too: an exclusion entry is about its target's subject.
        await st._load_entries(conn, entry_ids | targets)
        await st._load_exclusions(conn, excluded_candidates | targets)
        return st

    async def _load_admitted(self, conn: asyncpg.Connection, keys: list[str]) -> None:
        rows = await conn.fetch(
            "SELECT content_key, id, seq FROM entries WHERE content_key = ANY($1::text[])", keys)
        self.admitted.update({r["content_key"]: (r["id"], r["seq"]) for r in rows})

    async def _load_parties(self, conn: asyncpg.Connection, keys: set[str]) -> None:
        wanted = sorted(keys)
        self.reporters.update(dict.fromkeys(wanted))
        self.agents.update(dict.fromkeys(wanted))
        # reporters and agents in one round trip
        for r in await conn.fetch(
                "SELECT 'reporter' AS t, key, roles, NULL AS name, NULL AS operator,"
                " NULL AS anchor_kind, NULL AS anchor_value, NULL::boolean AS withdrawn"
                " FROM reporters WHERE key = ANY($1::text[])"
                " UNION ALL SELECT 'agent', key, NULL, name, operator, anchor_kind,"
                " anchor_value, withdrawn FROM agents WHERE key = ANY($1::text[])", wanted):
            if r["t"] == "reporter":
                self.reporters[r["key"]] = ReporterRecord(r["key"], frozenset(r["roles"]))
            else:
                self.agents[r["key"]] = AgentRecord(
                    r["key"], r["name"], r["operator"], r["anchor_kind"], r["anchor_value"],
                    r["withdrawn"])

    async def _load_facts(self, conn: asyncpg.Connection, fact_keys: set[tuple[str, str]],
                          probe_keys: set[tuple[str, str]],
                          engagement_keys: set[tuple[str, str]]) -> None:
        self.facts.update(dict.fromkeys(fact_keys))
        self.probes.update(dict.fromkeys(probe_keys))
        self.engagements.update(dict.fromkeys(engagement_keys))
        if fact_keys or probe_keys:
            # facts and probes in one round trip: the common group is all facts
            f_reps, f_ints = _pairs(fact_keys)
            p_reps, p_ints = _pairs(probe_keys)
            for r in await conn.fetch(
                    "SELECT 'fact' AS t, f.reporter, f.interaction, f.content_key, f.subject,"
                    " f.caller FROM facts f JOIN unnest($1::text[], $2::text[]) AS k(rep, ia)"
                    " ON f.reporter = k.rep AND f.interaction = k.ia"
                    " UNION ALL SELECT 'probe', p.reporter, p.interaction, p.content_key,"
                    " p.subject, NULL FROM probes p"
                    " JOIN unnest($3::text[], $4::text[]) AS k(rep, ia)"
                    " ON p.reporter = k.rep AND p.interaction = k.ia",
                    f_reps, f_ints, p_reps, p_ints):
                table = self.facts if r["t"] == "fact" else self.probes
                table[(r["reporter"], r["interaction"])] = FactRecord(
                    r["content_key"], r["subject"], r["caller"])
        for reporter, engagement in sorted(engagement_keys):
            row = await conn.fetchrow(
                "SELECT e.entry FROM facts f JOIN entries e ON e.seq = f.seq"
                " WHERE f.reporter = $1 AND f.engagement = $2 ORDER BY f.seq DESC LIMIT 1",
                reporter, engagement)
            if row is not None:
                fact = fact_payload_of_entry(bytes(row["entry"]))
                self.engagements[(reporter, engagement)] = engagement_fact_of(fact)

    async def _load_verdicts(self, conn: asyncpg.Connection,
                             keys: set[tuple[str, str, str, str]]) -> None:
        self.verdicts.update(dict.fromkeys(keys))
        if not keys:
            return
        ks = sorted(keys)
        rows = await conn.fetch(
            "SELECT v.kind, v.evaluator, v.reporter, v.ref, v.content_key FROM verdicts v"
            " JOIN unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS k(kd, ev, rep, rf)"
            " ON v.kind = k.kd AND v.evaluator = k.ev AND v.reporter = k.rep AND v.ref = k.rf",
            [k[0] for k in ks], [k[1] for k in ks], [k[2] for k in ks], [k[3] for k in ks])
        for r in rows:
            self.verdicts[(r["kind"], r["evaluator"], r["reporter"], r["ref"])] = r["content_key"]

    async def _load_involving(self, conn: asyncpg.Connection, agents: set[str]) -> set[str]:
        self.involving.update({a: [] for a in agents})
        if not agents:
            return set()
        rows = await conn.fetch(
            "SELECT entry_id, kind, evaluator, subject FROM verdicts"
            " WHERE evaluator = ANY($1::text[]) OR subject = ANY($1::text[]) ORDER BY seq",
            sorted(agents))
        ids: set[str] = set()
        for r in rows:
            v = VerdictRecord(r["entry_id"], r["kind"], r["evaluator"], r["subject"])
            ids.add(v.entry_id)
            # a retroactive exclusion of this verdict is about the verdict's subject
            self.entries[v.entry_id] = EntryRecord(v.entry_id, v.kind, v.subject)
            for who in {v.evaluator, v.subject} & agents:
                lst = self.involving[who]
                assert lst is not None
                lst.append(v)
        return ids

    async def _load_entries(self, conn: asyncpg.Connection, ids: set[str]) -> None:
        self.entries.update(dict.fromkeys(ids))
        if not ids:
            return
        for r in await conn.fetch(
                "SELECT id, kind, subject FROM entries WHERE id = ANY($1::text[])", sorted(ids)):
            self.entries[r["id"]] = EntryRecord(r["id"], r["kind"], r["subject"])

    async def _load_disputes(self, conn: asyncpg.Connection, ids: set[str]) -> set[str]:
        self.disputes.update(dict.fromkeys(ids))
        self.resolved.update(dict.fromkeys(ids, False))
        if not ids:
            return set()
        for r in await conn.fetch(
                "SELECT d.entry_id, d.target, r.entry_id AS resolution FROM disputes d"
                " LEFT JOIN resolutions r ON r.dispute = d.entry_id"
                " WHERE d.entry_id = ANY($1::text[])", sorted(ids)):
            self.disputes[r["entry_id"]] = r["target"]
            self.resolved[r["entry_id"]] = r["resolution"] is not None
        return {t for t in self.disputes.values() if t is not None}

    async def _load_exclusions(self, conn: asyncpg.Connection, ids: set[str]) -> None:
        self.excluded.update(dict.fromkeys(ids, False))
        if not ids:
            return
        for r in await conn.fetch(
                "SELECT target FROM exclusions WHERE target = ANY($1::text[])", sorted(ids)):
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

