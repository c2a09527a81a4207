"""Each mechanism of policy v3 (docs/scoring.md "Policy v3"), on small ledgers worked
out by hand, and the attack scenarios of issue 13 held to v2's bounds under it."""

from __future__ import annotations

import pytest

from bureau.scoring.policy import (
    KNOWN_POLICIES,
    policy_by_hash,
    policy_hash,
    policy_v2,
    policy_v3,
)
from tests.scoring.attacks import (
    SCENARIOS,
    TARGET,
    Scenario,
    World,
    bluffer,
    honest,
    report,
    sybil_ring,
)
from tests.scoring.attacks import run as run_scenario
from tests.scoring.test_policy_v2 import calibrated

CALLER = "ed25519:caller"


def test_v3_is_known_by_hash_and_differs_from_v2_only_where_documented() -> None:
    p, v2 = policy_v3(), policy_v2()
    assert policy_by_hash(policy_hash(KNOWN_POLICIES["v3"])) == (p, "v3")
    assert len({policy_hash(d) for d in KNOWN_POLICIES.values()}) == len(KNOWN_POLICIES)
    assert p.weights.admission == "as_if_claimed_success"
    assert v2.weights.admission == "reporter"
    assert p.settling is not None and v2.settling is not None
    assert p.settling.per_evaluator_applies_to == "calibrated"
    assert v2.settling.per_evaluator_applies_to == "all"
    doc = dict(KNOWN_POLICIES["v3"])
    v2doc = dict(KNOWN_POLICIES["v2"])
    assert doc["outcomes"] == v2doc["outcomes"]  # the prices are v2's


def test_an_unchecked_admission_weighs_its_callers_verdict_at_the_admitted_value() -> None:
    w = World()
    f = w.call(TARGET, CALLER, claimed="FAILURE")
    w.attest(CALLER, f, "ACCEPTED")  # what the caller said does not lift the failure
    r3, r2 = report(w, TARGET, policy_v3()), report(w, TARGET, policy_v2())
    assert r2["score"]["weight"] == 1.0  # v2: a reporter's measurement
    assert r3["score"]["weight"] == 0.25  # v3: the (provisional) caller's weight
    assert r3["score"]["value"] == round((0.25 * 0.15 + 1) / 2.25, 6)
    assert r3["outcomes"]["FAILED_ADMITTED"] == 1 and r3["outcomes"]["ACCEPTED"] == 0
    assert r3["provisional_share"] == 1.0


def test_an_unattested_admission_counts_as_a_claimed_success_there_would() -> None:
    w = World()
    w.call(TARGET, CALLER, claimed="FAILURE")  # nobody judged it: observed, not scored
    assert report(w, TARGET, policy_v3())["score"] is None
    w.call(TARGET, CALLER, claimed="FAILURE", derived="SWITCHED_AGENT")
    r = report(w, TARGET, policy_v3())
    # the caller's switch would have scored a claimed success at weight 1: the admission
    # takes that weight, at its own (higher) value
    assert r["outcomes"]["FAILED_ADMITTED"] == 1 and r["outcomes"]["SWITCHED_AGENT"] == 0
    assert r["score"]["weight"] == 1.0
    assert r["score"]["value"] == round((0.15 + 1) / 3, 6)


def test_a_checked_admission_is_ground_truth_as_before() -> None:
    w = World()
    w.call(TARGET, CALLER, claimed="FAILURE", check="FAIL")
    r = report(w, TARGET, policy_v3())
    assert r["score"]["weight"] == 1.0 and r["ground_truth_share"] == 1.0


def _twins(claimed_failure: str) -> World:
    """Two agents of the same record: 6 right answers and 4 wrong of 10 calls, 2 of
    them checked (one right, one wrong), one truthful caller attesting every call."""
    w = World()
    for agent, claim in (("ed25519:bluffer", "SUCCESS"), ("ed25519:admitter",
                                                          claimed_failure)):
        for i in range(10):
            right = i < 6
            check = ("PASS" if right else "FAIL") if i in (0, 9) else None
            f = w.call(agent, CALLER, claimed="SUCCESS" if right else claim, check=check)
            w.attest(CALLER, f, "ACCEPTED" if right else
                     "FAILED_ADMITTED" if claim == "FAILURE" else "FAILED_DISCOVERED")
    return w


def test_honest_failure_beats_confident_failure_when_checks_are_sparse() -> None:
    w = _twins("FAILURE")
    v3 = {a: report(w, a, policy_v3())["score"]["value"]
          for a in ("ed25519:bluffer", "ed25519:admitter")}
    v2 = {a: report(w, a, policy_v2())["score"]["value"]
          for a in ("ed25519:bluffer", "ed25519:admitter")}
    assert v3["ed25519:admitter"] > v3["ed25519:bluffer"]
    # what v2 did: three unchecked admissions at weight 1 each sank the honest twin
    assert v2["ed25519:admitter"] < v2["ed25519:bluffer"]


def test_k_binds_only_calibrated_evaluators_under_v3() -> None:
    w = World()
    for _ in range(4):  # a provisional caller, four verdicts on one subject
        w.attest(CALLER, w.call(TARGET, CALLER), "ACCEPTED")
    r3, r2 = report(w, TARGET, policy_v3()), report(w, TARGET, policy_v2())
    assert r2["score"]["weight"] == 0.25  # v2: one voice, 4 x 0.25 x 1/4
    assert r3["score"]["weight"] == 1.0  # v3: each counts, the pool caps at C_prov
    e = "ed25519:calibrated"
    calibrated(w, e, 10)
    for _ in range(4):
        w.attest(e, w.call(TARGET, e), "ACCEPTED")
    r3 = report(w, TARGET, policy_v3())
    # the calibrated evaluator's four verdicts count as one (K = 1)
    assert r3["score"]["weight"] < 1.0 + 1.0


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_v3_holds_each_attack_to_v2s_bound(scenario: Scenario) -> None:
    baseline, attacked = run_scenario(scenario, policy_v3())
    assert abs(attacked - baseline) <= scenario.bound, (baseline, attacked)


@pytest.mark.parametrize("k", [1, 3, 6, 12, 30])
@pytest.mark.parametrize("outcome", ["ACCEPTED", "FAILED_DISCOVERED"])
def test_a_sybil_ring_of_any_size_moves_a_v3_score_at_most_010(k: int, outcome: str) -> None:
    target = bluffer if outcome == "ACCEPTED" else honest
    baseline, attacked = run_scenario(Scenario("ring", target, sybil_ring(k, outcome), 0.10),
                                      policy_v3())
    assert abs(attacked - baseline) <= 0.10
