"""What a kept refusal holds, and the bound on what refusals may store (SPEC §5 r2).

A refusal of a correctly signed envelope from a known party is evidence about its
signer and is kept, but a refusal must not become free storage. So:

* a decode-stage refusal (``MALFORMED_PAYLOAD``, ``SCHEMA``) keeps the content key, code,
  path and time — not the envelope, nor the detail (which may quote what was sent);
* any other refusal keeps its envelope and detail for at most
  :data:`MAX_ENVELOPES_PER_EPOCH` refusals per signer per epoch; past that, only the
  same four fields.

The row also names its signer (whose file it is in) and its payload name: both come
from a closed, validated vocabulary, never from the payload. ``path`` is escaped and
bounded when it is made (``bureau.errors.pointer``).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from bureau.errors import BureauError, Stage
from bureau.intake.envelope import Envelope
from bureau.storage import db
from bureau.storage.refusals import envelopes_kept

#: refusals per signer per epoch that keep their envelope
MAX_ENVELOPES_PER_EPOCH = 1000

#: a row of the ``refusals`` table, in the column order of bureau.storage.chain:
#: (content_key, signer, kind, code, path, detail, refused_at, envelope)
RefusalRow = tuple[str, str, str, str, str, "str | None", dt.datetime, "bytes | None"]


def refusal_row(envelope: Envelope, err: BureauError, refused_at: dt.datetime) -> RefusalRow:
    """The row kept for a refusal of ``envelope`` (by its signer, for ``err``)."""
    key, signer, name = envelope.content_key, envelope.keyid, envelope.name
    if err.code.stage is Stage.DECODE:
        return (key, signer, name, err.code.value, err.path, None, refused_at, None)
    return (key, signer, name, err.code.value, err.path, err.detail, refused_at,
            envelope.canonical)


def _stripped(row: RefusalRow) -> RefusalRow:
    return (row[0], row[1], row[2], row[3], row[4], None, row[6], None)


async def bound_envelopes(conn: db.Connection, rows: list[Any],
                          epoch_start: dt.datetime) -> None:
    """Strip the envelope and detail from the rows past each signer's budget for the
    epoch that began at ``epoch_start`` (``rows`` is a group's, changed in place). One
    query, and only in a group with a refusal that would keep its envelope; the partial
    index of migration 0009 makes it read at most the budget's rows per signer."""
    signers = sorted({row[1] for row in rows if row[7] is not None})
    if not signers:
        return
    kept = Counter(await envelopes_kept(conn, signers, epoch_start))
    for i, row in enumerate(rows):
        if row[7] is None:
            continue
        if kept[row[1]] >= MAX_ENVELOPES_PER_EPOCH:
            rows[i] = _stripped(row)
        else:
            kept[row[1]] += 1
