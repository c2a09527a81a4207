"""``bureau simulate --adversarial``: every attack of the adversarial suite against a
live bureau, through its public interfaces, under each policy (docs/simulation.md).

* :mod:`.arena` — one bureau, its gateway, the parties; reports fetched and verified.
* :mod:`.attacks` — the attacks as data: what each does, what it is compared with, the
  goal the policy should meet.
* :mod:`.run` — every attack against one bureau, two seals; one bureau per policy.
* :mod:`.render` — the table, and the same as data (``--json``).
"""

from bureau.simulate.adversarial.attacks import ATTACKS, Attack, Goal
from bureau.simulate.adversarial.render import render_runs, runs_json
from bureau.simulate.adversarial.run import PolicyRun, Row, play, play_policies

__all__ = ["ATTACKS", "Attack", "Goal", "PolicyRun", "Row", "play", "play_policies",
           "render_runs", "runs_json"]
