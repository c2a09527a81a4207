"""The accuracy benchmark's population and measurements (bureau/simulate/accuracy),
checked without a bureau; tests/bench runs the whole benchmark through one."""

from __future__ import annotations

from dataclasses import replace

from bureau.simulate.accuracy.measure import ceiling, figures, kendall_tau
from bureau.simulate.accuracy.population import Options, plan


def test_kendall_tau_counts_concordant_discordant_and_ties() -> None:
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [40, 30, 20, 10]) == -1.0
    # one discordant pair of six: (5 - 1) / 6
    assert abs(kendall_tau([1, 2, 3, 4], [1, 2, 4, 3]) - 4 / 6) < 1e-12
    # tau-b with a tie in x: 5 untied pairs, all concordant -> 5 / sqrt(5 * 6)
    assert abs(kendall_tau([1, 1, 2, 3], [1, 2, 3, 4]) - 5 / (5 * 6) ** 0.5) < 1e-12


def test_the_plan_is_seeded_and_spans_the_qualities_and_styles() -> None:
    o = Options(seed=7)
    a, b = plan(o), plan(o)
    assert a == b
    assert plan(replace(o, seed=8)).calls != a.calls
    qs = [s.quality for s in a.agents]
    assert len(qs) == 24 and qs[0] == 0.05 and qs[-1] == 0.95
    assert {s.style for s in a.agents} == {"bluff", "admit", "decline"}
    assert sum(s.admits for s in a.agents) == 12
    # pairs of one quality, one bluffing and one honest: the gap compares like with like
    for bluffer, admitter in zip(a.agents[::2], a.agents[1::2], strict=True):
        assert bluffer.quality == admitter.quality
        assert bluffer.style == "bluff" and admitter.admits
        # ... and the same draws: only what the agent claims differs
        mine = [(c.caller, c.right, c.check is None, c.probed) for c in a.calls
                if c.agent == bluffer.index]
        twin = [(c.caller, c.right, c.check is None, c.probed) for c in a.calls
                if c.agent == admitter.index]
        assert mine[:40] == twin[:40]
    honest = [c for c in a.callers if c.role == "honest"]
    assert [c.manner for c in honest].count("harsh") == 2
    assert [c.manner for c in honest].count("generous") == 2


def test_the_same_calls_are_drawn_at_every_coverage() -> None:
    """Common random numbers: only the checks differ between coverages, so the curve
    against coverage is not sampling noise."""
    low, high = plan(Options(coverage=0.0)), plan(Options(coverage=0.6))
    assert [(c.agent, c.caller, c.right, c.claimed) for c in low.calls] == \
        [(c.agent, c.caller, c.right, c.claimed) for c in high.calls]
    assert not any(c.check for c in low.calls)
    checked = sum(c.check is not None for c in high.calls) / len(high.calls)
    assert 0.5 < checked < 0.7


def test_the_sybil_ring_rates_the_worst_agents_accepted() -> None:
    p = plan(Options())
    ring = [c for c in p.calls if c.caller and c.caller.startswith("sybil-up")]
    assert {c.agent for c in ring} == set(range(6))
    assert {c.verdict for c in ring if c.attempted and c.claimed == "SUCCESS"} == {
        ("ACCEPTED", 0)}
    assert not [c for c in plan(Options(attacks=False)).calls if c.caller and
                not c.caller.startswith("caller-")]


def test_the_honesty_gap_is_admitters_bias_minus_bluffers() -> None:
    p = plan(Options(agents=8, calls=4))
    truth = [a.quality for a in p.agents]
    # admitters scored 0.1 below truth, bluffers exact: gap -0.1
    est = [(q - 0.1 if a.admits else q, 0.0, 1.0) for q, a in zip(truth, p.agents,
                                                                  strict=True)]
    f = figures(p, est, None)
    assert abs(f.gap + 0.1) < 1e-9 and f.covered == 1.0 and f.null == 0
    f = figures(p, [None] * 8, None)
    assert f.null == 8 and f.tau == 0.0


def test_the_ceiling_is_the_tau_of_the_realised_share() -> None:
    p = plan(Options(calls=2000, attacks=False))
    assert ceiling(p) > 0.95  # with enough calls the realised share orders by q
    assert ceiling(plan(Options(calls=5, attacks=False))) < ceiling(p)
