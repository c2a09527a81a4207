"""The evaluators' pool, as settled (SPEC §8.2, §9).

* ``GET /v1/settlements/{epoch}`` — public: the bureau-signed settlement document of a
  sealed epoch that had a pool, byte for byte as stored; ``404`` otherwise.
* ``GET /v1/agents/{agent}/settlement?epoch=E`` — that agent (or an admin), signed:
  its own allocation row, its leaf index and the inclusion proof against the
  document's ``root``; an evaluator with no row gets ``{"units": 0}`` and no proof.

docs/settlement.md describes the shapes and how to check them.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from bureau.errors import BureauError, Code, pointer
from bureau.http.errors import error_response
from bureau.http.keys import READS
from bureau.http.params import EPOCH, KEY_ID
from bureau.http.routes.reads import _party, epoch_query
from bureau.http.routes.reports import _IMMUTABLE, _document
from bureau.replica import absent
from bureau.settlement.document import row_proof
from bureau.storage import db
from bureau.storage.settlement import settlement_envelope, settlement_rows

routes = web.RouteTableDef()
_PRIVATE = {"Cache-Control": "private, no-store"}


@routes.get(f"/v1/settlements/{{epoch:{EPOCH}}}")
async def settlement(request: web.Request) -> web.Response:
    """The signed settlement of one sealed epoch with a pool (public)."""
    epoch = int(request.match_info["epoch"])
    body = await request.app[READS].run(lambda conn: settlement_envelope(conn, epoch),
                                        missing=absent)
    if body is None:
        return error_response(BureauError(
            Code.NOT_FOUND, "", f"no settlement for epoch {epoch}: it had no pool, or its "
                                "reports are not published yet"))
    return _document(body, _IMMUTABLE)


async def own_row(conn: db.Connection, agent: str, epoch: int) -> dict[str, Any] | None:
    """The agent's row of ``epoch``'s settlement with its proof; None when the epoch has
    no published settlement."""
    if await settlement_envelope(conn, epoch) is None:
        return None
    rows = await settlement_rows(conn, epoch)
    body: dict[str, Any] = {"epoch": epoch, "evaluator": agent, "units": 0}
    for leaf, row in enumerate(rows):
        doc = json.loads(row)  # the bureau's own canonical bytes
        if doc["evaluator"] == agent:
            body.update(row=doc, units=doc["units"], leaf_index=leaf, tree_size=len(rows),
                        hashes=[h.hex() for h in row_proof(rows, leaf)])
            break
    return body


@routes.get(f"/v1/agents/{{agent:{KEY_ID}}}/settlement")
async def agent_settlement(request: web.Request) -> web.Response:
    """The agent's own allocation row and inclusion proof (that agent or an admin)."""
    agent, _ = await _party(request, "agent")
    try:
        epoch = epoch_query(request)
        if epoch is None:
            raise BureauError(Code.SCHEMA, pointer("epoch"), "epoch is required")
    except BureauError as err:
        return error_response(err)
    body = await request.app[READS].run(lambda conn: own_row(conn, agent, epoch),
                                        missing=absent)
    if body is None:
        return error_response(BureauError(Code.NOT_FOUND, "",
                                          f"no settlement for epoch {epoch}"))
    return web.json_response(body, headers=_PRIVATE)
