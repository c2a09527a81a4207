"""Checking a settlement of the evaluators' pool (SPEC §8.2) with nothing but the bytes
and the bureau's key. Pure: no I/O, no clock. Failures raise :class:`VerificationError`.

1. :func:`verify_settlement` — the document ``GET /v1/settlements/{epoch}`` serves is
   signed by the bureau's key and adds up: ``paid + unpaid = pool``, each paid evaluator
   got at least one unit (so ``evaluators ≤ paid``), nobody paid means the empty root.
2. :func:`verify_share` — an evaluator's own answer (``GET
   /v1/agents/{agent}/settlement?epoch=E``) names its key, its units are at most what
   was paid, and its row, canonical JSON, is leaf ``leaf_index`` of the tree of
   ``evaluators`` leaves (the size from the *signed document*, never from the answer)
   whose root the document carries, by the RFC 9162 inclusion check of
   :mod:`reporters.tlog.verify`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reporters import wire
from reporters._internal.errors import VerificationError
from reporters._internal.verify import _verify_envelope
from reporters.tlog import verify as tlog_verify
from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import EMPTY_ROOT, leaf_hash

SETTLEMENT_TYPE = wire.payload_type("settlement")
MAX_POOL = 10**15
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _units(doc: Mapping[str, Any], name: str, high: int = MAX_POOL) -> int:
    value = doc.get(name)
    if type(value) is not int or not 0 <= value <= high:
        raise VerificationError("BAD_SETTLEMENT", f"/{name}",
                                f"{name} is a whole number from 0 to {high}")
    return value


def verify_settlement(envelope: Mapping[str, Any], bureau_key_id: str,
                      epoch: int | None = None) -> dict[str, Any]:
    """Check a bureau-signed settlement envelope (of ``epoch``, if given) and return its
    payload ``{"epoch", "pool", "paid", "unpaid", "evaluators", "root"}``: the steps and
    codes of :func:`reporters.verify_report` for the envelope, then ``BAD_SETTLEMENT``
    when its numbers do not add up."""
    # Under the one key id given: a settlement names no ledger seq, so a key history
    # cannot say which key was in force for it (docs/settlement.md, "A gap to close").
    doc = _verify_envelope(envelope, bureau_key_id, SETTLEMENT_TYPE, "settlement",
                           lambda _: None)
    if set(doc) != {"epoch", "pool", "paid", "unpaid", "evaluators", "root"}:
        raise VerificationError("BAD_SETTLEMENT", "", "a settlement has exactly the fields "
                                "epoch, pool, paid, unpaid, evaluators and root")
    if epoch is not None and doc["epoch"] != epoch:
        raise VerificationError("BAD_SETTLEMENT", "/epoch",
                                f"the settlement is of epoch {doc['epoch']}, not {epoch}")
    pool = _units(doc, "pool")
    paid, unpaid = _units(doc, "paid"), _units(doc, "unpaid")
    if paid + unpaid != pool:
        raise VerificationError("BAD_SETTLEMENT", "/unpaid",
                                f"paid {paid} and unpaid {unpaid} do not sum to the pool {pool}")
    evaluators = _units(doc, "evaluators", paid)
    if (evaluators == 0) != (paid == 0):
        raise VerificationError("BAD_SETTLEMENT", "/evaluators",
                                "units are paid exactly when some evaluator is paid")
    root = doc["root"]
    if not isinstance(root, str) or not _HEX64.fullmatch(root):
        raise VerificationError("BAD_SETTLEMENT", "/root", "a root is 64 lowercase hex digits")
    if evaluators == 0 and bytes.fromhex(root) != EMPTY_ROOT:
        raise VerificationError("BAD_SETTLEMENT", "/root",
                                "with nobody paid the root is the empty tree's")
    return doc


def verify_share(answer: Mapping[str, Any], settlement: Mapping[str, Any],
                 evaluator: str) -> int:
    """Check an evaluator's own answer against a settlement :func:`verify_settlement`
    returned; return its units (0 when it has no row). ``BAD_PROOF`` when the row is not
    in the settlement's tree, ``BAD_SETTLEMENT`` when the answer is not its own or its
    units do not fit the pool."""
    if not isinstance(answer, Mapping) or answer.get("evaluator") != evaluator or answer.get(
            "epoch") != settlement["epoch"]:
        raise VerificationError("BAD_SETTLEMENT", "/evaluator",
                                f"the answer is not {evaluator}'s for epoch "
                                f"{settlement['epoch']}")
    row = answer.get("row")
    if row is None:
        if answer.get("units") != 0:
            raise VerificationError("BAD_SETTLEMENT", "/units",
                                    "an answer without a row pays nothing")
        return 0
    if not isinstance(row, Mapping) or set(row) != {"evaluator", "units", "score"} or row[
            "evaluator"] != evaluator or answer.get("units") != row["units"]:
        raise VerificationError("BAD_SETTLEMENT", "/row",
                                f"the row is {evaluator}'s: evaluator, units, score")
    units = _units(row, "units", settlement["paid"])
    if units < 1:
        raise VerificationError("BAD_SETTLEMENT", "/row/units", "a row pays at least 1 unit")
    index, hashes = answer.get("leaf_index"), answer.get("hashes")
    if type(index) is not int or not isinstance(hashes, list) or not all(
            isinstance(h, str) and _HEX64.fullmatch(h) for h in hashes):
        raise VerificationError("BAD_PROOF", "/hashes",
                                "a proof is a leaf index and lowercase hex hashes")
    try:
        leaf = leaf_hash(wire.canonical_json(dict(row)))
        # the size from the signed document: one leaf per evaluator paid
        tlog_verify.verify_inclusion(leaf, index, settlement["evaluators"],
                                     [bytes.fromhex(h) for h in hashes],
                                     bytes.fromhex(settlement["root"]))
    except (TlogError, wire.WireError, TypeError) as exc:
        raise VerificationError("BAD_PROOF", "/hashes",
                                f"the row is not in the settlement's tree: {exc}") from None
    return units
