"""``bureau simulate``: a live population driven through the reporting proxy and the
client library against a real bureau (docs/simulation.md).

* :mod:`.world` — tasks with known answers; agents (honest, bluffer, flaky, decliner)
  served over loopback HTTP; the evaluators' attestation policies.
* :mod:`.population` — who takes part and the seeded plan of sessions.
* :mod:`.driver` — the run: traffic through the proxy, probes, attestations, seals.
* :mod:`.ledger_view` — reading back reports and the evaluators' records.
* :mod:`.render` — the table and the findings; :mod:`.local` — a throwaway bureau.
"""

from bureau.simulate.driver import Options, Result, Target, simulate
from bureau.simulate.render import findings, render

__all__ = ["Options", "Result", "Target", "findings", "render", "simulate"]
