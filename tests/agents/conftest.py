"""One bureau per test module for the agents tests.

Creating and dropping a database costs most of a second; these tests make dozens of
short scenarios, so each module shares one bureau on one fresh database. Every test
uses keys (and so agents, reporters, interactions) of its own, and every assertion on
stored rows filters by those keys or by entry ids, so tests cannot see each other.
"""

from __future__ import annotations

from tests.support import module_bureau

bureau = module_bureau("bureau_agents_")
