"""The v1 policy document (SPEC §7) and the Policy parsed from it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from bureau.scoring.policy import (
    POLICY_V1_DOCUMENT,
    ConstantRater,
    Policy,
    policy_bytes,
    policy_document,
    policy_hash,
    policy_v1,
)
from reporters.wire import blake3_hex, canonical_json

SCORING = Path(__file__).resolve().parents[2] / "bureau" / "scoring"


@pytest.mark.parametrize(
    ("code", "value"),
    [
        ("ACCEPTED", 1.0),
        ("RETRY_ACCEPTED", 0.70),
        ("FAILED_ADMITTED", 0.15),
        ("NO_RESPONSE", 0.05),
        ("SWITCHED_AGENT", 0.05),
        ("ABANDONED", 0.05),
        ("FAILED_DISCOVERED", 0.0),
        ("VALUE_OK", 1.0),
        ("VALUE_POOR", 0.0),
    ],
)
def test_every_outcome_value(code: str, value: float) -> None:
    assert policy_v1().outcome_value(code) == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize(
    ("corrections", "value"), [(1, 0.85), (2, 0.70), (3, 0.55), (4, 0.40), (5, 0.40), (50, 0.40)]
)
def test_accepted_after_corrections(corrections: int, value: float) -> None:
    got = policy_v1().outcome_value("ACCEPTED_AFTER_CORRECTIONS", corrections)
    assert got == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("code", ["DECLINED", "CAP_REACHED", "TERMINATED"])
def test_unscored_codes(code: str) -> None:
    policy = policy_v1()
    assert policy.is_unscored(code)
    assert code not in policy.scored_codes


@pytest.mark.parametrize(
    ("spent", "factor"),
    [
        (0, 0.25),  # nothing spent: the floor
        (1_000_000, 0.25),  # one unit: log10(2)/2 = 0.1505 -> floor
        (9_000_000, 0.5),  # log10(10)/2
        (99_000_000, 1.0),  # log10(100)/2
        (10**12, 2.0),  # a million units: log10(1e6+1)/2 = 3.0 -> ceiling
        (10**30, 2.0),
    ],
)
def test_spend_factor_limits(spent: int, factor: float) -> None:
    assert policy_v1().spend_factor(spent) == pytest.approx(factor, abs=1e-12)


def test_constants_match_the_spec() -> None:
    p = policy_v1()
    assert p.version == "v1"
    assert p.weights.reporter == 1.0
    assert p.weights.value_judgment == 0.5
    assert p.weights.spend_factor.divisor == 10**6
    assert (p.evaluators.prior_samples, p.evaluators.prior_weight) == (5, 0.25)
    assert p.evaluators.default_weight == 0.25
    assert p.evaluators.polarity_threshold == 0.5
    cr = p.evaluators.constant_rater
    assert isinstance(cr, ConstantRater)
    assert (cr.min_attestations, cr.min_subjects) == (10, 3)
    assert (p.score.prior_observations, p.score.prior_value) == (2, 0.5)
    assert p.score.wilson_z == 1.96
    assert p.rounding.decimals == 6


def test_bytes_and_hash_are_canonical() -> None:
    raw = policy_bytes()
    assert raw == canonical_json(json.loads(raw))
    assert policy_hash() == blake3_hex(raw)
    assert len(policy_hash()) == 64
    assert Policy.from_document(json.loads(raw)) == policy_v1()


def test_document_is_not_shared_mutable_state() -> None:
    copy = policy_document()
    copy["version"] = "tampered"
    assert POLICY_V1_DOCUMENT["version"] == "v1"
    assert policy_hash() == blake3_hex(policy_bytes())


def test_unknown_policy_field_is_refused() -> None:
    doc = policy_document()
    doc["extra"] = 1
    with pytest.raises(ValueError):
        Policy.from_document(doc)


def test_a_changed_document_is_a_different_hash() -> None:
    doc = policy_document()
    doc["score"]["wilson_z"] = 2.58
    assert policy_hash(doc) != policy_hash()
    assert Policy.from_document(doc).score.wilson_z == 2.58


@pytest.mark.parametrize("module", ["outcomes.py", "evaluators.py", "report.py", "rates.py",
                                    "posterior.py"])
def test_scoring_code_has_no_policy_literals(module: str) -> None:
    """Constants live in the policy document, not scattered through the code."""
    tree = ast.parse((SCORING / module).read_text("utf-8"))
    floats = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, float)
    }
    assert floats <= {0.0, 1.0}, f"{module} has literal constants {floats}"
    ints = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    }
    # 0-8: rule numbers, indices, the +1/+2 of TPR/TNR, the 2n/4n² of Wilson, a cell's
    # midpoint (2i + 1)/2n; 50/95/100: the latency percentiles; 16: 2 ** 16 cached
    assert ints <= {*range(9), 16, 50, 95, 100}, f"{module} has literal constants {ints}"
