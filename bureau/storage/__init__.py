"""Where the ledger is kept: the only package that speaks to PostgreSQL.

Every SQL string and every use of asyncpg lives here, in stores by concern; the
layers above (intake, views, transparency, http) call their typed methods.
(docs/architecture.md, "Layers")
"""
