"""The ledger read as scoring's inputs, one floor below everything that scores:
:mod:`~bureau.evidence.entries` (stored entries -> scoring inputs, a chunk of seqs at a
time) and :mod:`~bureau.evidence.policies` (which policy scores an epoch). The reads,
the settlement and the report views all stand on them."""
