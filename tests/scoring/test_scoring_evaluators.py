"""Evaluators are judged against ground truth only (SPEC §7), with hand-computed numbers."""

from __future__ import annotations

import pytest

from bureau.scoring.evaluators import EvaluatorStats, evaluator_table, evaluator_weight
from bureau.scoring.inputs import Attestation, Evidence, Exclusion, Fact, Probe
from bureau.scoring.outcomes import resolve_all
from bureau.scoring.policy import policy_v1

REP = "ed25519:reporter"
EVAL = "ed25519:evaluator"


class Ledger:
    """Builds facts and attestations with increasing seq numbers."""

    def __init__(self) -> None:
        self.seq = 0
        self.facts: list[Fact] = []
        self.probes: list[Probe] = []
        self.atts: list[Attestation] = []
        self.exclusions: list[Exclusion] = []

    def next(self) -> int:
        self.seq += 1
        return self.seq

    def attested(
        self,
        outcome: str,
        check: str | None = None,
        *,
        subject: str = "ed25519:s0",
        corrections: int = 0,
        evaluator: str = EVAL,
        probe: bool | None = None,
    ) -> str:
        i = f"i{self.next()}"
        self.facts.append(
            Fact(
                seq=self.seq,
                entry_id=f"f{self.seq}",
                reporter=REP,
                interaction=i,
                subject=subject,
                caller=evaluator,
                check=check,
            )
        )
        if probe is not None:
            s = self.next()
            self.probes.append(
                Probe(
                    seq=s,
                    entry_id=f"p{s}",
                    reporter=REP,
                    interaction=i,
                    subject=subject,
                    probe="x",
                    passed=probe,
                )
            )
        s = self.next()
        self.atts.append(
            Attestation(
                seq=s,
                entry_id=f"a{s}",
                evaluator=evaluator,
                reporter=REP,
                interaction=i,
                subject=subject,
                outcome=outcome,
                corrections=corrections,
            )
        )
        return f"a{s}"

    def evidence(self) -> Evidence:
        return Evidence(
            facts=tuple(self.facts),
            probes=tuple(self.probes),
            attestations=tuple(self.atts),
            exclusions=tuple(self.exclusions),
        )

    def stats(self, evaluator: str = EVAL) -> EvaluatorStats:
        return evaluator_table(self.evidence(), policy_v1())[evaluator]


def test_no_ground_truth_weighs_a_quarter() -> None:
    led = Ledger()
    for _ in range(3):
        led.attested("ACCEPTED")  # no check, no probe: unscoreable for accuracy
    st = led.stats()
    assert (st.n, st.verdicts, st.accuracy, st.mean_error) == (0, 3, None, None)
    assert st.weight == pytest.approx((0 * 0.5 + 5 * 0.25) / (0 + 5)) == 0.25
    assert st.offset == 0.0
    assert evaluator_weight({}, "ed25519:never-seen", policy_v1()) == 0.25


def test_five_samples_by_hand() -> None:
    led = Ledger()
    led.attested("ACCEPTED", "PASS")  # right
    led.attested("ACCEPTED", "PASS", subject="ed25519:s1")  # right
    led.attested("FAILED_DISCOVERED", "PASS", subject="ed25519:s2")  # wrong
    led.attested("FAILED_ADMITTED", "FAIL")  # 0.15 < 0.5: right
    led.attested("ACCEPTED", "FAIL")  # wrong
    led.attested("ACCEPTED")  # no truth: not in the sample
    st = led.stats()
    # P=3 tp=2, N=2 tn=1; TPR = 3/5 = 0.6, TNR = 2/4 = 0.5, J = 0.1
    assert (st.n, st.positives, st.tp, st.negatives, st.tn) == (5, 3, 2, 2, 1)
    assert st.tpr == pytest.approx(0.6)
    assert st.tnr == pytest.approx(0.5)
    assert st.informedness == pytest.approx(0.1)
    assert st.accuracy == pytest.approx(0.6)
    # errors 0, 0, -1, 0.15, 1 -> d = 0.15 / 5 = 0.03
    assert st.mean_error == pytest.approx(0.03)
    assert st.weight == pytest.approx((5 * 0.1 + 1.25) / 10)  # 0.175
    assert st.offset == pytest.approx(5 * 0.03 / 10)  # 0.015
    assert st.verdicts == 6 and st.subjects == 3 and not st.constant


def test_twenty_samples_by_hand() -> None:
    led = Ledger()
    for k in range(10):
        led.attested("ACCEPTED", "PASS", subject=f"ed25519:s{k % 4}")
        led.attested("FAILED_ADMITTED", "FAIL", subject=f"ed25519:s{k % 4}")
    st = led.stats()
    # TPR = TNR = 11/12, J = 10/12; d = (10 * 0.15) / 20 = 0.075
    assert st.n == 20
    assert st.informedness == pytest.approx(10 / 12)
    assert st.weight == pytest.approx((20 * 10 / 12 + 1.25) / 25)  # 0.716667
    assert st.offset == pytest.approx(20 * 0.075 / 25)  # 0.06
    assert st.accuracy == 1.0


def test_probe_is_truth_over_the_check() -> None:
    led = Ledger()
    led.attested("ACCEPTED", "FAIL", probe=True)  # the probe passed: the verdict was right
    st = led.stats()
    assert (st.positives, st.tp, st.negatives) == (1, 1, 0)


def test_harsh_evaluator_is_recentred_up() -> None:
    led = Ledger()
    for k in range(4):  # good work called mediocre: 0.55 against truth 1
        led.attested("ACCEPTED_AFTER_CORRECTIONS", "PASS", corrections=3, subject=f"ed25519:s{k}")
    led.attested("FAILED_DISCOVERED", "FAIL")
    target = led.attested("ACCEPTED_AFTER_CORRECTIONS", subject="ed25519:t", corrections=3)
    st = led.stats()
    # d = (4 * -0.45 + 0) / 5 = -0.36; offset = 5 * -0.36 / 10 = -0.18
    assert st.offset == pytest.approx(-0.18)
    rs = resolve_all(led.evidence(), policy_v1(), {EVAL: st})
    [r] = [r for r in rs if r.unit.attestation and r.unit.attestation.entry_id == target]
    assert r.rule == 3 and r.raw_value == pytest.approx(0.55)
    assert r.value == pytest.approx(0.55 + 0.18)  # recentred up
    assert r.offset == pytest.approx(-0.18)


def test_generous_evaluator_is_recentred_down() -> None:
    led = Ledger()
    for k in range(4):  # failed work called good
        led.attested("ACCEPTED", "FAIL", subject=f"ed25519:s{k}")
    led.attested("ACCEPTED", "PASS")
    led.attested("FAILED_ADMITTED", "FAIL")  # one honest call
    led.attested("ACCEPTED", subject="ed25519:t")
    st = led.stats()
    # errors 1,1,1,1,0,0.15 -> d = 4.15/6; offset = 6 d / 11 = 4.15 / 11
    assert st.offset == pytest.approx(4.15 / 11)
    rs = resolve_all(led.evidence(), policy_v1(), {EVAL: st})
    [r] = [r for r in rs if r.rule == 3]
    assert r.value == pytest.approx(1 - 4.15 / 11)


def test_recentring_clamps_to_the_unit_interval() -> None:
    led = Ledger()
    for k in range(40):
        led.attested("ACCEPTED", "FAIL", subject=f"ed25519:s{k % 5}")
    led.attested("FAILED_DISCOVERED", "FAIL")
    led.attested("FAILED_DISCOVERED", subject="ed25519:t")
    st = led.stats()
    assert st.offset > 0
    rs = resolve_all(led.evidence(), policy_v1(), {EVAL: st})
    [r] = [r for r in rs if r.rule == 3]
    assert r.value == 0.0


def test_constant_rater_weighs_zero() -> None:
    led = Ledger()
    for k in range(10):
        led.attested("ACCEPTED", "PASS" if k < 5 else None, subject=f"ed25519:s{k % 3}")
    st = led.stats()
    assert st.constant and st.weight == 0.0
    assert st.n == 5 and st.verdicts == 10 and st.subjects == 3


@pytest.mark.parametrize(
    ("count", "subjects"),
    [(9, 3), (10, 2)],  # too few attestations; too few subjects
)
def test_constant_rater_needs_both_thresholds(count: int, subjects: int) -> None:
    led = Ledger()
    for k in range(count):
        led.attested("ACCEPTED", subject=f"ed25519:s{k % subjects}")
    st = led.stats()
    assert not st.constant and st.weight == 0.25


def test_declined_and_excluded_take_no_part() -> None:
    led = Ledger()
    for k in range(10):
        led.attested("ACCEPTED", subject=f"ed25519:s{k % 3}")
    led.attested("DECLINED", "FAIL")  # does not break the constant-rater rule
    bad = led.attested("FAILED_DISCOVERED", "FAIL")
    led.exclusions.append(Exclusion(bad, "self_dealing"))
    st = led.stats()
    assert st.constant and st.verdicts == 10 and st.n == 0


def test_agreement_with_other_evaluators_is_irrelevant() -> None:
    """Two evaluators agreeing on a wrong verdict earn nothing from agreeing."""
    led = Ledger()
    for ev in ("ed25519:e1", "ed25519:e2"):
        led.attested("ACCEPTED", "FAIL", evaluator=ev)
    table = evaluator_table(led.evidence(), policy_v1())
    for ev in ("ed25519:e1", "ed25519:e2"):
        assert table[ev].tn == 0 and table[ev].weight == pytest.approx((1 * 0 + 1.25) / 6)
