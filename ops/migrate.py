"""Apply the bureau's migrations and exit: for operators who run ``bureau serve`` as the
least-privilege role ``bureau_app`` (migrations/0004_roles.sql, THREAT_MODEL.md), which
may not create tables. Run it as the owner of the schema:

    BUREAU_DATABASE_URL=postgresql://owner@db/bureau python ops/migrate.py
"""

from __future__ import annotations

import asyncio
import os
import sys

from bureau.storage import db


async def main(url: str) -> int:
    conn = await db.connect(url)
    try:
        applied = await db.migrate(conn)
    finally:
        await conn.close()
    print("applied: " + (", ".join(applied) if applied else "nothing (up to date)"))
    return 0


if __name__ == "__main__":
    database_url = os.environ.get("BUREAU_DATABASE_URL")
    if not database_url:
        sys.exit("set BUREAU_DATABASE_URL to the database, connecting as its owner")
    sys.exit(asyncio.run(main(database_url)))
