"""Every table derived from the entries, as ``bureau rebuild`` sees them: what is kept
of them while they are rebuilt (a copy, ``old_<table>``, dropped at commit), emptied,
and compared row by row with what the entries give again."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bureau.storage import db, public_rows

INDEX_TABLES = ("reporters", "facts", "probes", "agents", "verdicts", "exclusions",
                "disputes", "resolutions", "policies", "pools", "ledger_keys")
DERIVED_TABLES = (*INDEX_TABLES, "tree_nodes", "seals", "reports", "checkpoints",
                  "cards", "settlements", "settlement_rows", "agent_summaries",
                  "mcp_servers", "mcp_claims")
#: the tables of signed documents per epoch: compared by their key, only for the epochs
#: the service had finished, and kept as they were for epochs signed by an earlier key
_SIGNED = {"reports": "epoch, agent", "checkpoints": "epoch", "cards": "epoch, agent"}


async def set_aside(conn: db.Connection) -> list[int]:
    """In the caller's transaction: lock every derived table (a live service's report
    builder writes outside the ledger lock: wait for a build in flight to commit, then
    keep it out), copy each to ``old_<table>``, and empty it. Returns the sealed epochs
    that had no checkpoint (unfinished builds)."""
    await conn.execute(f"LOCK TABLE {', '.join(DERIVED_TABLES)} IN ACCESS EXCLUSIVE MODE")
    for table in DERIVED_TABLES:
        await conn.execute(f"CREATE TEMP TABLE old_{table} ON COMMIT DROP AS"
                           f" SELECT * FROM {table}")
    unfinished = [r["epoch"] for r in await conn.fetch(
        "SELECT epoch FROM old_seals WHERE epoch NOT IN"
        " (SELECT epoch FROM old_checkpoints) ORDER BY epoch")]
    await conn.execute(f"TRUNCATE {', '.join(DERIVED_TABLES)}")
    return unfinished


async def published_roots(conn: db.Connection) -> dict[int, bytes]:
    """size -> root of every published tree head."""
    return {r["size"]: bytes(r["root"])
            for r in await conn.fetch("SELECT size, root FROM tree_heads")}


async def copy_tree_nodes(conn: db.Connection,
                          nodes: Iterable[tuple[int, int, bytes]]) -> None:
    """Write tree nodes (level, idx, hash), by COPY."""
    await conn.copy_records_to_table("tree_nodes", records=nodes,
                                     columns=("level", "idx", "hash"))


#: tables written with an epoch's checkpoint, from its reports (bureau.storage.public_rows):
#: compared, like reports, only for epochs whose checkpoint the service stored
PUBLIC_ROWS = ("agent_summaries", "mcp_servers", "mcp_claims")


async def keep_signed(conn: db.Connection, epoch: int) -> None:
    """Put back an epoch's reports, cards and checkpoint as they were set aside, with the
    public rows built from those reports (the checkpoint last: it makes them visible)."""
    for table in ("reports", "cards"):
        await conn.execute(f"INSERT INTO {table} SELECT * FROM old_{table} WHERE epoch = $1",
                           epoch)
    await public_rows.build(conn, epoch)
    await conn.execute("INSERT INTO checkpoints SELECT * FROM old_checkpoints"
                       " WHERE epoch = $1", epoch)


async def first_difference(conn: db.Connection, table: str,
                           unfinished: Sequence[int]) -> str | None:
    """The first row in which ``table`` and its copy set aside differ (for reports and
    checkpoints, outside the ``unfinished`` epochs), said in a line; None when none."""
    if table in _SIGNED:
        keys = _SIGNED[table]
        row = await conn.fetchrow(
            f"SELECT {keys}, o.envelope IS NULL AS added, n.envelope IS NULL AS dropped"
            f" FROM old_{table} o FULL JOIN {table} n USING ({keys})"
            f" WHERE o.envelope IS DISTINCT FROM n.envelope"
            f" AND epoch <> ALL($1::bigint[]) ORDER BY {keys} LIMIT 1", unfinished)
        if row is None:
            return None
        what = ("only in the rebuild" if row["added"] else "missing from the rebuild"
                if row["dropped"] else "different bytes")
        where = ", ".join(f"{k}={row[k]}" for k in keys.split(", "))
        return f"{table}: {where}: {what}"
    where = " WHERE epoch <> ALL($1::bigint[])" if table in PUBLIC_ROWS else ""
    row = await conn.fetchrow(
        f"(SELECT 'missing from the rebuild' AS what, o::text AS r FROM"
        f" (SELECT * FROM old_{table}{where} EXCEPT ALL SELECT * FROM {table}{where}) o)"
        f" UNION ALL (SELECT 'only in the rebuild', n::text FROM"
        f" (SELECT * FROM {table}{where} EXCEPT ALL SELECT * FROM old_{table}{where}) n)"
        f" ORDER BY 2 LIMIT 1", *((unfinished,) if where else ()))
    return None if row is None else f"{table}: {row['what']}: {row['r']}"
