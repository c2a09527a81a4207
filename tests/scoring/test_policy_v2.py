"""Each mechanism of policy v2 (SPEC §7.1), on small ledgers worked out by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bureau.scoring import EpochScoring, ReportInputs, build_report_payload
from bureau.scoring.evaluators import evaluator_table
from bureau.scoring.inputs import Exclusion
from bureau.scoring.policy import (
    KNOWN_POLICIES,
    ConstantRater,
    PolarityConstantRater,
    Policy,
    policy_by_hash,
    policy_bytes,
    policy_hash,
    policy_v1,
    policy_v2,
)
from tests.scoring.attacks import TARGET, World, observed, report

E = "ed25519:evaluator"


def calibrated(w: World, e: str = E, n: int = 10) -> None:
    """``e`` right on n calls of a calibration agent, half passed, each probed after."""
    for i in range(n):
        f = w.call("ed25519:calibration", e)
        w.attest(e, f, "ACCEPTED" if i % 2 == 0 else "FAILED_DISCOVERED")
        w.probe(f, i % 2 == 0)


def test_v2_is_known_by_hash_and_its_numbers_are_the_documented_ones() -> None:
    p = policy_v2()
    assert policy_by_hash(policy_hash(KNOWN_POLICIES["v2"])) == (p, "v2")
    assert policy_hash(KNOWN_POLICIES["v1"]) != policy_hash(KNOWN_POLICIES["v2"])
    assert policy_bytes(KNOWN_POLICIES["v2"]).startswith(b'{"evaluators":')
    assert p.settling is not None
    assert (p.settling.per_evaluator_subject, p.settling.provisional_total) == (1, 1.0)
    ev = p.evaluators
    assert (ev.calibration_samples, ev.uninformative_min_samples) == (10, 3)
    assert (ev.grading, ev.offsets) == ("blind_probes", "per_polarity")
    assert isinstance(ev.constant_rater, PolarityConstantRater)
    assert (ev.constant_rater.min_verdicts, ev.constant_rater.min_subjects,
            ev.constant_rater.min_share) == (10, 2, 0.95)
    assert p.weights.spend_factor.min == 0.0
    assert isinstance(policy_v1().evaluators.constant_rater, ConstantRater)
    assert policy_v1().settling is None


def test_blind_grading_ignores_checks_and_probes_seen_before_the_verdict() -> None:
    w = World()
    for i in range(6):  # checked calls: the caller can read the check first
        w.attest(E, w.call(TARGET, E, check="PASS" if i % 2 else "FAIL"),
                 "ACCEPTED" if i % 2 else "FAILED_DISCOVERED")
    early = w.call(TARGET, E)
    w.probe(early, True)  # a probe recorded before the verdict grades nothing either
    w.attest(E, early, "ACCEPTED")
    late = w.call(TARGET, E)
    w.attest(E, late, "FAILED_DISCOVERED")
    w.probe(late, False)  # recorded after it: blind
    v1 = evaluator_table(w.evidence(), policy_v1())[E]
    v2 = evaluator_table(w.evidence(), policy_v2())[E]
    assert (v1.n, v2.n) == (8, 1)
    assert (v2.negatives, v2.tn) == (1, 1)
    assert v2.provisional and not v1.provisional


def test_provisional_verdicts_share_one_measurements_weight() -> None:
    """8 fresh callers, one ACCEPTED each on unchecked calls: 8 x 0.25 = 2.0, capped at
    C_prov = 1: p = (1 + 1) / (1 + 2) = 2/3."""
    w = World()
    for i in range(8):
        e = f"ed25519:fresh-{i}"
        w.attest(e, w.call(TARGET, e), "ACCEPTED")
    r = report(w, TARGET, policy_v2())
    assert r["score"]["weight"] == 1.0 and r["score"]["value"] == round(2 / 3, 6)
    assert r["provisional_share"] == 1 and r["ground_truth_share"] == 0
    v1 = report(w, TARGET, policy_v1())
    assert v1["score"]["weight"] == 2.0 and v1["provisional_share"] == 0


def test_one_evaluator_one_voice_per_subject() -> None:
    """A calibrated evaluator (10 blind verdicts, all right: TPR = TNR = 6/7, J = 5/7,
    w = (10·5/7 + 5·0.25) / 15) attests 4 calls of the target: each counts w/4."""
    w = World()
    calibrated(w)
    for _ in range(4):
        w.attest(E, w.call(TARGET, E), "ACCEPTED")
    weight = (10 * 5 / 7 + 1.25) / 15
    r = report(w, TARGET, policy_v2())
    assert r["score"]["weight"] == round(weight, 6)
    assert r["score"]["value"] == round((weight + 1) / (weight + 2), 6)
    assert r["score"]["interactions"] == 4 and r["provisional_share"] == 0


def test_uninformative_is_zero_and_passes_resolution_on() -> None:
    """Three blind verdicts, all wrong: J = clamp(1/5 + 1/2 - 1) = 0 -> w = 0 (v1:
    (0 + 1.25) / 8). Its verdict resolves nothing: the call falls to rule 6 and the
    ACCEPTED is listed under unscored."""
    w = World()
    for _ in range(3):
        f = w.call("ed25519:calibration", E)
        w.attest(E, f, "FAILED_DISCOVERED")
        w.probe(f, True)
    w.attest(E, w.call(TARGET, E, derived="SWITCHED_AGENT"), "ACCEPTED")
    v2, v1 = (evaluator_table(w.evidence(), p)[E] for p in (policy_v2(), policy_v1()))
    assert (v2.weight, v2.uninformative) == (0.0, True)
    assert v1.weight == 1.25 / 8
    r = report(w, TARGET, policy_v2())
    assert r["outcomes"]["SWITCHED_AGENT"] == 1 and r["outcomes"]["ACCEPTED"] == 0
    assert r["unscored"]["ACCEPTED"] == 1
    assert r["score"]["value"] == round((0.05 + 1) / 3, 6)


@pytest.mark.parametrize(("negatives", "constant"), [(1, True), (2, False)])
def test_polarity_constant_rater_counts_value_judgments(negatives: int, constant: bool) -> None:
    """20 verdicts over two subjects, 10 of them value judgments: 19 positive of 20 is
    95 %: constant (weight 0); 18 of 20 is not."""
    w = World()
    for i in range(10):
        w.attest(E, w.call(TARGET, E), "FAILED_ADMITTED" if i < negatives else
                 "ACCEPTED_AFTER_CORRECTIONS", 0 if i < negatives else 3)
        w.judge(E, w.call("ed25519:other", E, spent=10**6), "VALUE_OK")
    st = evaluator_table(w.evidence(), policy_v2())[E]
    assert (st.verdicts, st.subjects, st.constant) == (20, 2, constant)
    assert st.weight == (0.0 if constant else 0.25)
    v1 = evaluator_table(w.evidence(), policy_v1())[E]
    assert v1.verdicts == 10 and not v1.constant  # v1: attestations only, all one code


def test_constant_rule_spares_a_calibrated_evaluator() -> None:
    w = World()
    calibrated(w, n=10)
    for _ in range(40):
        w.attest(E, w.call(TARGET, E), "ACCEPTED")
    st = evaluator_table(w.evidence(), policy_v2())[E]
    assert not st.provisional and not st.constant and st.weight > 0.5


def test_recentring_per_polarity() -> None:
    """A harsh rater: 0.85 on 10 passed, 0 on 10 failed. d+ = -0.15 shrunk 10/15:
    offset+ = -0.1, offset- = 0. v1: d = -0.075 over 20, shrunk 20/25: -0.06 for all."""
    w = World()
    for i in range(20):
        f = w.call("ed25519:calibration", E)
        w.attest(E, f, "ACCEPTED_AFTER_CORRECTIONS" if i % 2 == 0 else "FAILED_DISCOVERED",
                 1 if i % 2 == 0 else 0)
        w.probe(f, i % 2 == 0)
    st = evaluator_table(w.evidence(), policy_v2())[E]
    assert st.offset_positive == pytest.approx(-0.1) and st.offset_negative == 0
    v1 = evaluator_table(w.evidence(), policy_v1())[E]
    assert v1.offset_positive == v1.offset_negative == pytest.approx(-0.06)
    w.attest(E, w.call(TARGET, E), "ACCEPTED_AFTER_CORRECTIONS", 1)
    w.attest(E, w.call(TARGET, E), "FAILED_DISCOVERED")
    r = report(w, TARGET, policy_v2())  # K = 1: both at w/2; values 0.95 and 0
    weight = st.weight
    assert r["score"]["value"] == round((weight / 2 * 0.95 + 1) / (weight + 2), 6)


def test_nothing_spent_weighs_nothing() -> None:
    w = World()
    w.judge(E, w.call(TARGET, E, spent=0), "VALUE_OK")
    w.judge(E, w.call(TARGET, E, spent=10**8), "VALUE_OK")  # s = log10(101) / 2
    v2 = report(w, TARGET, policy_v2())
    assert v2["unscored"]["VALUE_OK"] == 1 and v2["outcomes"]["VALUE_OK"] == 1
    v1 = report(w, TARGET, policy_v1())
    assert v1["outcomes"]["VALUE_OK"] == 2  # v1: spend factor at least 0.25
    assert policy_v2().spend_factor(0) == 0.0 and policy_v1().spend_factor(0) == 0.25


def _lying_reporter(w: World) -> str:
    """An honest call, then a rogue reporter's three failed checks about the target, one
    attested by a caller; returns the time the lies began."""
    w.call(TARGET, check="PASS")
    since = observed(w.seq + 1)
    for _ in range(3):
        w.call(TARGET, check="FAIL", reporter="ed25519:rogue", claimed=None)
    w.attest(E, w.facts[-1], "FAILED_DISCOVERED")
    return since


@pytest.mark.parametrize("policy", [policy_v1(), policy_v2()], ids=["v1", "v2"])
def test_distrust_sets_aside_facts_and_what_they_alone_witness(policy: Policy) -> None:
    w = World()
    since = _lying_reporter(w)
    assert report(w, TARGET, policy)["outcomes"]["FAILED_DISCOVERED"] == 3
    w.distrust("ed25519:rogue", since)
    r = report(w, TARGET, policy)
    assert r["excluded"]["distrusted"] == 4  # 3 facts and the attestation of one
    assert r["outcomes"]["FAILED_DISCOVERED"] == 0 and r["reliability"]["observed"] == 1
    assert r["score"]["value"] == round(2 / 3, 6)
    assert E not in evaluator_table(w.evidence(), policy)  # not in its record either


def test_distrust_catches_backdated_evidence_and_survives_reissue() -> None:
    """After the update that began the distrust, evidence is distrusted whatever its
    observed_at says; a re-issued registration with the same (or a later) T keeps that
    boundary; null lifts it."""
    w = World()
    w.call(TARGET, check="PASS", reporter="ed25519:rogue")  # before: trusted
    w.distrust("ed25519:rogue", "2030-01-01T00:00:00Z")  # T in the future
    w.call(TARGET, check="FAIL", reporter="ed25519:rogue")  # recorded after: distrusted
    assert report(w, TARGET, policy_v2())["excluded"]["distrusted"] == 1
    w.distrust("ed25519:rogue", "2031-01-01T00:00:00Z")  # re-issued: same run
    assert report(w, TARGET, policy_v2())["excluded"]["distrusted"] == 1
    w.distrust("ed25519:rogue", None)  # lifted
    r = report(w, TARGET, policy_v2())
    assert r["excluded"]["distrusted"] == 0 and r["reliability"]["observed"] == 2


def test_an_entry_set_aside_twice_counts_once_as_its_exclusion() -> None:
    w = World()
    since = _lying_reporter(w)
    w.distrust("ed25519:rogue", since)
    ev = replace(w.evidence(), exclusions=(Exclusion(w.facts[1].entry_id, "disputed"),))
    r = build_report_payload(ReportInputs(TARGET, ev, EpochScoring(
        1, w.seq, "00" * 32, policy_v2(), "-", evaluator_table(ev, policy_v2()))))
    assert r["excluded"] == {"self_dealing": 0, "disputed": 1, "distrusted": 3}
