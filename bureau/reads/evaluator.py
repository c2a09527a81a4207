"""An agent's own record as an evaluator (SPEC §9 ``GET /v1/agents/{agent}/evaluator``).

What the bureau makes of its verdicts as of one sealed epoch, computed on demand by the
scoring library over the ledger up to that epoch's seal under the epoch's policy (the
same evaluator table its reports were weighed with): its weight, whether it is
provisional, whether the constant-rater rule holds it at zero, how many verdicts it gave
and how many later verdicts were refused as ``DUPLICATE_VERDICT`` (ignored).

Never ``n``, TPR, TNR or offsets: under blind grading they move exactly when a probe
covers one of its calls, so showing them would tell it which calls were covert probes.
A key the bureau has never seen as an evaluator gets the record of one: the default
weight, provisional whenever the policy has provisional evaluators, nothing given.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from bureau.errors import Code
from bureau.evidence.entries import load_evidence
from bureau.evidence.policies import policy_of_epoch
from bureau.scoring.evaluators import default_weighing, evaluator_table
from bureau.storage import db, files, reports

_EPOCH_ZERO = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


async def evaluator_record(conn: db.Connection, agent: str, epoch: int | None,
                           epoch_seconds: int) -> dict[str, Any] | None:
    """The record as of ``epoch`` (default: the latest epoch with complete reports), or
    None when that epoch (or, by default, any epoch) is not sealed yet."""
    seal = await reports.published_seal(conn, epoch)
    if seal is None:
        return None
    policy, digest = await policy_of_epoch(conn, seal.epoch, seal.last_seq)
    evidence = (await load_evidence(conn, seal.last_seq)).evidence()
    stats = evaluator_table(evidence, policy).get(agent)
    weighs = default_weighing(policy) if stats is None else stats.weighing
    weight, provisional = weighs.weight, weighs.provisional
    given = sum(1 for a in evidence.attestations if a.evaluator == agent) + sum(
        1 for v in evidence.value_judgments if v.evaluator == agent)
    end = _EPOCH_ZERO + dt.timedelta(seconds=(seal.epoch + 1) * epoch_seconds)
    ignored = await files.refusals_before(conn, agent, Code.DUPLICATE_VERDICT.value, end)
    return {
        "agent": agent,
        "epoch": seal.epoch,
        "ledger": {"seq": seal.last_seq, "head": seal.head},
        "policy": digest,
        "weight": policy.round(weight),
        "provisional": provisional,
        "constant_rater": stats is not None and stats.constant,
        "verdicts_given": given,
        "verdicts_ignored": ignored,
    }
