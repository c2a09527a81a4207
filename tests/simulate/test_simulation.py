"""The simulation at a small size against the real bureau, under each policy the bureau
knows: its findings must hold (honest agents above bluffers among them)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bureau.scoring.policy import KNOWN_POLICIES, policy_named
from bureau.simulate import Options, Target, findings, render, simulate
from bureau.simulate.render import as_json
from tests.copy import assert_plain
from tests.support import start_bureau

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("policy", sorted(KNOWN_POLICIES))
async def test_small_simulation_ranks_as_it_should(database_url: str, tmp_path: Path,
                                                   policy: str) -> None:
    started = time.monotonic()
    # v4 calibrates an evaluator once it is rated on 10 verdicts about 3 subjects that
    # four evaluators were rated on (docs/scoring.md "Policy v4"): with four agents that
    # takes more sessions than the other policies need to be judged (the seed: one
    # whose callers also abandon, retry and switch, which the assertions below need)
    sessions, seed = (250, 3) if policy_named(policy).evaluators.rates is not None else (150, 7)
    async with start_bureau(database_url, tmp_path, epoch_seconds=2,
                            seal_interval=0.2, policy=policy) as bureau:
        result = await simulate(Options(agents=4, interactions=sessions, epochs=2, seed=seed),
                                Target(bureau.url, bureau.admin))
    text = render(result)
    print(text)
    assert_plain(text)
    assert result.policy == policy
    assert all(findings(result).values()), text
    assert result.derived["RETRY_ACCEPTED"] > 0 and result.derived["SWITCHED_AGENT"] > 0
    assert result.derived["ABANDONED"] > 0
    assert all(r.report and not r.report.get("computed") for r in result.agents)
    assert time.monotonic() - started < 60
    doc = json.loads(json.dumps(as_json(result)))  # `bureau simulate --json`
    assert doc["findings"] == findings(result) and doc["policy"] == policy
    assert [a["report"] for a in doc["agents"]] == [r.report for r in result.agents]
    assert {e["name"] for e in doc["evaluators"]} == {e.member.name for e in result.evaluators}
