"""Which policy scores an epoch (SPEC §7.1 "Policies are bound to epochs").

The policy that scores epoch ``E`` is the one named by the highest-seq ``policy`` entry
whose ``from_epoch <= E``, else the genesis entry's; a report for epoch ``E`` reads only
the entries up to its seal, so only ``policy`` entries with seq up to the seal count.
Admission refuses a ``policy`` entry for an epoch already sealed (``STALE_UPDATE``), so
a sealed epoch's policy never changes, and ``bureau rebuild`` scores each epoch under
its own.

The choice is a pure function of the entries (:func:`policy_for`); :func:`ledger_policies`
reads the few entries it needs. A ledger with no genesis entry (one seeded by hand, as
the seal benchmark does) is scored by :data:`~bureau.scoring.policy.DEFAULT_POLICY_NAME`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from bureau.evidence.entries import payload_of
from bureau.intake.clock import epoch_of
from bureau.kinds import GENESIS, POLICY
from bureau.scoring.policy import (
    DEFAULT_POLICY_NAME,
    KNOWN_POLICIES,
    Policy,
    policy_by_hash,
    policy_hash,
)
from bureau.storage import db
from bureau.storage.policies import PolicyEntries


@dataclass(frozen=True, slots=True)
class PolicyChoice:
    """An admitted ``policy`` entry: ``policy`` scores ``from_epoch`` and later."""

    seq: int
    policy: str
    from_epoch: int


@dataclass(frozen=True, slots=True)
class LedgerPolicies:
    """The genesis entry's policy and every ``policy`` entry, in seq order."""

    genesis: str
    choices: tuple[PolicyChoice, ...] = ()

    def policy_for(self, epoch: int, upto_seq: int | None = None) -> str:
        """The hash of the policy that scores ``epoch``, reading only the entries up to
        ``upto_seq`` (its seal's seq; None: every entry, for the current epoch)."""
        return policy_for(self.genesis, self.choices, epoch, upto_seq)


def policy_for(genesis: str, choices: Sequence[PolicyChoice], epoch: int,
               upto_seq: int | None) -> str:
    best: PolicyChoice | None = None
    for c in choices:
        if c.from_epoch <= epoch and (upto_seq is None or c.seq <= upto_seq) and (
                best is None or c.seq > best.seq):
            best = c
    return genesis if best is None else best.policy


#: the genesis and policy entries (their kinds from the kinds table)
_POLICY_ENTRIES = PolicyEntries(GENESIS.name, POLICY.name)


async def ledger_policies(conn: db.Connection) -> LedgerPolicies:
    """The ledger's genesis policy and its ``policy`` entries."""
    rows = await _POLICY_ENTRIES.rows(conn)
    genesis = policy_hash(KNOWN_POLICIES[DEFAULT_POLICY_NAME])
    choices: list[PolicyChoice] = []
    for r in rows:
        if r["kind"] == GENESIS.name:
            genesis = json.loads(r["entry"])["body"]["policy"]
        else:
            p = payload_of(r["entry"])
            choices.append(PolicyChoice(r["seq"], p["policy"], p["from_epoch"]))
    return LedgerPolicies(genesis, tuple(choices))


class EpochPolicy(NamedTuple):
    """The policy that scores an epoch, parsed, and its hash (what its reports name)."""

    policy: Policy
    hash: str


async def policy_of_epoch(conn: db.Connection, epoch: int,
                          upto_seq: int | None) -> EpochPolicy:
    """The policy that scores ``epoch`` (see :meth:`LedgerPolicies.policy_for`), parsed,
    and its hash. Admission only takes known policies, so the hash is always known."""
    digest = (await ledger_policies(conn)).policy_for(epoch, upto_seq)
    return EpochPolicy(policy_by_hash(digest)[0], digest)


async def current_policy(conn: db.Connection, now: dt.datetime, epoch_seconds: int) -> str:
    """The hash of the policy that scores the epoch ``now`` falls in (``GET /v1/policy``,
    ``/v1/bureau``): every entry so far counts."""
    return (await ledger_policies(conn)).policy_for(epoch_of(now, epoch_seconds))
