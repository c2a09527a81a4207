"""Settling one sealed epoch (SPEC §8.2), by the report builder: when the epoch's pool is
above zero, read its inputs, compute the allocation and sign the document with the
bureau key; the builder stores it with its rows in the transaction that stores the
epoch's checkpoint (:func:`bureau.storage.epochs.store_epoch`). A pure function of the
entries up to the seal and of the evaluators' records as of the seal (which the builder
has just brought there), so ``bureau rebuild`` writes the same bytes.
"""

from __future__ import annotations

import logging
import time

import nacl.signing

from bureau import metrics
from bureau.scoring.policy import Policy
from bureau.settlement.document import SETTLEMENT_TYPE, Allocation, allocate
from bureau.settlement.earn import Records, earnings, matched_blind
from bureau.settlement.store import epoch_inputs
from bureau.storage import db
from bureau.storage.epochs import SignedSettlement
from bureau.storage.reports import Seal
from bureau.storage.settlement import pool_of_epoch, previous_last_seq
from reporters import wire

log = logging.getLogger(__name__)


async def allocation_of(conn: db.Connection, seal: Seal, policy: Policy,
                        records: Records) -> Allocation | None:
    """The epoch's allocation, None when its pool is 0 (no settlement)."""
    pool = await pool_of_epoch(conn, seal.epoch, seal.last_seq)
    if pool == 0:
        return None
    lo = await previous_last_seq(conn, seal.epoch)
    evidence = await epoch_inputs(conn, lo, seal.last_seq)
    g = matched_blind(evidence, policy, lo, seal.last_seq)
    return allocate(seal.epoch, pool, earnings(g, records, policy))


async def sign_settlement(conn: db.Connection, key: nacl.signing.SigningKey, seal: Seal,
                          policy: Policy, records: Records) -> SignedSettlement | None:
    """The epoch's settlement, computed and signed, if it has a pool (None: it has none).
    """
    start = time.perf_counter()
    allocation = await allocation_of(conn, seal, policy, records)
    if allocation is None:
        return None
    envelope = wire.sign_envelope_bytes(key, SETTLEMENT_TYPE, allocation.payload_bytes())
    elapsed = time.perf_counter() - start
    metrics.SETTLEMENT_SECONDS.observe(elapsed)
    log.info("epoch %d: settled %d of %d units over %d evaluators in %.3f s", seal.epoch,
             allocation.paid, allocation.pool, len(allocation.rows), elapsed)
    return SignedSettlement(envelope, allocation.evaluators, allocation.rows)
