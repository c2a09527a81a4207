"""The ledger as a transparency log, the service's side (SPEC §8.1, docs/transparency.md):
the stored tree (:mod:`~bureau.transparency.tree`), the signed tree heads
(:mod:`~bureau.transparency.heads`), the witnesses (:mod:`~bureau.transparency.witnesses`)
and the task that publishes and pushes them (:mod:`~bureau.transparency.publisher`).
The formats and the hashing are :mod:`reporters.tlog`'s, shared with every client."""
