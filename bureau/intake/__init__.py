"""Intake: an envelope from the socket to the ledger (SPEC §5–§6). ``pipeline`` strings
the stages together: ``envelope`` (1–3, pure), ``rules`` (4–5, pure, over ``records``),
``ledger`` (6: group commit, with ``state``, ``index`` and ``writes``)."""
