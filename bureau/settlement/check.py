"""``bureau verify``'s look at the stored settlements (SPEC §8.2): for every epoch with
one, the signed document's numbers add up — its rows' units sum to ``paid``, ``paid``
and ``unpaid`` to the pool the ledger gives that epoch, ``evaluators`` counts the rows
paid — and its ``root`` is the tree hash of the stored rows, sorted by key id.
(That the allocation is the right one for the entries is ``bureau rebuild``'s question:
it derives it again and compares the bytes.)
"""

from __future__ import annotations

import json
from typing import Any

from bureau.settlement.document import rows_root
from bureau.storage import db
from bureau.storage.settlement import pool_of_epoch, settlement_rows, stored_settlements
from reporters import wire


async def settlement_problems(conn: db.Connection) -> list[str]:
    """One line per settlement that does not add up; empty when all do."""
    problems = []
    for s in await stored_settlements(conn):
        epoch = s["epoch"]
        rows = await settlement_rows(conn, epoch)
        envelope = json.loads(bytes(s["envelope"]))
        doc: dict[str, Any] = json.loads(wire.b64decode_canonical(envelope["payload"]))
        parsed = [json.loads(r) for r in rows]
        units = [r["units"] for r in parsed]
        keys = [r["evaluator"] for r in parsed]
        pool = await pool_of_epoch(conn, epoch, s["last_seq"])
        where = f"settlement of epoch {epoch}"
        if doc.get("epoch") != epoch or doc.get("pool") != pool:
            problems.append(f"{where}: its pool is {doc.get('pool')}, the ledger's is {pool}")
        elif sum(units) != doc.get("paid") or doc["paid"] + doc.get("unpaid", -1) != pool:
            problems.append(f"{where}: rows pay {sum(units)}, the document says paid "
                            f"{doc.get('paid')} and unpaid {doc.get('unpaid')} of {pool}")
        elif doc.get("evaluators") != len(rows) or any(u < 1 for u in units):
            problems.append(f"{where}: {doc.get('evaluators')} evaluators paid, and "
                            f"{len(rows)} rows of which {sum(1 for u in units if u > 0)} pay")
        elif keys != sorted(keys, key=str.encode) or any(
                wire.canonical_json(p) != r for p, r in zip(parsed, rows, strict=True)):
            problems.append(f"{where}: its rows are not canonical rows in key-id order")
        elif doc.get("root") != rows_root(rows).hex():
            problems.append(f"{where}: its root is not the tree hash of its rows")
    return problems
