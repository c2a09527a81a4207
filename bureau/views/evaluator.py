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

import asyncpg

from bureau.errors import Code
from bureau.scoring.evaluators import default_weighing, evaluator_table
from bureau.views.evidence import load_evidence
from bureau.views.policies import policy_of_epoch

_EPOCH_ZERO = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


async def evaluator_record(conn: asyncpg.Connection, agent: str, epoch: int | None,
                           epoch_seconds: int) -> dict[str, Any] | None:
    """The record as of ``epoch`` (default: the latest epoch with complete reports), or
    None when that epoch (or, by default, any epoch) is not sealed yet."""
    row = await conn.fetchrow(
        "SELECT s.epoch, s.last_seq, s.head FROM seals s JOIN checkpoints c USING (epoch)"
        " WHERE ($1::bigint IS NULL OR s.epoch = $1) ORDER BY s.epoch DESC LIMIT 1", epoch)
    if row is None:
        return None
    policy, digest = await policy_of_epoch(conn, row["epoch"], row["last_seq"])
    evidence = (await load_evidence(conn, row["last_seq"])).evidence()
    stats = evaluator_table(evidence, policy).get(agent)
    weight, _, _, provisional = default_weighing(policy) if stats is None else stats.weighing
    given = sum(1 for a in evidence.attestations if a.evaluator == agent) + sum(
        1 for v in evidence.value_judgments if v.evaluator == agent)
    end = _EPOCH_ZERO + dt.timedelta(seconds=(row["epoch"] + 1) * epoch_seconds)
    ignored = await conn.fetchval(
        "SELECT count(*) FROM refusals WHERE signer = $1 AND code = $2 AND refused_at < $3",
        agent, Code.DUPLICATE_VERDICT.value, end)
    return {
        "agent": agent,
        "epoch": row["epoch"],
        "ledger": {"seq": row["last_seq"], "head": row["head"]},
        "policy": digest,
        "weight": policy.round(weight),
        "provisional": provisional,
        "constant_rater": stats is not None and stats.constant,
        "verdicts_given": given,
        "verdicts_ignored": ignored,
    }
