"""One bureau per test module for the reads tests.

Every test reads the files of keys it created itself, so tests sharing a database
cannot see each other's entries.
"""

from __future__ import annotations

from tests.support import module_bureau

bureau = module_bureau("bureau_reads_")
