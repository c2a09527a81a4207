"""Policy v2 holds the attacks of issue 13 to its targets; v1 moves as the issue measured
(which shows the scenarios are the issue's attacks). The table is in docs/scoring.md."""

from __future__ import annotations

import pytest

from bureau.scoring.policy import policy_v1, policy_v2
from tests.scoring.attacks import (
    SCENARIOS,
    Scenario,
    bluffer,
    fabricated_failures,
    honest,
    honest_population,
    recentred,
    run,
    sybil_ring,
    whitewash,
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_v2_holds_the_attack_to_its_target(scenario: Scenario) -> None:
    baseline, attacked = run(scenario, policy_v2())
    assert abs(attacked - baseline) <= scenario.bound, (baseline, attacked)


@pytest.mark.parametrize("k", range(1, 13))
@pytest.mark.parametrize("outcome", ["ACCEPTED", "FAILED_DISCOVERED"])
def test_a_sybil_ring_of_any_size_up_to_12_moves_a_score_at_most_010(k: int,
                                                                    outcome: str) -> None:
    target = bluffer if outcome == "ACCEPTED" else honest
    baseline, attacked = run(Scenario("ring", target, sybil_ring(k, outcome), 0.10),
                             policy_v2())
    assert abs(attacked - baseline) <= 0.10


# The issue's v1 figures (its table), reproduced by the same scenarios.
V1_FIGURES = {
    "sybil ring up, k = 3": 0.413, "sybil ring up, k = 6": 0.569,
    "sybil ring up, k = 12": 0.718, "sybil ring down, k = 3": 0.587,
    "sybil ring down, k = 6": 0.431, "sybil ring down, k = 12": 0.282,
    "3 raters x 30, one subject": 0.681, "ring calibrated on checked calls": 0.594,
    "40 x VALUE_OK, spent 0": 0.170,
}


@pytest.mark.parametrize(("name", "figure"), V1_FIGURES.items())
def test_v1_moves_as_the_issue_measured(name: str, figure: float) -> None:
    [scenario] = [s for s in SCENARIOS if s.name == name]
    _, attacked = run(scenario, policy_v1())
    assert round(attacked, 3) == figure


@pytest.mark.parametrize(("n", "figure"), [(20, 0.344), (100, 0.098)])
def test_fabricated_failures_without_distrust_are_the_issues(n: int, figure: float) -> None:
    for policy in (policy_v1(), policy_v2()):
        _, attacked = run(Scenario("lie", honest, fabricated_failures(n, False), 0), policy)
        assert round(attacked, 3) == figure


def test_distrust_puts_the_victim_back_under_every_policy() -> None:
    for policy in (policy_v1(), policy_v2()):
        for n in (20, 100):
            baseline, attacked = run(
                Scenario("lie", honest, fabricated_failures(n, True), 0), policy)
            assert abs(attacked - baseline) <= 0.02


def test_whitewash_ranks_below_an_honest_long_record_by_low() -> None:
    fresh, old = whitewash(policy_v2())
    assert fresh["low"] < old["low"]
    # v1 already ranked it below by low, but its value came out on a par (0.886/0.887)
    fresh1, _ = whitewash(policy_v1())
    assert round(fresh1["value"], 3) == 0.886 and round(fresh1["low"], 3) == 0.509
    assert fresh["value"] < old["value"] - 0.2


def test_harsh_and_generous_raters_end_within_004_of_a_fair_one() -> None:
    r = recentred(policy_v2())
    assert abs(r["harsh"] - r["fair"]) <= 0.04
    assert abs(r["generous"] - r["fair"]) <= 0.04
    r1 = recentred(policy_v1())  # one offset over-corrects: the harsh gap was 0.046
    assert abs(r1["harsh"] - r1["fair"]) > 0.04


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_honest_population_still_ranks_honest_above_bluffers(seed: int) -> None:
    pop = honest_population(policy_v2(), seed)
    assert min(s["value"] for s in pop.honest) > max(s["value"] for s in pop.bluffers)
    assert min(s["low"] for s in pop.honest) > max(s["low"] for s in pop.bluffers)
    # honest callers keep weight, one voice per agent: each still counts for something
    assert all(w > 0.25 for w in pop.weights) and pop.evaluator_share > 0.05
