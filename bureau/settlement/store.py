"""The settlement's inputs, read from the ledger up to a seal (through
:mod:`bureau.storage.settlement`, which also keeps the signed document and its rows:
:func:`bureau.storage.epochs.store_epoch`) and decoded into scoring inputs.

Reading an epoch's inputs costs what can earn, not what the ledger holds: see
:class:`bureau.storage.settlement.SettlementInputs`.
"""

from __future__ import annotations

from bureau.evidence.entries import decode_entry
from bureau.kinds import ATTESTATION, REPORTER
from bureau.scoring.inputs import Attestation, Evidence, Exclusion, Fact, Probe, ReporterUpdate
from bureau.storage import db
from bureau.storage import settlement as stored

_INPUTS = stored.SettlementInputs(ATTESTATION.name, REPORTER.name)


async def epoch_inputs(conn: db.Connection, lo: int, hi: int) -> Evidence:
    """What :func:`bureau.settlement.earn.matched_blind` needs for the attestations with
    ``lo < seq <= hi``, as the entries up to ``hi`` say it: those that may earn, with
    their probes and facts, and every exclusion and reporter update."""
    facts: list[Fact] = []
    probes: list[Probe] = []
    atts: list[Attestation] = []
    for r in await _INPUTS.candidates(conn, lo, hi):
        x = _decode(r)
        if isinstance(x, Attestation):
            atts.append(x)
        elif isinstance(x, Probe):
            probes.append(x)
        elif isinstance(x, Fact):
            facts.append(x)
    exclusions = [Exclusion(target, reason)
                  for target, reason in await stored.exclusions(conn, hi)]
    updates = [x for r in await _INPUTS.reporter_entries(conn, hi)
               if isinstance(x := _decode(r), ReporterUpdate)]
    return Evidence(tuple(facts), tuple(probes), tuple(atts), (), tuple(exclusions),
                    tuple(updates))


def _decode(r: db.Row) -> object:
    return decode_entry(r, r["id"])
