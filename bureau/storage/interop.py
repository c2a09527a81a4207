"""The reports other registries read (bureau.interop): those that carry a link of one
kind."""

from __future__ import annotations

from bureau.storage import db

# The filter runs in PostgreSQL (the payload decoded from the stored envelope), so only
# the reports of linked agents cross the wire; containment on the links array.
_LINKED_SQL = """
SELECT agent, envelope FROM reports
WHERE epoch = $1
  AND (convert_from(decode(convert_from(envelope, 'UTF8')::jsonb ->> 'payload', 'base64'),
                    'UTF8')::jsonb -> 'links') @> $2::jsonb
ORDER BY agent
"""


async def linked_envelopes(conn: db.Connection, epoch: int, links: str) -> list[bytes]:
    """The envelopes of ``epoch``'s reports whose links contain ``links`` (JSON), by
    agent key id."""
    return [bytes(r["envelope"]) for r in await conn.fetch(_LINKED_SQL, epoch, links)]
