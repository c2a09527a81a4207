"""What the simulation reads back: each agent's signed report, and — for the
evaluators, whom reports never name — their weights and offsets computed with
:mod:`bureau.scoring` from the ledger's own entries, under the policy the bureau scores
with (and, for comparison, under any other policy it knows).

The entries are read the way any party reads its file (SPEC §9: RFC 9421-signed
``GET /v1/agents/{agent}/entries``), signed with the simulated agents' own keys, so
this works against a bureau in another process (``--url``) as well as in this one.
Every attestation in the simulation is about one of its agents, so the union of their
files holds every attestation, fact and probe that an evaluator's record depends on.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
import nacl.signing

from bureau.evidence.entries import decode_entry
from bureau.scoring import (
    Attestation,
    EvaluatorStats,
    Evidence,
    Exclusion,
    Fact,
    Policy,
    Probe,
    ValueJudgment,
    evaluator_table,
    score_agent,
)
from reporters import BureauClientError, verify_report, wire
from reporters.httpsig import signed_get

PAGE = 1000


@dataclass(frozen=True)
class AgentFile:
    entries: list[dict[str, Any]]
    refusals: list[dict[str, Any]]


async def read_file(session: aiohttp.ClientSession, base_url: str,
                    key: nacl.signing.SigningKey) -> AgentFile:
    """Every entry about this agent and every refusal of what it signed, all pages."""
    agent = wire.signing_key_id(key)
    entries: list[dict[str, Any]] = []
    refusals: list[dict[str, Any]] = []
    after: int | None = 0
    refusals_after: int | None = 0
    while after is not None or refusals_after is not None:
        url = (f"{base_url}/v1/agents/{agent}/entries?after={after or 0}&limit={PAGE}"
               f"&refusals_after={refusals_after or 0}")
        async with signed_get(session, key, url) as resp:
            if resp.status != 200:
                raise RuntimeError(f"reading {agent}'s file: HTTP {resp.status} "
                                   f"{await resp.text()}")
            page = await resp.json()
        if after is not None:
            entries += page["entries"]
            after = page["next_after"]
        if refusals_after is not None:
            refusals += page["refusals"]
            refusals_after = page["next_refusals_after"]
    return AgentFile(entries, refusals)


def evidence_of(entries: Iterable[dict[str, Any]]) -> Evidence:
    """§9 entries (any order, repeats allowed) -> scoring inputs, by the bureau's own
    decoder (:func:`bureau.evidence.entries.decode_entry`)."""
    by_seq = {e["seq"]: e for e in entries}
    facts: list[Fact] = []
    probes: list[Probe] = []
    atts: list[Attestation] = []
    vjs: list[ValueJudgment] = []
    excl: list[Exclusion] = []
    for seq in sorted(by_seq):
        e = by_seq[seq]
        if "envelope" in e:
            signer = e["envelope"]["signatures"][0]["keyid"]
            raw = {"envelope": e["envelope"]}
        else:
            signer, raw = None, {"body": e.get("body")}
        # as the entries table holds it (the epoch does not matter to these scores)
        stored = {"seq": seq, "kind": e["kind"], "signer": signer, "epoch": 0,
                  "entry": json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()}
        item = decode_entry(stored, e["id"])
        for kind, bucket in ((Fact, facts), (Probe, probes), (Attestation, atts),
                             (ValueJudgment, vjs), (Exclusion, excl)):
            if isinstance(item, kind):
                bucket.append(item)  # type: ignore[arg-type]
    return Evidence(tuple(facts), tuple(probes), tuple(atts), tuple(vjs), tuple(excl))


def evaluators(evidence: Evidence, policy: Policy) -> dict[str, EvaluatorStats]:
    return evaluator_table(evidence, policy)


@dataclass(frozen=True)
class VerdictWeight:
    """How much the verdicts of some evaluators weigh in the scores, under one policy:
    ``theirs`` is the sum, over every agent's score, of the settled weights (SPEC §7.1,
    after the per-evaluator and provisional caps) of the interactions those evaluators'
    verdicts decided; ``total`` the sum of all settled weights."""

    theirs: float
    total: float

    @property
    def share(self) -> float:
        return self.theirs / self.total if self.total else 0.0


def verdict_weight(agents: Iterable[str], evidence: Evidence, policy: Policy,
                   evaluators_of_interest: set[str]) -> VerdictWeight:
    table = evaluator_table(evidence, policy)
    theirs = total = 0.0
    for agent in agents:
        result = score_agent(agent, evidence, policy, table)
        for r, weight in zip(result.resolutions, result.settled, strict=True):
            total += weight
            if r.evaluator in evaluators_of_interest:
                theirs += weight
    return VerdictWeight(theirs, total)


async def bureau_key(session: aiohttp.ClientSession, base_url: str) -> dict[str, Any]:
    async with session.get(base_url + "/v1/bureau") as resp:
        doc: dict[str, Any] = await resp.json()
    return doc


async def latest_report(session: aiohttp.ClientSession, base_url: str, agent: str,
                        bureau_kid: str) -> dict[str, Any] | None:
    """The agent's latest signed report, verified; None when the bureau has none
    (404, or no report route at all)."""
    async with session.get(f"{base_url}/v1/agents/{agent}/report") as resp:
        if resp.status == 404:
            return None
        resp.raise_for_status()
        envelope = json.loads(await resp.read())
    try:
        return verify_report(envelope, bureau_kid)
    except BureauClientError as exc:
        raise RuntimeError(f"the report for {agent} does not verify: {exc.code}") from exc


def computed_report(agent: str, evidence: Evidence, table: dict[str, EvaluatorStats],
                    policy: Policy) -> dict[str, Any]:
    """Fallback when the bureau serves no report: the score and outcome counts, by
    :func:`bureau.scoring.score_agent` over the same evidence."""
    result = score_agent(agent, evidence, policy, table)
    outcomes = Counter(r.code for r in result.resolutions if r.scored)
    return {"agent": agent, "epoch": None, "score": result.score,
            "outcomes": dict(sorted(outcomes.items())), "computed": True}
