"""What readers ask of the ledger beyond the signed reports (SPEC §9): a party's own file
and its pages, explanations, an evaluator's record, the ranked list. Read-only; the
seal and report-building path is :mod:`bureau.views`."""
