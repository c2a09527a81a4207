"""The incremental deriver equals the reference (whole-ledger) scoring, byte for byte,
at every seal of randomised ledgers — the property that makes incremental sealing
safe (SPEC §1.4: rebuilding gives byte-identical results)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from bureau.derive import Deriver
from bureau.evidence import AgentName, Item, LedgerEvidence
from bureau.report_view import encode as encode_payload
from bureau.reports import reference_payloads
from bureau.scoring import policy_hash, policy_v1
from bureau.scoring.inputs import (
    Attestation,
    Engagement,
    Exclusion,
    Fact,
    Probe,
    Promise,
    ValueJudgment,
)
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
                         r.choice([None, "COMPLETED", "CAP_REACHED", "TERMINATED"])))
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
            p = Probe(seq, eid, rep, ia, subject, "k", r.random() < 0.6)
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


@pytest.mark.parametrize("seed", range(40))
def test_incremental_equals_reference_at_every_seal(seed: int) -> None:
    """Seeds 0-39 cover every rule of SPEC §7, exclusions of every kind of entry (and of
    entries that are no evidence), engagements whose probe came first, and evaluators
    whose weight moves from one seal to the next."""
    rnd = random.Random(seed)
    gen = Gen(rnd)
    deriver = Deriver(policy_v1(), policy_hash())
    ledger = LedgerEvidence()
    by_id: dict[str, tuple[int, Item]] = {}
    seals = sorted(rnd.sample(range(20, 400), 6))
    for epoch, upto in enumerate(seals):
        batch: list[tuple[int, Item]] = []
        while gen.seq < upto:
            item = gen.item()
            if item is not None:
                batch.append((gen.seq, item))
                if not isinstance(item, Exclusion | AgentName):
                    by_id[item.entry_id] = (gen.seq, item)
        targets: dict[str, tuple[int, Item | None]] = {
            i.target: by_id.get(i.target, (0, None)) for _, i in batch
            if isinstance(i, Exclusion)}
        cut = rnd.randrange(len(batch) + 1)  # applied in two pieces, settled once
        deriver.apply(batch[:cut], targets)
        deriver.apply(batch[cut:], targets)
        deriver.settle()
        ledger.add(batch)
        head = f"{gen.seq:064x}"
        want = [(a, wire.canonical_json(p)) for a, p in
                reference_payloads(ledger, epoch, gen.seq, head)]
        got = list(deriver.payloads(epoch, gen.seq, head))
        assert [a for a, _ in got] == [a for a, _ in want]
        for (agent, g), (_, w) in zip(got, want, strict=True):
            assert g == w, f"seed {seed}, epoch {epoch}, agent {agent}"


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
    for _, payload in reference_payloads(ledger, 7, gen.seq, "ab" * 32):
        assert encode_payload(payload) == wire.canonical_json(payload)
    odd = {"a": [1e-7, 1e21, 0.5, 1.0, -0.0, 123456.75, 1e-4, 2.5e-5], "é": "ü\n\u2028",
           "z": None, "b": True}
    assert encode_payload(odd) == wire.canonical_json(odd)
