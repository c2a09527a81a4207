"""The SPEC §8 report payload, the explanation, and determinism."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bureau.scoring.evaluators import EvaluatorStats, evaluator_table
from bureau.scoring.inputs import (
    EMPTY_EVIDENCE,
    Attestation,
    Engagement,
    Evidence,
    Exclusion,
    Probe,
    Promise,
    ValueJudgment,
)
from bureau.scoring.policy import policy_hash, policy_v1
from bureau.scoring.report import (
    EpochScoring,
    ReportInputs,
    build_explain_payload,
    build_report_payload,
    score_agent,
)
from bureau.scoring.score import NO_SCORED_EVIDENCE, NO_WEIGHTED_EVIDENCE, wilson_interval
from reporters.wire import canonical_json
from tests.scoring.builders import HEAD, REP, A, att, fact


def report(evidence: Evidence, agent: str = A) -> dict[str, Any]:
    policy = policy_v1()
    scoring = EpochScoring(3, 99, HEAD, policy, policy_hash(), evaluator_table(evidence, policy))
    return build_report_payload(ReportInputs(agent, evidence, scoring, name="Agent A"))


def explain(evidence: Evidence, table: dict[str, EvaluatorStats] | None = None,
            ) -> dict[str, Any]:
    """``A``'s explanation under v1 (``table``: the evaluators' over ``evidence``)."""
    policy = policy_v1()
    table = evaluator_table(evidence, policy) if table is None else table
    return build_explain_payload(ReportInputs(A, evidence, EpochScoring(
        3, 99, HEAD, policy, policy_hash(), table)))


def test_report_has_exactly_the_spec_shape() -> None:
    r = report(Evidence(facts=(fact(1, check="PASS", latency_ms=10, well_formed=True),)))
    assert set(r) == {
        "agent",
        "name",
        "epoch",
        "ledger",
        "policy",
        "score",
        "outcomes",
        "value_judgment_share",
        "reliability",
        "probes",
        "excluded",
        "unscored",
        "first_seen_epoch",
        "ground_truth_share",
        "provisional_share",
        "reporters",
        "links",  # r3: the agent's links in force at the seal
    }
    assert r["ledger"] == {"seq": 99, "head": HEAD}
    assert r["policy"] == policy_hash()
    assert set(r["score"]) == {"value", "low", "high", "weight", "interactions"}
    assert set(r["reliability"]) == {
        "observed",
        "answer_rate",
        "well_formed_rate",
        "latency_ms",
        "promises",
    }
    assert set(r["probes"]) == {"passed", "failed"}
    assert set(r["excluded"]) == {"self_dealing", "disputed", "distrusted"}
    assert set(r["unscored"]) == {"DECLINED", "CAP_REACHED", "TERMINATED"}
    assert "ACCEPTED_AFTER_CORRECTIONS" in r["outcomes"]
    canonical_json(r)  # serialisable


def test_no_caller_or_evaluator_is_named() -> None:
    ev = Evidence(facts=(fact(1), fact(2)), attestations=(att(3, 1, "ACCEPTED"),))
    text = canonical_json(report(ev)).decode()
    assert "caller" not in text and "evaluator" not in text


def test_wilson_interval_by_hand() -> None:
    # one check PASS: Σw = 1, Σwv = 1, p = (1 + 1) / (1 + 2) = 2/3; z² = 3.8416
    # centre = 2/3 + 3.8416/2 = 2.587467; half = 1.96 sqrt(2/9 + 3.8416/4) = 2.131469
    # low = (2.587467 - 2.131469) / 4.8416 = 0.094183; high = 4.718936 / 4.8416 = 0.974665
    r = report(Evidence(facts=(fact(1, check="PASS"),)))
    assert r["score"] == {
        "value": 0.666667,
        "low": 0.094183,
        "high": 0.974665,
        "weight": 1.0,
        "interactions": 1,
    }
    # three passes and a confident failure: p = (3 + 1) / (4 + 2); n = 4
    ev = Evidence(facts=(*(fact(i, check="PASS") for i in (1, 2, 3)), fact(4, check="FAIL")))
    assert report(ev)["score"] == {
        "value": 0.666667,
        "low": 0.245115,
        "high": 0.924919,
        "weight": 4.0,
        "interactions": 4,
    }
    low, high = wilson_interval(0.5, 1e9, 1.96)
    assert low == pytest.approx(0.5, abs=1e-4) and high == pytest.approx(0.5, abs=1e-4)


def test_score_null_with_no_evidence() -> None:
    r = report(EMPTY_EVIDENCE)
    assert r["score"] is None
    assert r["value_judgment_share"] == 0.0
    assert r["reliability"] == {
        "observed": 0,
        "answer_rate": None,
        "well_formed_rate": None,
        "latency_ms": {"p50": None, "p95": None},
        "promises": {},
    }
    assert set(r["outcomes"].values()) == {0}
    ex = explain(EMPTY_EVIDENCE, {})
    assert ex["score"] is None and ex["score_reason"] == NO_SCORED_EVIDENCE


def test_score_null_when_only_observed_or_declined() -> None:
    ev = Evidence(facts=(fact(1, latency_ms=5), fact(2, claimed="DECLINED")))
    r = report(ev)
    assert r["score"] is None
    assert r["unscored"]["DECLINED"] == 1
    assert r["reliability"]["observed"] == 2


def test_score_null_when_all_weight_is_zero() -> None:
    facts = tuple(fact(i, subject=f"ed25519:s{i % 3}", caller="ed25519:c") for i in range(1, 11))
    atts = tuple(
        Attestation(
            seq=100 + i,
            entry_id=f"a{i}",
            evaluator="ed25519:c",
            reporter=REP,
            interaction=f"i{i}",
            subject=f"ed25519:s{i % 3}",
            outcome="ACCEPTED",
            corrections=0,
        )
        for i in range(1, 11)
    )
    ev = Evidence(facts=facts, attestations=atts)
    table = evaluator_table(ev, policy_v1())
    assert table["ed25519:c"].weight == 0.0
    result = score_agent("ed25519:s1", ev, policy_v1(), table)
    assert result.score is None and result.score_reason == NO_WEIGHTED_EVIDENCE


def test_honest_failure_scores_above_confident_failure() -> None:
    honest = report(Evidence(facts=(fact(1, check="FAIL", claimed="FAILURE"),)))
    confident = report(Evidence(facts=(fact(1, check="FAIL", claimed="SUCCESS"),)))
    assert honest["score"]["value"] > confident["score"]["value"]
    assert honest["outcomes"]["FAILED_ADMITTED"] == 1
    assert confident["outcomes"]["FAILED_DISCOVERED"] == 1


def test_declining_leaves_the_score_unchanged() -> None:
    base = (fact(1, check="PASS"), fact(2, check="FAIL"), fact(3))
    before = report(Evidence(facts=base, attestations=(att(4, 3, "ACCEPTED"),)))
    after = report(
        Evidence(
            facts=(
                *base,
                fact(5, claimed="DECLINED"),
                fact(6, check="FAIL", claimed="DECLINED"),
                fact(7),
            ),
            attestations=(att(4, 3, "ACCEPTED"), att(8, 7, "DECLINED")),
        )
    )
    assert after["score"] == before["score"]
    assert after["unscored"]["DECLINED"] == 3


def test_value_judgment_share() -> None:
    eng = Engagement(
        id="e1", arrangement="TIME_AND_MATERIALS", cap=10**9, spent=99_000_000, currency="USD"
    )
    ev = Evidence(
        facts=(fact(1, check="PASS"), fact(2, engagement=eng, caller="ed25519:buyer")),
        value_judgments=(
            ValueJudgment(
                seq=3,
                entry_id="v3",
                evaluator="ed25519:buyer",
                reporter=REP,
                engagement="e1",
                subject=A,
                judgment="VALUE_OK",
                spent=99_000_000,
            ),
        ),
    )
    r = report(ev)
    vj_w = 0.5 * 0.25 * 1.0  # spend factor log10(100)/2 = 1
    assert r["value_judgment_share"] == round(vj_w / (1 + vj_w), 6)
    assert r["outcomes"]["VALUE_OK"] == 1
    assert r["score"]["weight"] == round(1 + vj_w, 6)


def test_reliability_and_probes() -> None:
    facts = tuple(
        fact(
            i,
            latency_ms=i * 10,
            well_formed=(i != 3) if i < 5 else None,
            answered=i != 4,
            promises=(Promise("p95-under-2s", i != 2), Promise("schema", True)),
        )
        for i in range(1, 11)
    )
    probes = (
        Probe(
            seq=20,
            entry_id="p20",
            reporter=REP,
            interaction="i1",
            subject=A,
            probe="x",
            passed=True,
        ),
        Probe(
            seq=21,
            entry_id="p21",
            reporter=REP,
            interaction="i2",
            subject=A,
            probe="x",
            passed=False,
        ),
    )
    rel = report(Evidence(facts=facts, probes=probes))
    answered = [10, 20, 30, 50, 60, 70, 80, 90, 100]  # fact 4 did not answer
    assert rel["reliability"] == {
        "observed": 10,
        "answer_rate": 0.9,
        "well_formed_rate": 0.75,  # 3 of the 4 facts that say
        "latency_ms": {
            "p50": answered[math.ceil(0.5 * 9) - 1],
            "p95": answered[math.ceil(0.95 * 9) - 1],
        },
        "promises": {"p95-under-2s": {"kept": 9, "broken": 1}, "schema": {"kept": 10, "broken": 0}},
    }
    assert rel["reliability"]["latency_ms"] == {"p50": 60, "p95": 100}
    assert rel["probes"] == {"passed": 1, "failed": 1}


def test_exclusions_honoured_and_counted() -> None:
    ev = Evidence(
        facts=(fact(1), fact(2, answered=False), fact(3)),
        attestations=(att(4, 1, "ACCEPTED"), att(5, 3, "FAILED_DISCOVERED")),
        exclusions=(
            Exclusion("a4", "self_dealing"),
            Exclusion("f2", "disputed"),
            Exclusion("a4", "disputed"),
            Exclusion("not-about-a", "disputed"),
        ),
    )
    r = report(ev)
    assert r["excluded"] == {"self_dealing": 1, "disputed": 1, "distrusted": 0}
    assert r["reliability"]["observed"] == 2
    assert r["outcomes"]["ACCEPTED"] == 0 and r["outcomes"]["NO_RESPONSE"] == 0
    assert r["outcomes"]["FAILED_DISCOVERED"] == 1
    ex = explain(ev)
    assert [(e["entry"], e["kind"], e["reason"]) for e in ex["excluded"]] == [
        ("f2", "fact", "disputed"),
        ("a4", "attestation", "self_dealing"),
    ]


def test_explain_rows_use_pseudonyms() -> None:
    ev = Evidence(
        facts=(fact(1), fact(2), fact(3), fact(4, check="PASS")),
        attestations=(
            att(7, 2, "ACCEPTED"),
            att(5, 1, "FAILED_ADMITTED"),
            att(6, 3, "ACCEPTED_AFTER_CORRECTIONS", corrections=2),
        ),
    )
    ex = explain(ev)
    rows = ex["interactions"]
    assert [(r["interaction"], r["outcome"], r["evaluator"]) for r in rows] == [
        ("i1", "FAILED_ADMITTED", "evaluator-1"),  # attested at seq 5: first seen
        ("i2", "ACCEPTED", "evaluator-3"),  # attested at seq 7
        ("i3", "ACCEPTED_AFTER_CORRECTIONS", "evaluator-2"),
        ("i4", "ACCEPTED", None),
    ]
    assert rows[2]["value"] == 0.7 and rows[2]["weight"] == 0.25 and rows[2]["offset"] == 0.0
    assert "ed25519:caller" not in canonical_json(ex).decode()


def test_first_seen_epoch_is_the_earliest_fact_or_probe() -> None:
    probe = Probe(seq=9, entry_id="p9", reporter=REP, interaction="p", subject=A,
                  probe="known", passed=True, epoch=2)
    ev = Evidence(facts=(fact(1, epoch=5), fact(2, epoch=3)), probes=(probe,))
    assert report(ev)["first_seen_epoch"] == 2
    assert report(Evidence(facts=(fact(1, epoch=5), fact(2, epoch=3))))["first_seen_epoch"] == 3
    assert report(EMPTY_EVIDENCE)["first_seen_epoch"] is None


def test_a_reporter_has_its_own_row_from_its_tenth_interaction() -> None:
    """SPEC §8 r2: ten interactions or more, a row of its own; fewer, the shared row."""
    ten = tuple(fact(i, reporter="ed25519:ten", check="PASS") for i in range(1, 11))
    nine = tuple(fact(i, reporter="ed25519:nine", check="FAIL") for i in range(11, 20))
    rows = report(Evidence(facts=ten + nine))["reporters"]
    assert rows == [
        {"reporter": "ed25519:ten", "interactions": 10, "scored": 10, "mean_value": 1.0},
        {"reporter": None, "interactions": 9, "scored": 9, "mean_value": 0.0},
    ]
    only_nine = report(Evidence(facts=nine))["reporters"]
    assert only_nine == [{"reporter": None, "interactions": 9, "scored": 9, "mean_value": 0.0}]
