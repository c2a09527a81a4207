"""Reading the sealed reports whose agents linked an identity of one kind (SPEC §3, §8
r3): the reports are the only source, so every view built on them says what the signed
report says, as of its seal."""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from reporters import wire

# The filter runs in PostgreSQL (the payload decoded from the stored envelope), so only
# the reports of linked agents cross the wire; containment on the links array.
_LINKED_SQL = """
SELECT agent, envelope FROM reports
WHERE epoch = $1
  AND (convert_from(decode(convert_from(envelope, 'UTF8')::jsonb ->> 'payload', 'base64'),
                    'UTF8')::jsonb -> 'links') @> $2::jsonb
ORDER BY agent
"""


async def complete_epoch(conn: asyncpg.Connection, epoch: int | None) -> int | None:
    """``epoch`` if its reports are complete (it has a checkpoint), or the latest such
    epoch when None; None when there is none."""
    if epoch is None:
        value: int | None = await conn.fetchval("SELECT max(epoch) FROM checkpoints")
        return value
    found = await conn.fetchval("SELECT epoch FROM checkpoints WHERE epoch = $1", epoch)
    return None if found is None else epoch


async def linked_reports(conn: asyncpg.Connection, kind: str, epoch: int
                         ) -> list[tuple[dict[str, Any], bytes]]:
    """The report payloads (and envelopes) of ``epoch`` that carry a link of ``kind``,
    by agent key id."""
    rows = await conn.fetch(_LINKED_SQL, epoch, json.dumps([{"kind": kind}]))
    return [(_payload(bytes(r["envelope"])), bytes(r["envelope"])) for r in rows]


def _payload(envelope: bytes) -> dict[str, Any]:
    """The payload of a report envelope the bureau signed and stored itself."""
    doc: dict[str, Any] = json.loads(wire.b64decode_canonical(json.loads(envelope)["payload"]))
    return doc
