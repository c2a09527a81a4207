"""The incremental deriver equals the reference (whole-ledger) scoring, byte for byte,
at every seal of randomised ledgers — the property that makes incremental sealing
safe (SPEC §1.4: rebuilding gives byte-identical results)."""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from bureau.evidence.entries import LedgerEvidence
from bureau.evidence.policies import EpochPolicy
from bureau.kinds import (
    ATTESTATION,
    DISPUTE,
    ENROLLMENT,
    EXCLUSION,
    FACT,
    PROBE,
    REPORTER,
    RESOLUTION,
    VALUE_JUDGMENT,
    WITHDRAWAL,
    EntryParties,
    in_files_of,
)
from bureau.scoring import evaluator_table, policy_hash, policy_v1
from bureau.scoring.book import EvaluatorBook
from bureau.scoring.inputs import (
    AgentName,
    Attestation,
    Engagement,
    Exclusion,
    Fact,
    Item,
    Probe,
    Promise,
    ReporterUpdate,
    ValueJudgment,
)
from bureau.scoring.policy import KNOWN_POLICIES, Policy, policy_v2, policy_v3, policy_v4
from bureau.storage.reports import Seal
from bureau.views.derive import Deriver
from bureau.views.reference import reference_payloads
from reporters import wire

OUTCOMES = ["ACCEPTED", "ACCEPTED_AFTER_CORRECTIONS", "FAILED_ADMITTED",
            "FAILED_DISCOVERED", "DECLINED"]


@dataclass
class Gen:
    """A random but admissible-looking stream of decoded entries."""

    rnd: random.Random
    seq: int = 0
    agents: list[str] = field(default_factory=lambda: [f"ed25519:agent-{i}" for i in range(6)])
    evaluators: list[str] = field(default_factory=lambda: [f"ed25519:eval-{i}" for i in range(4)])
    reporters: list[str] = field(default_factory=lambda: ["ed25519:rep-a", "ed25519:rep-b"])
    facts: list[Fact] = field(default_factory=list)
    evidence_ids: list[tuple[str, Item]] = field(default_factory=list)
    engagements: list[tuple[str, str, str]] = field(default_factory=list)
    enrolled: set[str] = field(default_factory=set)
    probe_only: list[tuple[str, str, str]] = field(default_factory=list)
    n: int = 0
    epoch: int = 0
    distrust: bool = False  # whether reporters are ever distrusted

    def observed(self, seq: int) -> str:
        """An observed_at near the entry's place in the ledger, sometimes backdated."""
        back = self.rnd.choice([0, 0, 0, 40, 200])
        return f"2026-12-01T{(seq - back) // 3600 % 24:02d}:{(seq - back) // 60 % 60:02d}:" \
               f"{max(0, seq - back) % 60:02d}Z"

    def next(self) -> tuple[int, str]:
        self.seq += 1
        return self.seq, f"{self.seq:064x}"

    def ident(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def item(self) -> Item | None:
        r = self.rnd
        roll = r.random()
        seq, eid = self.next()
        if self.distrust and r.random() < 0.02:
            return ReporterUpdate(seq, r.choice(self.reporters),
                                  r.choice([None, self.observed(seq), self.observed(seq)]))
        if roll < 0.05:
            agent = r.choice(self.agents + self.evaluators)
            if agent in self.enrolled or r.random() < 0.7:
                was = agent in self.enrolled
                self.enrolled.add(agent)
                return AgentName(seq, agent, f"name {seq}", not was)
            return None
        if roll < 0.40:
            rep, subject = r.choice(self.reporters), r.choice(self.agents)
            if self.probe_only and r.random() < 0.15:  # a fact after its probe
                rep, ia, subject = self.probe_only.pop()
            else:
                ia = self.ident("ia")
            eng = None
            if r.random() < 0.25:
                if self.engagements and r.random() < 0.5:
                    erep, eid_, esub = r.choice(self.engagements)
                    if erep == rep and esub == subject:
                        eng = eid_
                if eng is None:
                    eng = self.ident("eng")
                    self.engagements.append((rep, eng, subject))
            f = Fact(seq, eid, rep, ia, subject, r.choice([*self.evaluators, None]),
                     r.random() < 0.9, r.choice([None, 10, 50, 200, 900]),
                     r.choice([None, True, False]),
                     tuple(Promise(p, r.random() < 0.7) for p in r.sample(["p1", "p2"], 1)),
                     r.choice([None, None, "SUCCESS", "FAILURE", "DECLINED"]),
                     r.choice([None, None, "PASS", "FAIL"]),
                     r.choice([None, None, "RETRY_ACCEPTED", "SWITCHED_AGENT", "ABANDONED"]),
                     None if eng is None else Engagement(
                         eng, r.choice(["TIME_AND_MATERIALS", "FIXED_SCOPE"]), 10**8,
                         r.choice([0, 10**6, 5 * 10**7]), "USD", (("hour", 2),),
                         r.choice([None, "COMPLETED", "CAP_REACHED", "TERMINATED"])),
                     self.epoch, self.observed(seq))
            self.facts.append(f)
            self.evidence_ids.append((eid, f))
            return f
        if roll < 0.55:
            if self.facts and r.random() < 0.7:
                f = r.choice(self.facts)
                rep, ia, subject = f.reporter, f.interaction, f.subject
            else:
                rep, ia, subject = r.choice(self.reporters), self.ident("ia"), r.choice(
                    self.agents)
                self.probe_only.append((rep, ia, subject))
            p = Probe(seq, eid, rep, ia, subject, "k", r.random() < 0.6, self.epoch,
                      self.observed(seq))
            self.evidence_ids.append((eid, p))
            return p
        if roll < 0.85 and self.facts:
            f = r.choice(self.facts)
            ev = f.caller if f.caller and r.random() < 0.8 else r.choice(self.evaluators)
            outcome = r.choice(OUTCOMES) if r.random() < 0.6 else "ACCEPTED"
            a = Attestation(seq, eid, ev, f.reporter, f.interaction, f.subject, outcome,
                            r.randint(1, 5) if outcome == "ACCEPTED_AFTER_CORRECTIONS" else 0)
            self.evidence_ids.append((eid, a))
            return a
        if roll < 0.92 and self.engagements:
            rep, eng, subject = r.choice(self.engagements)
            v = ValueJudgment(seq, eid, r.choice(self.evaluators), rep, eng, subject,
                              r.choice(["VALUE_OK", "VALUE_POOR"]), r.choice([0, 3 * 10**6]))
            self.evidence_ids.append((eid, v))
            return v
        if roll < 0.97 and self.evidence_ids:
            target = r.choice(self.evidence_ids)[0]
            return Exclusion(target, r.choice(["self_dealing", "disputed"]))
        if roll < 0.98:
            return Exclusion(f"{r.randrange(10**6):064x}", "disputed")  # not evidence
        return None


Batch = list[tuple[int, Item]]
Targets = dict[str, tuple[int, Item | None]]
#: (agent, seq, entry id): an entry of an agent's own file
Rows = list[tuple[str, int, str]]
Files = dict[str, list[tuple[int, str]]]


def _parties(item: Item) -> tuple[str | None, str | None, str | None]:
    """(signer, subject, caller) of the entry an item was decoded from."""
    if isinstance(item, Fact):
        return item.reporter, item.subject, item.caller
    if isinstance(item, Probe):
        return item.reporter, item.subject, None
    if isinstance(item, Attestation | ValueJudgment):
        return item.evaluator, item.subject, None
    if isinstance(item, ReporterUpdate):
        return "ed25519:admin", None, None
    assert isinstance(item, AgentName)
    return item.agent, item.agent, None


_KIND_OF = {Fact: FACT, Probe: PROBE, Attestation: ATTESTATION, ValueJudgment: VALUE_JUDGMENT,
            AgentName: ENROLLMENT, ReporterUpdate: REPORTER}


def files_of(rnd: random.Random, gen: Gen, seq: int, item: Item | None,
             by_id: dict[str, tuple[int, Item]]) -> set[str]:
    """Whose files the entry at ``seq`` is in, by the kinds table (the one definition).
    A seq with no item is an entry that is no evidence: a withdrawal, a dispute, the
    resolution of a dispute."""
    if isinstance(item, Exclusion):
        target = by_id.get(item.target)
        parties = _parties(target[1]) if target is not None else (None, None, None)
        return in_files_of(EXCLUSION, EntryParties(None, None, target=parties))
    if item is not None:
        signer, subject, caller = _parties(item)
        return in_files_of(_KIND_OF[type(item)], EntryParties(signer, subject, caller))
    agent = rnd.choice(gen.agents + gen.evaluators)
    kind = rnd.choice([WITHDRAWAL, DISPUTE, RESOLUTION])
    if kind is RESOLUTION:
        return in_files_of(kind, EntryParties("ed25519:admin", None, disputer=agent))
    return in_files_of(kind, EntryParties(agent, agent))


def seals_of(seed: int, *, distrust: bool = False, evaluators: int = 4, length: int = 400,
             ) -> Iterator[tuple[int, Batch, Targets, LedgerEvidence, str, Rows, Files]]:
    """A random ledger cut at six seals: (epoch, the entries since the previous seal,
    what their exclusions name, the whole ledger so far, the head, the entries the
    agents' files gained since the previous seal, every file so far)."""
    rnd = random.Random(seed)
    gen = Gen(rnd, distrust=distrust,
              evaluators=[f"ed25519:eval-{i}" for i in range(evaluators)])
    ledger = LedgerEvidence()
    files: Files = {}
    by_id: dict[str, tuple[int, Item]] = {}
    for epoch, upto in enumerate(sorted(rnd.sample(range(20, length), 6))):
        gen.epoch = epoch
        batch: Batch = []
        rows: Rows = []
        while gen.seq < upto:
            item = gen.item()
            seq, entry_id = gen.seq, f"{gen.seq:064x}"
            for agent in sorted(files_of(rnd, gen, seq, item, by_id)):
                rows.append((agent, seq, entry_id))
                files.setdefault(agent, []).append((seq, entry_id))
            if item is not None:
                batch.append((gen.seq, item))
                if not isinstance(item, Exclusion | AgentName | ReporterUpdate):
                    by_id[item.entry_id] = (gen.seq, item)
        targets: Targets = {i.target: by_id.get(i.target, (0, None)) for _, i in batch
                            if isinstance(i, Exclusion)}
        ledger.add(batch)
        yield epoch, batch, targets, ledger, f"{gen.seq:064x}", rows, files


def expected(ledger: LedgerEvidence, epoch: int, head: str, files: Files,
             policy: Policy | None = None) -> list[tuple[str, bytes]]:
    seq = int(head, 16)
    policy = policy or policy_v1()
    scored_by = EpochPolicy(policy, policy_hash(KNOWN_POLICIES[policy.version]))
    return [(a, wire.canonical_json(p)) for a, p in reference_payloads(
        ledger, sealed_at(epoch, seq, head), scored_by, files=files)]


def sealed_at(epoch: int, seq: int, head: str) -> Seal:
    """The seal of ``epoch`` at entry ``seq`` (id ``head``), the seal entry next."""
    return Seal(epoch, seq + 1, seq, head)


def assert_same(got: list[tuple[str, bytes]], want: list[tuple[str, bytes]],
                where: str) -> None:
    assert [a for a, _ in got] == [a for a, _ in want]
    for (agent, g), (_, w) in zip(got, want, strict=True):
        assert g == w, f"{where}, agent {agent}"


POLICIES = {"v1": policy_v1(), "v2": policy_v2(), "v3": policy_v3(), "v4": policy_v4()}


def deriver_for(name: str) -> Deriver:
    return Deriver(POLICIES[name], policy_hash(KNOWN_POLICIES[name]))


@pytest.mark.parametrize("distrust", [False, True], ids=["trusted", "distrust"])
@pytest.mark.parametrize("policy", ["v1", "v2", "v3", "v4"])
@pytest.mark.parametrize("seed", range(40))
def test_incremental_equals_reference_at_every_seal(seed: int, policy: str,
                                                    distrust: bool) -> None:
    """Seeds 0-39 cover every rule of SPEC §7, exclusions of every kind of entry (and of
    entries that are no evidence), engagements whose probe came first, evaluators
    whose weight moves from one seal to the next, and (v2) verdicts of weight 0 that
    pass resolution on, capped evaluators and provisional ones; with ``distrust``,
    reporters distrusted, re-issued and trusted again between seals."""
    check_every_seal(seed, policy, seals_of(seed, distrust=distrust))


def check_every_seal(seed: int, policy: str, seals: Iterator[tuple[
        int, Batch, Targets, LedgerEvidence, str, Rows, Files]]) -> None:
    """One deriver fed each seal's entries in two pieces, settled once, equal to the
    reference at every seal."""
    rnd = random.Random(-seed)
    deriver = deriver_for(policy)
    for epoch, batch, targets, ledger, head, rows, files in seals:
        cut = rnd.randrange(len(batch) + 1)  # applied in two pieces, settled once
        deriver.apply(batch[:cut], targets)
        deriver.add_files(rows[:cut])
        deriver.apply(batch[cut:], targets)
        deriver.add_files(rows[cut:])
        deriver.reweigh()
        got = list(deriver.payloads(epoch, int(head, 16), head))
        assert_same(got, expected(ledger, epoch, head, files, POLICIES[policy]),
                    f"seed {seed}, epoch {epoch}")


@pytest.mark.parametrize("distrust", [False, True], ids=["trusted", "distrust"])
@pytest.mark.parametrize("seed", range(16))
def test_v4_with_calibrated_evaluators_equals_reference(seed: int, distrust: bool) -> None:
    """Under v4 an evaluator is calibrated only on subjects that four or more evaluators
    were rated on, so these ledgers have nine evaluators and run longer: subjects become
    established (and, as verdicts are excluded or distrusted, stop being) between seals,
    evaluators become calibrated and their voices move."""
    check_every_seal(seed, "v4", seals_of(seed, distrust=distrust, evaluators=9, length=900))


def test_the_v4_ledgers_have_calibrated_evaluators() -> None:
    """What makes the test above test something: in most of its ledgers some evaluator
    is calibrated by the last seal (by the reference path's own table)."""
    calibrated = 0
    for seed in range(16):
        *_, (_, _, _, ledger, _, _, _) = seals_of(seed, evaluators=9, length=900)
        table = evaluator_table(ledger.evidence(), POLICIES["v4"])
        calibrated += any(not s.provisional and s.voice > 0 for s in table.values())
    assert calibrated >= 12, calibrated


def _subject_of(item: Item, targets: Targets) -> str | None:
    """The entry's ``subject`` column, as the ledger writes it: an exclusion's is its
    target's, a name's is the agent's."""
    if isinstance(item, Exclusion):
        target = targets.get(item.target, (0, None))[1]
        return None if target is None else _subject_of(target, targets)
    if isinstance(item, ReporterUpdate):
        return None
    return item.agent if isinstance(item, AgentName) else item.subject


@pytest.mark.parametrize("policy", ["v1", "v2", "v3", "v4"])
@pytest.mark.parametrize("shards", [2, 3])
@pytest.mark.parametrize("seed", range(20))
def test_agents_split_over_shards_equal_reference(seed: int, shards: int,
                                                  policy: str) -> None:
    """The split that bureau.views.shards makes across processes, done in one: every
    entry goes to the deriver of its subject's shard (reporter updates to every
    shard), each settles locally, one EvaluatorBook sums the evaluators, and every
    shard takes the weights that moved."""
    derivers = [deriver_for(policy) for _ in range(shards)]
    book = EvaluatorBook(POLICIES[policy])

    def shard(agent: str | None) -> int:
        return zlib.crc32((agent or "").encode()) % shards

    # v4's evaluators are calibrated only with enough raters per subject (see above)
    sizes = {"evaluators": 9, "length": 900} if policy == "v4" else {}
    for epoch, batch, targets, ledger, head, rows, files in seals_of(
            seed, distrust=seed % 2 == 1, **sizes):
        for i, d in enumerate(derivers):
            d.apply([(seq, item) for seq, item in batch
                     if isinstance(item, ReporterUpdate)
                     or shard(_subject_of(item, targets)) == i], targets)
            d.add_files([row for row in rows if shard(row[0]) == i])
        changed = book.update([(i, d.reweigh_local()) for i, d in enumerate(derivers)])
        for d in derivers:
            d.finish(changed)
        got = sorted(p for d in derivers for p in d.payloads(epoch, int(head, 16), head))
        assert_same(got, expected(ledger, epoch, head, files, POLICIES[policy]),
                    f"seed {seed}, epoch {epoch}")


@pytest.mark.parametrize("seed", range(10))
def test_fast_encoder_is_canonical_json(seed: int) -> None:
    rnd = random.Random(seed)
    gen = Gen(rnd)
    ledger = LedgerEvidence()
    items = []
    while gen.seq < 300:
        item = gen.item()
        if item is not None:
            items.append((gen.seq, item))
    ledger.add(items)
    scored_by = EpochPolicy(policy_v1(), policy_hash())
    for _, payload in reference_payloads(ledger, sealed_at(7, gen.seq, "ab" * 32), scored_by,
                                         files={}):
        assert wire.canonical_json_fast(payload) == wire.canonical_json(payload)
    odd = {"a": [1e-7, 1e21, 0.5, 1.0, -0.0, 123456.75, 1e-4, 2.5e-5], "é": "ü\n\u2028",
           "z": None, "b": True}
    assert wire.canonical_json_fast(odd) == wire.canonical_json(odd)


def test_report_parts_take_the_slow_encoder_when_they_must() -> None:
    """A rate below 1e-4 (the C encoder would write 5e-05, RFC 8785 writes 0.00005) and
    promise names whose code-point and UTF-16 orders differ (U+FB01 sorts before
    U+1F600 by code point, after it by UTF-16 code unit) still give canonical bytes."""
    rep, agent = "ed25519:rep", "ed25519:agent"
    facts = [Fact(i + 1, f"f{i}", rep, f"ia-{i}", agent, answered=False)
             for i in range(20_000)]
    facts.append(Fact(20_001, "last", rep, "ia-last", agent, answered=True, latency_ms=5,
                      promises=(Promise("\U0001F600", True), Promise("\uFB01", False),
                                Promise("é", True))))
    batch: Batch = [(f.seq, f) for f in facts]
    deriver = Deriver(policy_v1(), policy_hash())
    deriver.apply(batch, {})
    deriver.reweigh()
    ledger = LedgerEvidence()
    ledger.add(batch)
    head = f"{20_001:064x}"
    [(_, got)] = list(deriver.payloads(3, 20_001, head))
    [(_, want)] = expected(ledger, 3, head, {})
    assert got == want
    assert b'"answer_rate":0.00005' in got


@pytest.mark.parametrize("seed", range(12))
def test_a_policy_change_between_seals_starts_the_deriver_again(seed: int) -> None:
    """What the report builder does when the next epoch has another policy (SPEC §7.1):
    a new deriver, bound to that policy, fed every entry from the first — then it goes
    on incrementally. Every seal equals the reference under its own policy."""
    rnd = random.Random(seed)
    names = [rnd.choice(["v1", "v2", "v4"]) for _ in range(6)]
    deriver: Deriver | None = None
    seen: Batch = []
    seen_rows: Rows = []
    all_targets: Targets = {}
    for epoch, batch, targets, ledger, head, rows, files in seals_of(seed, distrust=True):
        all_targets.update(targets)
        name = names[epoch]
        if deriver is None or deriver.policy is not POLICIES[name]:
            deriver = deriver_for(name)
            deriver.apply(seen, all_targets)
            deriver.add_files(seen_rows)
        seen += batch
        seen_rows += rows
        deriver.apply(batch, targets)
        deriver.add_files(rows)
        deriver.reweigh()
        got = list(deriver.payloads(epoch, int(head, 16), head))
        assert_same(got, expected(ledger, epoch, head, files, POLICIES[name]),
                    f"seed {seed}, epoch {epoch} ({name})")
