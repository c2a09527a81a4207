"""Reading the sealed reports whose agents linked an identity of one kind (SPEC §3, §8
r3): the reports are the only source, so every view built on them says what the signed
report says, as of its seal."""

from __future__ import annotations

import json
from typing import Any

from bureau.storage import db, reports
from bureau.storage.interop import linked_envelopes
from reporters import wire


async def complete_epoch(conn: db.Connection, epoch: int | None) -> int | None:
    """``epoch`` if its reports are complete (it has a checkpoint), or the latest such
    epoch when None; None when there is none."""
    if epoch is None:
        return await reports.latest_epoch(conn)
    return epoch if await reports.has_checkpoint(conn, epoch) else None


async def linked_reports(conn: db.Connection, kind: str, epoch: int
                         ) -> list[tuple[dict[str, Any], bytes]]:
    """The report payloads (and envelopes) of ``epoch`` that carry a link of ``kind``,
    by agent key id."""
    envelopes = await linked_envelopes(conn, epoch, json.dumps([{"kind": kind}]))
    return [(_payload(e), e) for e in envelopes]


def _payload(envelope: bytes) -> dict[str, Any]:
    """The payload of a report envelope the bureau signed and stored itself."""
    doc: dict[str, Any] = json.loads(wire.b64decode_canonical(json.loads(envelope)["payload"]))
    return doc
