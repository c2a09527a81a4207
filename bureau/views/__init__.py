"""The seal and report-building path (SPEC §8): sealing elapsed epochs, deriving every
report incrementally (in report worker processes or in this one), signing and storing
them, and rebuilding every derived table from the entries. What readers ask beyond the
reports is :mod:`bureau.reads`."""
