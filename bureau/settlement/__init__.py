"""The evaluators' pool, settled per epoch (SPEC §8.2). Pure code first:

* :mod:`~bureau.settlement.split` — largest remainder in integers: whole units that sum
  to the pool, ties by key id;
* :mod:`~bureau.settlement.earn` — what an evaluator earns, ``score = g · J``, over
  blind ground truth only, from the scoring library's own functions;
* :mod:`~bureau.settlement.document` — the allocation rows, their Merkle root (§8.1
  hashing), the public document and each evaluator's inclusion proof.

Then :mod:`~bureau.settlement.store`: the inputs of an epoch's settlement, read from
the entries up to its seal, and the signed document and rows the report builder writes
beside the epoch's checkpoint, through :mod:`bureau.storage.settlement` (the SQL).
docs/settlement.md describes the rule for people.
"""
