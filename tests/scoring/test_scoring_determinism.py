"""Determinism: same evidence in any order -> identical canonical bytes (SPEC §1.4)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bureau.scoring.evaluators import evaluator_table
from bureau.scoring.grouping import split_by_agent
from bureau.scoring.inputs import (
    Engagement,
    Evidence,
    Exclusion,
    Probe,
    ValueJudgment,
)
from bureau.scoring.policy import policy_hash, policy_v1
from bureau.scoring.report import (
    EpochScoring,
    ReportInputs,
    build_explain_payload,
    build_report_payload,
)
from reporters.wire import canonical_json
from tests.scoring.builders import HEAD, REP, A, B, att, fact


def _mixed_evidence() -> Evidence:
    eng = Engagement(
        id="e1",
        arrangement="TIME_AND_MATERIALS",
        cap=10**9,
        spent=7_000_000,
        currency="USD",
        units=(("hour", 7),),
    )
    facts = [
        fact(
            i,
            subject=A if i % 2 else B,
            check=("PASS", "FAIL", None)[i % 3],
            latency_ms=i * 7,
            well_formed=i % 4 != 0,
            claimed=(None, "FAILURE")[i % 5 == 0],
        )
        for i in range(1, 30)
    ]
    facts += [
        fact(40, engagement=eng, caller="ed25519:buyer"),
        fact(41, engagement=replace(eng, concluded="COMPLETED"), caller="ed25519:buyer"),
    ]
    atts = [
        att(
            100 + i,
            i,
            ("ACCEPTED", "FAILED_DISCOVERED", "ACCEPTED_AFTER_CORRECTIONS")[i % 3],
            subject=A if i % 2 else B,
            corrections=2 if i % 3 == 2 else 0,
        )
        for i in range(1, 30)
    ]
    probes = [
        Probe(
            seq=200 + i,
            entry_id=f"p{i}",
            reporter=REP,
            interaction=f"i{i}",
            subject=A if i % 2 else B,
            probe="x",
            passed=i % 4 == 1,
        )
        for i in range(1, 12)
    ]
    vjs = [
        ValueJudgment(
            seq=300,
            entry_id="v300",
            evaluator="ed25519:buyer",
            reporter=REP,
            engagement="e1",
            subject=A,
            judgment="VALUE_OK",
            spent=7_000_000,
        )
    ]
    return Evidence(
        facts=tuple(facts),
        probes=tuple(probes),
        attestations=tuple(atts),
        value_judgments=tuple(vjs),
        exclusions=(Exclusion("a105", "disputed"),),
    )


def _all_bytes(ev: Evidence) -> bytes:
    policy = policy_v1()
    scoring = EpochScoring(1, 9, HEAD, policy, policy_hash(), evaluator_table(ev, policy))
    out = []
    for agent, mine in split_by_agent(ev).items():
        out.append(canonical_json(build_report_payload(ReportInputs(agent, mine, scoring))))
        out.append(canonical_json(build_explain_payload(ReportInputs(agent, mine, scoring))))
    return b"\n".join(out)


def _shuffled(ev: Evidence, rnd: random.Random) -> Evidence:
    def sh(xs: tuple[Any, ...]) -> tuple[Any, ...]:
        ys = list(xs)
        rnd.shuffle(ys)
        return tuple(ys)

    return Evidence(
        facts=sh(ev.facts),
        probes=sh(ev.probes),
        attestations=sh(ev.attestations),
        value_judgments=sh(ev.value_judgments),
        exclusions=sh(ev.exclusions),
    )


@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False))
def test_shuffled_input_gives_identical_bytes(rnd: random.Random) -> None:
    ev = _mixed_evidence()
    assert _all_bytes(_shuffled(ev, rnd)) == _all_bytes(ev)


def test_split_by_agent_matches_whole_ledger_scoring() -> None:
    ev = _mixed_evidence()
    policy = policy_v1()
    scoring = EpochScoring(1, 9, HEAD, policy, policy_hash(), evaluator_table(ev, policy))
    parts = split_by_agent(ev)
    assert set(parts) == {A, B}
    for agent, mine in parts.items():
        whole = build_report_payload(ReportInputs(agent, ev, scoring))
        part = build_report_payload(ReportInputs(agent, mine, scoring))
        assert canonical_json(whole) == canonical_json(part)
        assert all(f.subject == agent for f in mine.facts)
    assert parts[A].exclusions == (Exclusion("a105", "disputed"),)  # i5 is about A
    assert parts[B].exclusions == ()
