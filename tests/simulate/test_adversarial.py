"""The adversarial simulation against real bureaus, one per policy (each attack shares
it): under the default policy (v4) every goal holds, the thin-record rings of issue 31
included; under v1 the attacks move the scores exactly as issue 13 first measured them,
which shows the attacks are the issue's. Under every policy the distrust undoes the
fabricated facts and sealed reports stay as they were sealed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bureau import cli
from bureau.scoring.policy import DEFAULT_POLICY_NAME, KNOWN_POLICIES, policy_named
from bureau.simulate.adversarial import ATTACKS, PolicyRun, play, render_runs
from bureau.simulate.driver import Target
from tests.copy import assert_plain
from tests.scoring.attacks import Scenario, fabricated_failures, honest, run
from tests.support import fresh_database, start_bureau

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
async def runs(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory
               ) -> dict[str, PolicyRun]:
    """Every attack, on one bureau per policy the bureau knows."""
    out = {}
    for policy in sorted(KNOWN_POLICIES):
        started = time.monotonic()
        async with fresh_database(pg_server_url, "bureau_adversarial_") as url, \
                start_bureau(url, tmp_path_factory.mktemp("adversarial"), epoch_seconds=2,
                             seal_interval=0.2, policy=policy) as bureau:
            run = await play(Target(bureau.url, bureau.admin))
        assert_plain(render_runs([run]))
        print(f"\n{render_runs([run])}\n(bureau and run: {time.monotonic() - started:.1f} s)")
        assert run.policy == policy
        out[policy] = run
    return out


@pytest.fixture(params=sorted(KNOWN_POLICIES))
def policy_run(request: pytest.FixtureRequest, runs: dict[str, PolicyRun]) -> PolicyRun:
    return runs[request.param]


def test_every_goal_holds_under_the_default_policy(runs: dict[str, PolicyRun]) -> None:
    run = runs[DEFAULT_POLICY_NAME]
    missed = [f"{r.attack.name}: {r.baseline:.3f} -> {r.attacked:.3f}"
              for r in run.rows if not r.held]
    assert not missed, render_runs([run])


def test_v1_moves_as_the_issue_first_measured(runs: dict[str, PolicyRun]) -> None:
    measured = {r.attack.name: (round(r.baseline, 3), round(r.attacked, 3))
                for r in runs["v1"].rows if r.attack.v1 is not None}
    expected = {a.name: a.v1 for a in ATTACKS if a.v1 is not None}
    assert measured == expected
    assert len(expected) >= 12  # every attack the issue gave a v1 figure for


def test_distrust_undoes_fabricated_failures_under_every_policy(
        policy_run: PolicyRun) -> None:
    """Before the distrust the lies count as the in-memory scenario says they do under
    that policy (v1-v3: 0.344 and 0.098, issue 13's figures); after it, nothing."""
    policy = policy_named(policy_run.policy)
    for n in (20, 100):
        _, fabricated = run(Scenario("lie", honest, fabricated_failures(n, False), 0), policy)
        row = policy_run.row(f"reporter fabricates {n} fails, distrusted")
        assert row.before_later is not None
        assert round(row.before_later, 3) == round(fabricated, 3)
        assert row.held, (row.baseline, row.attacked)
    assert policy_run.sealed_reports_unchanged


def test_the_thin_record_rings_are_what_v1_to_v3_did_not_hold(
        runs: dict[str, PolicyRun]) -> None:
    """Issue 31: under v3 a ring moved a 2-check bluffer by about +0.15 (the bound 0.10);
    under v4 none of the thin-record rings moves its target past its category's bound."""
    thin = [r for r in runs["v3"].rows if r.attack.name.startswith("thin record")]
    assert len(thin) == 12 and not any(r.held for r in thin)
    assert round(runs["v3"].row("thin record (2), checks ring up").change, 2) == 0.15
    assert all(r.held for r in runs["v4"].rows if r.attack.name.startswith("thin record"))


def test_no_self_erasure_under_any_policy(policy_run: PolicyRun) -> None:
    row = policy_run.row("self-erasure by amendment")
    assert row.attacked == row.baseline < 0.917  # the criticism stands, whole


def test_the_whitewashed_key_ranks_below_a_long_record(policy_run: PolicyRun) -> None:
    assert policy_run.row("whitewash: new key, 3 sybils").held


def test_the_run_is_not_slow(policy_run: PolicyRun) -> None:
    """All attacks share one bureau: two epochs of 2 s plus the traffic."""
    assert policy_run.seconds < 120


def test_the_cli_flag_is_documented() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "simulation.md").read_text()
    assert "--adversarial" in text
    for attack in ATTACKS:
        assert attack.name in text, attack.name


def test_a_running_bureau_keeps_its_own_policy(capsys: pytest.CaptureFixture[str]) -> None:
    """``--policy`` chooses the in-process bureau's policy; with ``--url`` the ledger's
    own policy rules, so asking for another is an error (exit 2), before anything runs."""
    assert cli.main(["simulate", "--adversarial", "--url", "http://127.0.0.1:9",
                     "--policy", "v1"]) == 2
    assert "--policy is for the in-process bureau" in capsys.readouterr().err
