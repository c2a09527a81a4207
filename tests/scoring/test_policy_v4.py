"""Policy v4 (docs/scoring.md "Policy v4"): its posterior on small cases worked out by
hand — every mean and quantile a sum over the 24 cells' midpoints, written out here
apart from the library's code — its rates, the trust region as a property, and the
attack scenarios of issues 13 and 31 held to their bounds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bureau.scoring.evaluators import Weighing, evaluator_table
from bureau.scoring.policy import (
    KNOWN_POLICIES,
    Policy,
    policy_by_hash,
    policy_hash,
    policy_v3,
    policy_v4,
)
from bureau.scoring.posterior import observations, trust_region
from bureau.scoring.rates import Rated, caller_rates, prior_rates
from bureau.scoring.score import cap_terms, score_terms
from bureau.scoring.terms import NO_CALIBRATED_EVIDENCE, Term
from tests.scoring.attacks import SCENARIOS, TARGET, World, honest_population, report
from tests.scoring.attacks import run as run_scenario
from tests.scoring.thin_attacks import THIN, Thin
from tests.scoring.thin_attacks import run as run_thin

V4 = policy_v4()
CELLS = 24  # the v4 document's grid
MIDS = [(i + 0.5) / CELLS for i in range(CELLS)]
ADMITTED = 0.15  # v(FAILED_ADMITTED); v(ACCEPTED) = 1, v(FAILED_DISCOVERED) = 0


def mean(weights: list[float]) -> float:
    """The mean of a distribution whose mass in cell i is proportional to weights[i]."""
    return sum(m * w for m, w in zip(MIDS, weights, strict=True)) / sum(weights)


def quantile(weights: list[float], level: float) -> float:
    """The point below which ``level`` of the mass lies, linear within a cell."""
    total, below = sum(weights), 0.0
    for i, w in enumerate(weights):
        p = w / total
        if below + p >= level:
            return (i + (level - below) / p) / CELLS
        below += p
    return 1.0


def beta(a: float, b: float) -> list[float]:
    return [m ** (a - 1) * (1 - m) ** (b - 1) for m in MIDS]


def price(r: float, s: float) -> float:
    return s * r + ADMITTED * (1 - s)


TAIL = 1 - math.sqrt(1 - 0.05 / 2)  # each side of a 95 % interval, from two tails


def test_v4_is_known_by_hash_and_keeps_v3s_prices() -> None:
    assert policy_by_hash(policy_hash(KNOWN_POLICIES["v4"])) == (V4, "v4")
    assert V4.posterior is not None and V4.posterior.grid == CELLS
    assert len({policy_hash(d) for d in KNOWN_POLICIES.values()}) == len(KNOWN_POLICIES)
    assert dict(KNOWN_POLICIES["v4"])["outcomes"] == dict(KNOWN_POLICIES["v3"])["outcomes"]
    assert V4.posterior is not None and V4.evaluators.rates is not None
    assert policy_v3().posterior is None and policy_v3().evaluators.rates is None


def test_a_posterior_needs_its_parts() -> None:
    doc = {k: v for k, v in KNOWN_POLICIES["v4"].items() if k != "settling"}
    with pytest.raises(ValueError, match="settling"):
        Policy.from_document(doc)
    v3 = dict(KNOWN_POLICIES["v3"])
    with pytest.raises(ValueError, match="wilson_z"):  # a weighted mean needs its prior
        Policy.from_document({**v3, "score": {"prior_observations": 2, "prior_value": 0.5}})


# --------------------------------------------------------------------------- by hand


def test_one_passed_check() -> None:
    """r from one right call (Beta(1 + 1, 1)), s from one call not admitted (the prior
    Beta(2, 1), and one more: Beta(3, 1))."""
    w = World()
    w.call(TARGET, check="PASS")
    score = report(w, TARGET, V4)["score"]
    r, s = beta(2, 1), beta(3, 1)
    assert score["value"] == round(price(mean(r), mean(s)), 6)
    assert score["low"] == round(quantile(r, TAIL) * quantile(s, TAIL), 6)
    assert score["high"] == round(max(price(quantile(r, 1 - TAIL), x) for x in (
        quantile(s, TAIL), quantile(s, 1 - TAIL))), 6)
    assert (score["weight"], score["interactions"]) == (1.0, 1)


def test_an_admitted_failure_speaks_of_candour_only() -> None:
    """A checked admission: r keeps its prior (mean 1/2 on the grid), s is Beta(2, 2)."""
    w = World()
    w.call(TARGET, check="FAIL", claimed="FAILURE")
    value = report(w, TARGET, V4)["score"]["value"]
    assert value == round(price(0.5, mean(beta(2, 2))), 6)
    # honest failure beats confident failure: the same call claimed a success (the
    # candour prior's 2 is what makes this hold for the smallest records too)
    w = World()
    w.call(TARGET, check="FAIL")
    assert report(w, TARGET, V4)["score"]["value"] == round(
        price(mean(beta(1, 2)), mean(beta(3, 1))), 6) < value


def test_a_derived_outcome_is_a_fractional_observation_of_its_price() -> None:
    w = World()
    w.call(TARGET, derived="RETRY_ACCEPTED")  # 0.70: r^0.7 (1 - r)^0.3
    assert report(w, TARGET, V4)["score"]["value"] == round(
        price(mean(beta(1.7, 1.3)), mean(beta(3, 1))), 6)


def _terms(verdicts: int, positive: bool) -> list[Term]:
    return [(1.0, 1.0 if positive else 0.0, 3, 1, "ed25519:e", False)] * verdicts


def test_a_calibrated_verdict_enters_through_its_rates() -> None:
    """One positive verdict by an evaluator of rates (0.9, 0.2) and voice 1:
    r ∝ 0.9·r + 0.2·(1 − r); s from one call not admitted."""
    weighing = Weighing(1.0, 0.0, 0.0, False, 0.9, 0.2, 1.0)
    score = score_terms(_terms(1, True), V4, lambda _: weighing).score
    assert score is not None
    r = mean([0.9 * m + 0.2 * (1 - m) for m in MIDS])
    assert score["value"] == round(price(r, mean(beta(3, 1))), 6)


def test_a_voice_settles_an_evaluators_verdicts_about_one_subject() -> None:
    """Four negative verdicts from a voice of 2: each counts 1/2, 2 verdicts in all."""
    weighing = Weighing(1.0, 0.0, 0.0, False, 0.9, 0.2, 2.0)
    settled = cap_terms(_terms(4, False), V4, lambda _: weighing)
    assert [t[0] for t in settled] == [0.5] * 4
    score = score_terms(_terms(4, False), V4, lambda _: weighing).score
    assert score is not None and score["weight"] == 2.0
    r = mean([(0.1 * m + 0.8 * (1 - m)) ** 2 for m in MIDS])
    assert score["value"] == round(price(r, mean(beta(4, 1))), 6)


def test_the_trust_region_holds_a_ring_to_the_agents_own_checks() -> None:
    """10 failed checks: r's reporter posterior is Beta(1, 11); five calibrated liars
    with a full voice each pull r far up, and r stops at that posterior's 90 % point."""
    reporter: list[Term] = [(1.0, 0.0, 1, 10, None, False)]
    liars = [(1.0, 1.0, 3, 5, f"ed25519:liar-{i}", False) for i in range(5)]
    weighing = Weighing(1.0, 0.0, 0.0, False, 0.9, 0.1, 5.0)
    score = score_terms(reporter + liars, V4, lambda _: weighing).score
    assert score is not None
    high = quantile(beta(1, 11), 0.9)
    s = mean(beta(2 + 10 + 25, 1))
    assert score["value"] == round(price(high, s), 6)


def test_only_uncalibrated_voices_make_no_score() -> None:
    w = World()
    for i in range(3):
        e = f"ed25519:fresh-{i}"
        w.attest(e, w.call(TARGET, e), "ACCEPTED")
    scored = report(w, TARGET, V4)
    assert scored["score"] is None and scored["provisional_share"] == 0
    from bureau.scoring.report import score_agent
    assert score_agent(TARGET, w.evidence(), V4, evaluator_table(
        w.evidence(), V4)).score_reason == NO_CALIBRATED_EVIDENCE


# --------------------------------------------------------------------------- rates


def test_rates_from_probes_checks_and_admissions() -> None:
    """P = 6 right calls (5 called positive), N = 6 wrong (1 called positive) over 3
    subjects: 2 errors of 12, pooled (2 + 1) / (12 + 5); each side pulled to it by 4."""
    rates = caller_rates(Rated(6, 6, 5, 5, 3), V4)
    pooled = 3 / 17  # 0.8294 and 0.1706, read to one decimal (``rates.decimals``)
    assert rates.alpha == round(1 - (1 + 4 * pooled) / 10, 1) == 0.8
    assert rates.beta == round((1 + 4 * pooled) / 10, 1) == 0.2
    assert rates.calibrated and rates.voice == (12 - 10) / 8
    assert not caller_rates(Rated(6, 6, 5, 5, 2), V4).calibrated  # two subjects: narrow
    perfect = caller_rates(Rated(20, 20, 20, 20, 5), V4)
    assert (perfect.alpha, perfect.beta) == (0.9, 0.1)  # never more exact than the floor
    assert prior_rates(V4.evaluators.rates) == (0.8, 0.2)  # type: ignore[arg-type]


OTHERS = [f"ed25519:other-{i}" for i in range(3)]


def _established(w: World, subject: str) -> None:
    """Three more evaluators rated on ``subject`` (one checked call each, attested
    right): with the evaluator under test, the four that establish it."""
    for other in OTHERS:
        w.attest(other, w.call(subject, other, check="PASS"), "ACCEPTED")


def test_a_verdict_is_rated_against_a_witnessed_admission() -> None:
    w = World()
    e = "ed25519:e"
    for subject in ("ed25519:a", "ed25519:b"):
        f = w.call(subject, e, claimed="FAILURE")  # no check, no probe: an admission
        w.attest(e, f, "ACCEPTED")
        _established(w, subject)
    stats = evaluator_table(w.evidence(), V4)[e]
    assert (stats.rated, stats.rated_subjects) == (2, 2)
    assert stats.n == 0  # nothing blind: its informedness J (what the pool pays) is v3's


def test_a_subject_rates_only_once_established() -> None:
    """A decoy that only a ring calls rates nobody: three raters are not enough, the
    fourth establishes it, and every rated verdict about it counts from then on."""
    w = World()
    e = "ed25519:e"
    for i in range(12):
        f = w.call("ed25519:decoy", e, check="PASS" if i % 2 else "FAIL")
        w.attest(e, f, "ACCEPTED" if i % 2 else "FAILED_DISCOVERED")
    for other in OTHERS[:2]:
        w.attest(other, w.call("ed25519:decoy", other, check="PASS"), "ACCEPTED")
    assert evaluator_table(w.evidence(), V4)[e].rated == 0  # three raters
    w.attest(OTHERS[2], w.call("ed25519:decoy", OTHERS[2], check="PASS"), "ACCEPTED")
    assert evaluator_table(w.evidence(), V4)[e].rated == 12  # four


def test_the_settlements_informedness_is_blind_as_before() -> None:
    w = World()
    e = "ed25519:e"
    for i in range(12):
        f = w.call(f"ed25519:s{i % 3}", e, check="PASS" if i % 2 else "FAIL")
        w.attest(e, f, "ACCEPTED" if i % 2 else "FAILED_DISCOVERED")
        w.probe(f, i % 2 == 1)  # after the verdict, but the check was readable
    for i in range(3):
        _established(w, f"ed25519:s{i}")
    v3, v4 = evaluator_table(w.evidence(), policy_v3())[e], evaluator_table(
        w.evidence(), V4)[e]
    assert (v4.n, v4.tp, v4.tn, v4.informedness) == (v3.n, v3.tp, v3.tn, v3.informedness)
    assert v4.weight == 1.0 and not v4.provisional and v4.rated == 12


# --------------------------------------------------------------------------- property

reporter_terms = st.lists(st.tuples(
    st.sampled_from([(1, 1.0), (1, 0.0), (1, ADMITTED), (6, 0.7), (6, 0.05), (7, 0.05)]),
    st.integers(1, 5)), max_size=6)
verdict_terms = st.lists(st.tuples(
    st.integers(0, 5), st.booleans(), st.integers(1, 9)), min_size=1, max_size=8)
evaluator_rates = st.lists(st.tuples(st.floats(0.5, 0.9), st.floats(0.1, 0.5),
                                     st.floats(0, 5), st.booleans()), min_size=6, max_size=6)


@settings(max_examples=300, deadline=None)
@given(reporter_terms, verdict_terms, evaluator_rates)
def test_a_verdict_never_moves_a_score_outside_the_trust_region(
        reporter: list[tuple[tuple[int, float], int]],
        verdicts: list[tuple[int, bool, int]],
        rates: list[tuple[float, float, float, bool]]) -> None:
    """Whatever verdicts are added — any evaluators, any rates, voices and numbers, the
    provisional pool's too — the value stays within the price at the two ends of the
    trust region that the agent's reporter evidence alone gives."""
    weighings = {f"e{i}": Weighing(1.0 if not prov else 0.25, 0.0, 0.0, prov, a, b, v)
                 for i, (a, b, v, prov) in enumerate(rates)}
    base: list[Term] = [(1.0, value, rule, n, None, False) for (rule, value), n in reporter]
    added: list[Term] = [(weighings[f"e{e}"].weight, 1.0 if up else 0.0, 3, n, f"e{e}",
                          weighings[f"e{e}"].provisional) for e, up, n in verdicts]
    score = score_terms(base + added, V4, weighings.__getitem__).score
    if score is None:
        return
    settled = cap_terms(base + added, V4, weighings.__getitem__)
    model = V4.posterior
    assert model is not None
    alone = observations(base, V4, weighings.__getitem__)
    low, high = trust_region(alone, model)
    assert trust_region(observations(settled, V4, weighings.__getitem__), model) == (low, high)
    s = mean(beta(2 + sum(t[0] * t[3] for t in settled if not _admitted(t)),
                  1 + sum(t[0] * t[3] for t in settled if _admitted(t))))
    assert round(price(low, s), 6) - 1e-6 <= score["value"] <= round(price(high, s), 6) + 1e-6


def _admitted(t: Term) -> bool:
    return t[2] in (1, 2) and t[1] == ADMITTED


# --------------------------------------------------------------------------- attacks


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_v4_holds_each_attack_to_its_bound(scenario: object) -> None:
    baseline, attacked = run_scenario(scenario, V4)  # type: ignore[arg-type]
    assert abs(attacked - baseline) <= scenario.bound, (baseline, attacked)  # type: ignore[attr-defined]


@pytest.mark.parametrize("thin", THIN, ids=[t.name for t in THIN])
def test_v4_holds_a_calibrated_ring_against_a_thin_record(thin: Thin) -> None:
    baseline, attacked = run_thin(thin, V4)
    assert abs(attacked - baseline) <= thin.bound, (baseline, attacked)


@pytest.mark.parametrize("thin", [t for t in THIN if t.checks == 2 and t.up],
                         ids=lambda t: t.name)
def test_v3_did_not_hold_the_thin_record_rings(thin: Thin) -> None:
    """What the issue found: v3's provisional pool lets a ring calibrated on one decoy
    move a 2-check bluffer past the checks ring's bound (one voice against two checks)."""
    baseline, attacked = run_thin(thin, policy_v3(), size=(10, 1))
    assert attacked - baseline > 0.10


def test_honest_agents_rank_above_bluffers_under_v4() -> None:
    for seed in (1, 2, 3):
        pop = honest_population(V4, seed)
        assert min(s["value"] for s in pop.honest) > max(s["value"] for s in pop.bluffers)
        assert min(s["low"] for s in pop.honest) > max(s["low"] for s in pop.bluffers)
