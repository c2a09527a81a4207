"""The attacks of issue 13, as evidence built in memory and scored by the library.

Each scenario builds the ledger an attacker would make through the public interfaces
(enrolled callers attesting their own calls, buyers judging their own engagements, a
registered reporter lying) and scores one target agent under a policy, baseline and
attacked. ``tests/scoring/test_attacks.py`` holds v2 to the issue's targets;
``python -m tests.scoring.attacks`` prints the table of docs/scoring.md (v1 beside v2).

The live simulation (``bureau simulate --adversarial``) runs the same attacks through a
real bureau; these are the fast, exact version used to choose the policy's numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bureau.scoring import (
    EpochScoring,
    ReportInputs,
    build_report_payload,
    evaluator_table,
    split_by_agent,
)
from bureau.scoring.inputs import (
    Attestation,
    Engagement,
    Evidence,
    Fact,
    Probe,
    ReporterUpdate,
    ValueJudgment,
)
from bureau.scoring.policy import Policy, policy_v1, policy_v2

GATEWAY = "ed25519:gateway"
PROBER = "ed25519:prober"
ROGUE = "ed25519:rogue-reporter"
TARGET = "ed25519:target"
HEAD = "00" * 32


def observed(seq: int) -> str:
    """Entries are observed one second apart, in seq order."""
    return f"2026-12-01T{seq // 3600 % 24:02d}:{seq // 60 % 60:02d}:{seq % 60:02d}Z"


@dataclass
class World:
    """A ledger being written: every method appends entries, in seq order."""

    seq: int = 0
    facts: list[Fact] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    atts: list[Attestation] = field(default_factory=list)
    vjs: list[ValueJudgment] = field(default_factory=list)
    updates: list[ReporterUpdate] = field(default_factory=list)

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def call(self, subject: str, caller: str | None = None, *, check: str | None = None,
             claimed: str | None = "SUCCESS", reporter: str = GATEWAY,
             spent: int | None = None, derived: str | None = None) -> Fact:
        """One interaction the gateway saw (an engagement when ``spent`` is given)."""
        seq = self._next()
        eng = None if spent is None else Engagement(
            f"eng-{seq}", "TIME_AND_MATERIALS", 10**9, spent, "USD", (("hour", 1),),
            "COMPLETED")
        f = Fact(seq, f"f{seq}", reporter, f"ia-{seq}", subject, caller, claimed=claimed,
                 check=check, derived=derived, engagement=eng, observed_at=observed(seq))
        self.facts.append(f)
        return f

    def attest(self, evaluator: str, f: Fact, outcome: str, corrections: int = 0) -> None:
        seq = self._next()
        self.atts.append(Attestation(seq, f"a{seq}", evaluator, f.reporter, f.interaction,
                                     f.subject, outcome, corrections))

    def probe(self, f: Fact, passed: bool) -> None:
        """A probe result on ``f``'s interaction, recorded now."""
        seq = self._next()
        self.probes.append(Probe(seq, f"p{seq}", f.reporter, f.interaction, f.subject, "k",
                                 passed, observed_at=observed(seq)))

    def judge(self, buyer: str, f: Fact, judgment: str) -> None:
        assert f.engagement is not None
        seq = self._next()
        self.vjs.append(ValueJudgment(seq, f"v{seq}", buyer, f.reporter, f.engagement.id,
                                      f.subject, judgment, f.engagement.spent))

    def distrust(self, reporter: str, since: str | None) -> None:
        seq = self._next()
        self.updates.append(ReporterUpdate(seq, reporter, since))

    def evidence(self) -> Evidence:
        return Evidence(tuple(self.facts), tuple(self.probes), tuple(self.atts),
                        tuple(self.vjs), (), tuple(self.updates))


def report(world: World, agent: str, policy: Policy) -> dict[str, Any]:
    """``agent``'s report payload over the whole world."""
    ev = world.evidence()
    mine = split_by_agent(ev).get(agent, replace(Evidence(), reporter_updates=ev.reporter_updates))
    return build_report_payload(ReportInputs(agent, mine, EpochScoring(
        1, world.seq, HEAD, policy, "-", evaluator_table(ev, policy))))


# --------------------------------------------------------------------------- targets


def bluffer(w: World, agent: str = TARGET) -> list[Fact]:
    """10 calls whose check failed though it claimed success, 5 unchecked: 0.083."""
    for _ in range(10):
        w.call(agent, check="FAIL")
    return [w.call(agent) for _ in range(5)]


def honest(w: World, agent: str = TARGET) -> list[Fact]:
    """10 calls whose check passed, 5 unchecked: 0.917."""
    for _ in range(10):
        w.call(agent, check="PASS")
    return [w.call(agent) for _ in range(5)]


def long_record(w: World, agent: str) -> None:
    """An honest agent with a long record: 60 checked calls, 54 passed."""
    for i in range(60):
        w.call(agent, check="PASS" if i % 10 else "FAIL")


def evaluators(prefix: str, k: int) -> list[str]:
    return [f"ed25519:{prefix}-{i}" for i in range(k)]


# --------------------------------------------------------------------------- attacks


def sybil_ring(k: int, outcome: str) -> Callable[[World], None]:
    """k fresh evaluators, distinct keys, each a genuine caller of 9 more unchecked
    calls of the target, attesting ``outcome`` on each."""
    def attack(w: World) -> None:
        for e in evaluators("sybil", k):
            for _ in range(9):
                w.attest(e, w.call(TARGET, e), outcome)
    return attack


def one_subject_raters(w: World) -> None:
    """3 evaluators x 30 ACCEPTED, all on the target (one subject: v1's constant-rater
    rule needs three)."""
    for e in evaluators("constant", 3):
        for _ in range(30):
            w.attest(e, w.call(TARGET, e), "ACCEPTED")


def constant_rater_evasion(w: World) -> None:
    """3 evaluators x 30 verdicts over three subjects (10 on the target), all ACCEPTED but
    one ACCEPTED_AFTER_CORRECTIONS on a filler: v1's "all the same outcome" is escaped."""
    for e in evaluators("evader", 3):
        for subject in (TARGET, "ed25519:filler-1", "ed25519:filler-2"):
            for i in range(10):
                varied = subject == "ed25519:filler-2" and i == 0
                w.attest(e, w.call(subject, e), "ACCEPTED_AFTER_CORRECTIONS" if varied
                         else "ACCEPTED", 1 if varied else 0)


def calibrated_ring(by_probe: bool) -> Callable[[World], None]:
    """3 evaluators first honest on 10 calls each of a decoy (5 passed, 5 failed) —
    reading the check in their own file before attesting, or (``by_probe``) on calls
    that a probe covers after they attested — then 9 x ACCEPTED each on the target."""
    def attack(w: World) -> None:
        ring = evaluators("calibrated", 3)
        for e in ring:
            for i in range(10):
                passed = i % 2 == 0
                f = w.call("ed25519:decoy", e,
                           check=None if by_probe else ("PASS" if passed else "FAIL"))
                w.attest(e, f, "ACCEPTED" if passed else "FAILED_DISCOVERED")
                if by_probe:
                    w.probe(f, passed)
        for e in ring:
            for _ in range(9):
                w.attest(e, w.call(TARGET, e), "ACCEPTED")
    return attack


def value_flood(judgment: str, spent: int, count: int = 40) -> Callable[[World], None]:
    """``count`` time-and-materials engagements with the target by 4 buyers, each judged
    ``judgment`` at ``spent`` millionths."""
    def attack(w: World) -> None:
        buyers = evaluators("buyer", 4)
        for i in range(count):
            buyer = buyers[i % 4]
            w.judge(buyer, w.call(TARGET, buyer, spent=spent), judgment)
    return attack


def fabricated_failures(n: int, distrusted: bool) -> Callable[[World], None]:
    """A registered reporter fabricates ``n`` failed checks about the target; with
    ``distrusted``, an admin then sets its ``distrusted_from`` to before the first."""
    def attack(w: World) -> None:
        since = observed(w.seq + 1)
        for _ in range(n):
            w.call(TARGET, check="FAIL", reporter=ROGUE)
        if distrusted:
            w.distrust(ROGUE, since)
    return attack


# --------------------------------------------------------------------------- recentring


def calibrate(w: World, e: str, good: tuple[str, int], bad: tuple[str, int]) -> None:
    """20 calls of a calibration agent (10 good, 10 bad) that ``e`` attests in its own
    manner, each covered by a probe afterwards: blind ground truth for v1 and v2."""
    for i in range(20):
        passed = i % 2 == 0
        f = w.call("ed25519:calibration", e, check=None)
        outcome, corrections = good if passed else bad
        w.attest(e, f, outcome, corrections)
        w.probe(f, passed)


MANNERS = {  # a rater's (verdict on good work, verdict on bad work)
    "fair": (("ACCEPTED", 0), ("FAILED_DISCOVERED", 0)),
    "harsh": (("ACCEPTED_AFTER_CORRECTIONS", 1), ("FAILED_DISCOVERED", 0)),  # 0.85 / 0
    "generous": (("ACCEPTED", 0), ("FAILED_ADMITTED", 0)),  # 1 / 0.15
}


def panel(manner: str) -> Callable[[World], None]:
    """An agent whose only evidence is 20 unchecked calls (15 good, 5 bad) by 20 callers
    who all share one manner, each calibrated on 20 probed calls first."""
    def build(w: World) -> None:
        good, bad = MANNERS[manner]
        for i, e in enumerate(evaluators(manner, 20)):
            calibrate(w, e, good, bad)
            outcome, corrections = good if i % 4 else bad
            w.attest(e, w.call(TARGET, e), outcome, corrections)
    return build


# --------------------------------------------------------------------------- honest world


@dataclass(frozen=True)
class Population:
    """What an honest population's reports say under one policy."""

    honest: list[dict[str, Any]]  # the honest agents' scores
    bluffers: list[dict[str, Any]]
    evaluator_share: float  # mean share of an agent's Σw that came from evaluators
    weights: list[float]  # every evaluator's w_e
    provisional: int  # how many evaluators are provisional


def honest_population(policy: Policy, seed: int = 1) -> Population:
    """6 honest agents (right 90 % of the time) and 6 bluffers (right 40 %, always claiming
    success); 8 fair callers make 600 calls, attesting each truthfully; the gateway
    checks a third of the calls, and a prober covers 15 % of them after the caller has
    attested (blind ground truth)."""
    import random

    rnd = random.Random(seed)
    w = World()
    honest_ids = [f"ed25519:honest-{i}" for i in range(6)]
    bluffer_ids = [f"ed25519:bluffer-{i}" for i in range(6)]
    callers = evaluators("fair", 8)
    for _ in range(600):
        agent = rnd.choice(honest_ids + bluffer_ids)
        good = rnd.random() < (0.9 if agent in honest_ids else 0.4)
        caller = rnd.choice(callers)
        checked = rnd.random() < 1 / 3
        f = w.call(agent, caller, check=("PASS" if good else "FAIL") if checked else None)
        w.attest(caller, f, "ACCEPTED" if good else "FAILED_DISCOVERED")
        if rnd.random() < 0.15:
            w.probe(f, good)
    table = evaluator_table(w.evidence(), policy)
    reports = {a: report(w, a, policy) for a in honest_ids + bluffer_ids}
    shares = [1 - r["ground_truth_share"] for r in reports.values() if r["score"]]
    return Population([reports[a]["score"] for a in honest_ids],
                      [reports[a]["score"] for a in bluffer_ids],
                      sum(shares) / len(shares), [table[c].weight for c in callers],
                      sum(table[c].provisional for c in callers))


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Scenario:
    name: str
    baseline: Callable[[World], Any]
    attack: Callable[[World], None]
    bound: float  # v2 target: |attacked - baseline| <= bound


SCENARIOS: list[Scenario] = [
    *(Scenario(f"sybil ring up, k = {k}", bluffer, sybil_ring(k, "ACCEPTED"), 0.10)
      for k in (3, 6, 12)),
    *(Scenario(f"sybil ring down, k = {k}", honest, sybil_ring(k, "FAILED_DISCOVERED"), 0.10)
      for k in (3, 6, 12)),
    Scenario("3 raters x 30, one subject", bluffer, one_subject_raters, 0.10),
    Scenario("constant rater, one verdict varied", bluffer, constant_rater_evasion, 0.10),
    Scenario("ring calibrated on checked calls", bluffer, calibrated_ring(False), 0.10),
    Scenario("ring calibrated on probed calls", bluffer, calibrated_ring(True), 0.15),
    Scenario("40 x VALUE_OK, spent 0", bluffer, value_flood("VALUE_OK", 0), 0.01),
    Scenario("40 x VALUE_OK, 100 units each", bluffer, value_flood("VALUE_OK", 10**8), 0.10),
    Scenario("40 x VALUE_POOR, 100 units each", honest, value_flood("VALUE_POOR", 10**8),
             0.10),
    *(Scenario(f"{n} fabricated failures, distrusted", honest,
               fabricated_failures(n, True), 0.02) for n in (20, 100)),
]


def target_score(build: Callable[[World], None], policy: Policy) -> dict[str, Any]:
    w = World()
    build(w)
    score = report(w, TARGET, policy)["score"]
    assert score is not None
    return dict(score)


def run(scenario: Scenario, policy: Policy) -> tuple[float, float]:
    """(baseline, attacked) score value of the target."""
    def attacked(w: World) -> None:
        scenario.baseline(w)
        scenario.attack(w)
    return (target_score(scenario.baseline, policy)["value"],
            target_score(attacked, policy)["value"])


def whitewash(policy: Policy) -> tuple[dict[str, Any], dict[str, Any]]:
    """(a fresh key backed only by 3 fresh sybils, 9 x ACCEPTED each; an honest long
    record): their score objects."""
    return (target_score(sybil_ring(3, "ACCEPTED"), policy),
            target_score(lambda w: long_record(w, TARGET), policy))


def recentred(policy: Policy) -> dict[str, float]:
    """The score of an identical agent under each manner of rater."""
    return {m: target_score(panel(m), policy)["value"] for m in MANNERS}


def table() -> str:
    v1, v2 = policy_v1(), policy_v2()
    lines = ["| attack | target | v1 | v2 | v2 bound | held |", "|---|---|---|---|---|---|"]
    for s in SCENARIOS:
        b1, a1 = run(s, v1)
        b2, a2 = run(s, v2)
        held = abs(a2 - b2) <= s.bound
        lines.append(f"| {s.name} | {b2:.3f} | {b1:.3f} → {a1:.3f} | {b2:.3f} → {a2:.3f} "
                     f"| ±{s.bound:.2f} | {'yes' if held else 'NO'} |")
    for name, n in (("20 fabricated failures, no remedy", 20),
                    ("100 fabricated failures, no remedy", 100)):
        s = Scenario(name, honest, fabricated_failures(n, False), 0)
        b1, a1 = run(s, v1)
        b2, a2 = run(s, v2)
        lines.append(f"| {name} | {b2:.3f} | {b1:.3f} → {a1:.3f} | {b2:.3f} → {a2:.3f} "
                     "| (distrust is the remedy) | — |")
    cells = []
    for policy in (v1, v2):
        fresh, old = whitewash(policy)
        cells.append(f"{fresh['value']:.3f} (low {fresh['low']:.3f}) vs "
                     f"{old['value']:.3f} (low {old['low']:.3f})")
    lines.append(f"| whitewash: a fresh key backed by 3 sybils vs an honest long record | — "
                 f"| {cells[0]} | {cells[1]} | low below | "
                 f"{'yes' if fresh['low'] < old['low'] else 'NO'} |")
    gaps = []
    for policy in (v1, v2):
        r = recentred(policy)
        gap = max(abs(r["harsh"] - r["fair"]), abs(r["generous"] - r["fair"]))
        gaps.append((f"{r['harsh']:.3f} / {r['fair']:.3f} / {r['generous']:.3f}", gap))
    lines.append(f"| recentring: harsh / fair / generous panels | — | {gaps[0][0]} "
                 f"| {gaps[1][0]} | ±0.04 | {'yes' if gaps[1][1] <= 0.04 else 'NO'} |")
    lines.append("")
    lines.append("| honest population | v1 | v2 |")
    lines.append("|---|---|---|")
    pops = [honest_population(p) for p in (v1, v2)]
    lines.append("| lowest honest / highest bluffer score | " + " | ".join(
        f"{min(s['value'] for s in p.honest):.3f} / {max(s['value'] for s in p.bluffers):.3f}"
        for p in pops) + " |")
    lines.append("| lowest honest / highest bluffer score.low | " + " | ".join(
        f"{min(s['low'] for s in p.honest):.3f} / {max(s['low'] for s in p.bluffers):.3f}"
        for p in pops) + " |")
    lines.append("| evaluators' w_e (min–max) | " + " | ".join(
        f"{min(p.weights):.3f}–{max(p.weights):.3f}" for p in pops) + " |")
    lines.append("| evaluators provisional | " + " | ".join(
        f"{p.provisional} of {len(p.weights)}" for p in pops) + " |")
    lines.append("| mean share of an agent's weight from evaluators | " + " | ".join(
        f"{p.evaluator_share:.1%}" for p in pops) + " |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - prints the table of docs/scoring.md
    print(table())
