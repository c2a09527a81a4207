"""SPEC §7 rules 1-8: every interaction resolves to exactly one outcome code."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from bureau.scoring.inputs import (
    Attestation,
    Engagement,
    Evidence,
    Exclusion,
    Fact,
    Probe,
    ValueJudgment,
)
from bureau.scoring.outcomes import Resolution, resolve_all
from bureau.scoring.policy import policy_v1

AGENT = "ed25519:agent"
CALLER = "ed25519:caller"
REP = "ed25519:reporter"


def fact(seq: int = 1, interaction: str = "i1", **kw: object) -> Fact:
    base = Fact(
        seq=seq,
        entry_id=f"f{seq}",
        reporter=REP,
        interaction=interaction,
        subject=AGENT,
        caller=CALLER,
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def probe(seq: int, passed: bool, interaction: str = "i1", subject: str = AGENT) -> Probe:
    return Probe(
        seq=seq,
        entry_id=f"p{seq}",
        reporter=REP,
        interaction=interaction,
        subject=subject,
        probe="known-answer",
        passed=passed,
    )


def att(seq: int, outcome: str, corrections: int = 0, interaction: str = "i1") -> Attestation:
    return Attestation(
        seq=seq,
        entry_id=f"a{seq}",
        evaluator=CALLER,
        reporter=REP,
        interaction=interaction,
        subject=AGENT,
        outcome=outcome,
        corrections=corrections,
    )


def engagement(concluded: str | None = None, spent: int = 5_000_000) -> Engagement:
    return Engagement(
        id="eng-1",
        arrangement="TIME_AND_MATERIALS",
        cap=10**8,
        spent=spent,
        currency="USD",
        units=(("hour", 2),),
        concluded=concluded,
    )


def vj(seq: int, judgment: str, spent: int = 5_000_000) -> ValueJudgment:
    return ValueJudgment(
        seq=seq,
        entry_id=f"v{seq}",
        evaluator=CALLER,
        reporter=REP,
        engagement="eng-1",
        subject=AGENT,
        judgment=judgment,
        spent=spent,
    )


def only(evidence: Evidence) -> Resolution:
    [r] = resolve_all(evidence, policy_v1(), {})
    return r


DEFAULT_W = 0.25  # an evaluator with no ground-truth record

# (name, evidence, rule, code, value, weight); value None = unscored, weight < 0 = not checked
# here (see test_value_judgment_weight_is_half_times_spend_factor)
CASES: list[tuple[str, Evidence, int, str | None, float | None, float]] = [
    (
        "probe beats a FAIL check and the caller",
        Evidence(
            facts=(fact(check="FAIL"),),
            probes=(probe(2, True),),
            attestations=(att(3, "FAILED_DISCOVERED"),),
        ),
        1,
        "ACCEPTED",
        1.0,
        1.0,
    ),
    (
        "probe failed, agent admitted failure",
        Evidence(facts=(fact(claimed="FAILURE", check="PASS"),), probes=(probe(2, False),)),
        1,
        "FAILED_ADMITTED",
        0.15,
        1.0,
    ),
    (
        "probe failed, agent declined",
        Evidence(facts=(fact(claimed="DECLINED"),), probes=(probe(2, False),)),
        1,
        "DECLINED",
        None,
        0.0,
    ),
    (
        "probe failed, agent claimed success",
        Evidence(
            facts=(fact(claimed="SUCCESS"),),
            probes=(probe(2, False),),
            attestations=(att(3, "ACCEPTED"),),
        ),
        1,
        "FAILED_DISCOVERED",
        0.0,
        1.0,
    ),
    (
        "check PASS beats a negative attestation",
        Evidence(facts=(fact(check="PASS"),), attestations=(att(2, "FAILED_DISCOVERED"),)),
        1,
        "ACCEPTED",
        1.0,
        1.0,
    ),
    (
        "check FAIL with no claim is a confident failure",
        Evidence(facts=(fact(check="FAIL"),)),
        1,
        "FAILED_DISCOVERED",
        0.0,
        1.0,
    ),
    (
        "check FAIL, claimed FAILURE",
        Evidence(facts=(fact(check="FAIL", claimed="FAILURE"),)),
        1,
        "FAILED_ADMITTED",
        0.15,
        1.0,
    ),
    (
        "check FAIL, claimed DECLINED",
        Evidence(facts=(fact(check="FAIL", claimed="DECLINED"),)),
        1,
        "DECLINED",
        None,
        0.0,
    ),
    (
        "claimed DECLINED beats the caller",
        Evidence(facts=(fact(claimed="DECLINED"),), attestations=(att(2, "ACCEPTED"),)),
        2,
        "DECLINED",
        None,
        0.0,
    ),
    (
        "claimed FAILURE beats the caller",
        Evidence(facts=(fact(claimed="FAILURE"),), attestations=(att(2, "ACCEPTED"),)),
        2,
        "FAILED_ADMITTED",
        0.15,
        1.0,
    ),
    (
        "attestation beats derived and no answer",
        Evidence(
            facts=(fact(answered=False, derived="ABANDONED"),), attestations=(att(2, "ACCEPTED"),)
        ),
        3,
        "ACCEPTED",
        1.0,
        DEFAULT_W,
    ),
    (
        "attestation after two corrections",
        Evidence(facts=(fact(),), attestations=(att(2, "ACCEPTED_AFTER_CORRECTIONS", 2),)),
        3,
        "ACCEPTED_AFTER_CORRECTIONS",
        0.70,
        DEFAULT_W,
    ),
    (
        "attested honest failure",
        Evidence(facts=(fact(),), attestations=(att(2, "FAILED_ADMITTED"),)),
        3,
        "FAILED_ADMITTED",
        0.15,
        DEFAULT_W,
    ),
    (
        "attested DECLINED is unscored",
        Evidence(facts=(fact(derived="RETRY_ACCEPTED"),), attestations=(att(2, "DECLINED"),)),
        3,
        "DECLINED",
        None,
        0.0,
    ),
    (
        "value judgment beats a conclusion",
        Evidence(
            facts=(fact(engagement=engagement("TERMINATED"), derived="ABANDONED"),),
            value_judgments=(vj(2, "VALUE_POOR"),),
        ),
        4,
        "VALUE_POOR",
        0.0,
        -1.0,
    ),
    (
        "engagement capped is unscored",
        Evidence(facts=(fact(engagement=engagement("CAP_REACHED"), derived="RETRY_ACCEPTED"),)),
        5,
        "CAP_REACHED",
        None,
        0.0,
    ),
    (
        "engagement terminated is unscored",
        Evidence(facts=(fact(engagement=engagement("TERMINATED")),)),
        5,
        "TERMINATED",
        None,
        0.0,
    ),
    (
        "completed engagement falls through to derived",
        Evidence(facts=(fact(engagement=engagement("COMPLETED"), derived="RETRY_ACCEPTED"),)),
        6,
        "RETRY_ACCEPTED",
        0.70,
        1.0,
    ),
    (
        "derived beats no answer",
        Evidence(facts=(fact(answered=False, derived="SWITCHED_AGENT"),)),
        6,
        "SWITCHED_AGENT",
        0.05,
        1.0,
    ),
    ("derived ABANDONED", Evidence(facts=(fact(derived="ABANDONED"),)), 6, "ABANDONED", 0.05, 1.0),
    ("no answer", Evidence(facts=(fact(answered=False),)), 7, "NO_RESPONSE", 0.05, 1.0),
    ("observed only", Evidence(facts=(fact(claimed="SUCCESS", latency_ms=5),)), 8, None, None, 0.0),
]


@pytest.mark.parametrize(
    ("evidence", "rule", "code", "value", "weight"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_precedence(
    evidence: Evidence, rule: int, code: str | None, value: float | None, weight: float
) -> None:
    r = only(evidence)
    assert (r.rule, r.code) == (rule, code)
    assert r.scored is (value is not None)
    if value is None:
        assert r.value is None and r.weight == 0.0
    else:
        assert r.value == pytest.approx(value, abs=1e-12)
    if weight >= 0:
        assert r.weight == pytest.approx(weight, abs=1e-12)


def test_value_judgment_weight_is_half_times_spend_factor() -> None:
    spent = 5_000_000
    r = only(
        Evidence(
            facts=(fact(engagement=engagement(spent=spent)),),
            value_judgments=(vj(2, "VALUE_OK", spent),),
        )
    )
    s = math.log10(1 + 5) / 2  # 0.389076
    assert (r.code, r.value) == ("VALUE_OK", 1.0)
    assert r.weight == pytest.approx(0.5 * 0.25 * s, abs=1e-12)


def test_engagement_is_scored_once_as_its_latest_fact() -> None:
    e_open = engagement()
    facts = (
        fact(5, "step-3", engagement=replace(e_open, concluded="CAP_REACHED")),
        fact(1, "step-1", engagement=e_open, derived="ABANDONED"),
        fact(3, "step-2", engagement=e_open),
    )
    [r] = resolve_all(Evidence(facts=facts), policy_v1(), {})
    assert r.unit.fact is not None and r.unit.fact.seq == 5
    assert (r.rule, r.code, r.unit.engagement) == (5, "CAP_REACHED", "eng-1")


def test_engagement_attestation_on_the_latest_attested_fact_speaks() -> None:
    e = engagement()
    facts = (fact(1, "s1", engagement=e), fact(2, "s2", engagement=e), fact(3, "s3", engagement=e))
    atts = (att(10, "ACCEPTED", interaction="s2"), att(4, "FAILED_DISCOVERED", interaction="s1"))
    r = only(Evidence(facts=facts, attestations=atts))
    assert r.unit.attestation is not None and r.unit.attestation.seq == 10
    assert r.code == "ACCEPTED"


def test_first_attestation_on_an_interaction_stands() -> None:
    r = only(
        Evidence(facts=(fact(),), attestations=(att(9, "FAILED_DISCOVERED"), att(2, "ACCEPTED")))
    )
    assert r.code == "ACCEPTED"


def test_latest_probe_is_the_truth() -> None:
    r = only(Evidence(facts=(fact(),), probes=(probe(7, False), probe(3, True))))
    assert r.code == "FAILED_DISCOVERED"
    assert r.unit.probe is not None and r.unit.probe.seq == 7


def test_probe_only_interaction_belongs_to_the_probe_subject() -> None:
    r = only(Evidence(probes=(probe(4, True, interaction="probe-only"),)))
    assert (r.rule, r.code, r.unit.fact, r.unit.interaction) == (1, "ACCEPTED", None, "probe-only")


def test_probe_about_another_subject_does_not_decide_this_fact() -> None:
    rs = resolve_all(
        Evidence(facts=(fact(answered=False),), probes=(probe(2, True, subject="ed25519:other"),)),
        policy_v1(),
        {},
    )
    assert sorted((r.unit.key[3], r.code) for r in rs) == [
        (AGENT, "NO_RESPONSE"),
        ("ed25519:other", "ACCEPTED"),
    ]


@pytest.mark.parametrize(
    ("target", "rule", "code"),
    [
        ("p2", 1, "FAILED_DISCOVERED"),  # probe gone: the check decides
        ("a3", 1, "ACCEPTED"),  # attestation never mattered here
    ],
)
def test_excluded_probe(target: str, rule: int, code: str) -> None:
    ev = Evidence(
        facts=(fact(check="FAIL"),),
        probes=(probe(2, True),),
        attestations=(att(3, "ACCEPTED"),),
        exclusions=(Exclusion(target, "disputed"),),
    )
    r = only(ev)
    assert (r.rule, r.code) == (rule, code)


def test_excluded_attestation_counts_nowhere() -> None:
    ev = Evidence(
        facts=(fact(answered=False),),
        attestations=(att(2, "ACCEPTED"),),
        exclusions=(Exclusion("a2", "self_dealing"),),
    )
    r = only(ev)
    assert (r.rule, r.code, r.evaluator) == (7, "NO_RESPONSE", None)


def test_excluded_value_judgment_counts_nowhere() -> None:
    ev = Evidence(
        facts=(fact(engagement=engagement("TERMINATED")),),
        value_judgments=(vj(2, "VALUE_OK"),),
        exclusions=(Exclusion("v2", "disputed"),),
    )
    assert only(ev).code == "TERMINATED"


def test_excluded_fact_counts_nowhere() -> None:
    ev = Evidence(
        facts=(fact(answered=False),),
        attestations=(att(2, "ACCEPTED"),),
        exclusions=(Exclusion("f1", "disputed"),),
    )
    assert resolve_all(ev, policy_v1(), {}) == []
