"""``reporters.tlog``: the ledger as a transparency log (SPEC §8.1), shared by the bureau
and its clients. Pure code, one idea a module:

* :mod:`~reporters.tlog.merkle` — RFC 6962 hashing, complete nodes, the :class:`Frontier`
  an appender keeps, roots;
* :mod:`~reporters.tlog.proofs` — inclusion and consistency proofs from stored nodes
  (plan the nodes, fetch them in one query, compute);
* :mod:`~reporters.tlog.verify` — RFC 9162 proof verification;
* :mod:`~reporters.tlog.note` — C2SP signed notes, vkeys, cosignature/v1;
* :mod:`~reporters.tlog.checkpoint` — C2SP checkpoints, the default origin, witness
  thresholds;
* :mod:`~reporters.tlog.witness` — the log's side of C2SP tlog-witness;
* :mod:`~reporters.tlog.evidence` — evidence roots of agents' files.

Failures raise :class:`~reporters.tlog.errors.TlogError`. Clients use the checked,
JSON-level functions exported by :mod:`reporters` instead (``verify_note``, …).
docs/transparency.md describes the formats.
"""
