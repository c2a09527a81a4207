"""The reference path: the definition of an epoch's reports, which the incremental
:class:`~bureau.views.derive.Deriver` must equal byte for byte
(``tests/views/test_derive_equivalence.py``, ``tests/views/test_policy_epochs.py``) and
``bureau rebuild``'s tests compare with what the builder stored
(``tests/views/test_rebuild.py``).

It is the scoring library over the whole ledger up to the seal, under the epoch's
policy (:func:`bureau.scoring.build_report_payload`), and each agent's whole file's root
by the very function an agent checks its report with
(:func:`reporters.tlog.evidence.evidence_root`). It costs the whole ledger at every
seal, so the service never runs it; the explanations (:mod:`bureau.reads.explain`) read
the same library the same way, one agent at a time.
"""

from __future__ import annotations

from typing import Any

from bureau.evidence.entries import LedgerEvidence, load_evidence
from bureau.evidence.policies import EpochPolicy, policy_of_epoch
from bureau.reads.files import load_files
from bureau.scoring import (
    EpochScoring,
    ReportInputs,
    build_report_payload,
    evaluator_table,
    split_by_agent,
)
from bureau.scoring.inputs import Evidence
from bureau.storage import db
from bureau.storage.reports import Seal
from reporters import wire
from reporters.tlog.evidence import evidence_root


def reference_payloads(ledger: LedgerEvidence, seal: Seal, scored_by: EpochPolicy, *,
                       files: dict[str, list[tuple[int, str]]],
                       ) -> list[tuple[str, dict[str, Any]]]:
    """The definition of an epoch's reports: the scoring library over the whole ledger
    up to the seal (``ledger``), under the epoch's policy, as ``bureau.scoring``
    documents, and the evidence root of each agent's whole file (``files``: (seq, entry
    id) in seq order), computed by the very function an agent checks its report with.
    The deriver must equal it."""
    evidence = ledger.evidence()
    policy, policy_hash = scored_by
    scoring = EpochScoring(seal.epoch, seal.last_seq, seal.head, policy, policy_hash,
                           evaluator_table(evidence, policy))
    split = split_by_agent(evidence)
    empty = Evidence(reporter_updates=evidence.reporter_updates)
    payloads = []
    for agent in ledger.agents():
        payload = build_report_payload(ReportInputs(
            agent, split.get(agent, empty), scoring, name=ledger.names.get(agent),
            links=ledger.links.get(agent, ())))
        # not scoring: what the agent's file is, so the agent can hold the two together
        payload["evidence"] = {"root": evidence_root(files.get(agent, ()),
                                                     seal.last_seq).hex()}
        payloads.append((agent, payload))
    return payloads


async def reference_reports(conn: db.Connection, seal: Seal) -> list[tuple[str, bytes]]:
    """An epoch's reports by the reference path, under the epoch's policy."""
    scored_by = await policy_of_epoch(conn, seal.epoch, seal.last_seq)
    ledger = await load_evidence(conn, seal.last_seq)
    files = await load_files(conn, seal.last_seq)
    return [(a, wire.canonical_json_fast(p))
            for a, p in reference_payloads(ledger, seal, scored_by, files=files)]
