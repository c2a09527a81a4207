"""Public reads of bureau-signed documents (SPEC §8, §9).

* ``GET /v1/agents/{agent}/report[?epoch=E]`` — the agent's signed report at ``E``,
  by default at the latest epoch whose reports are complete; ``404`` if none.
* ``GET /v1/checkpoints/latest``, ``GET /v1/checkpoints/{epoch}`` — a signed checkpoint.

Each body is the stored envelope, byte for byte (canonical JSON of the DSSE envelope),
so every fetch of the same document gives the same bytes. A report or checkpoint at a
given epoch never changes: it is served as immutable.
"""

from __future__ import annotations

from aiohttp import web

from bureau.errors import BureauError, Code, Pushback, pointer
from bureau.http.errors import error_response
from bureau.http.keys import READS
from bureau.http.params import EPOCH, KEY_ID, number
from bureau.replica import absent
from bureau.storage.reports import building, checkpoint_envelope, report_envelope
from reporters import wire

routes = web.RouteTableDef()

_IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
_LATEST = {"Cache-Control": "public, max-age=60"}


def _document(body: bytes, headers: dict[str, str]) -> web.Response:
    return web.Response(body=body, content_type="application/json",
                        headers={**headers, "ETag": '"' + wire.blake3_hex(body) + '"'})


def _epoch_param(request: web.Request) -> int | None:
    for name in sorted(set(request.query) - {"epoch"}):
        raise BureauError(Code.SCHEMA, pointer(name), f"unknown query parameter {name}")
    values = request.query.getall("epoch", [])
    if not values:
        return None
    epoch = number(values[0]) if len(values) == 1 else None
    if epoch is None:
        raise BureauError(Code.SCHEMA, pointer("epoch"),
                          "epoch must be given once, as a whole number of epochs in ASCII "
                          "digits without a sign or leading zeros")
    return epoch


@routes.get(f"/v1/agents/{{agent:{KEY_ID}}}/report")
async def agent_report(request: web.Request) -> web.Response:
    """The agent's bureau-signed report (public)."""
    agent = request.match_info["agent"]
    try:
        epoch = _epoch_param(request)
    except BureauError as err:
        return error_response(err)  # a bad query is not a refused envelope
    body = await request.app[READS].run(lambda conn: report_envelope(conn, agent, epoch),
                                        missing=absent)
    if body is None:
        return error_response(await _no_report(request, agent, epoch))
    return _document(body, _LATEST if epoch is None else _IMMUTABLE)


async def _no_report(request: web.Request, agent: str, epoch: int | None) -> BureauError:
    """Why there is no report to serve. The latest is the agent's newest report of a
    complete epoch, so "none" is final only when no sealed epoch is still being built:
    while one is, the agent may have a report in it, and the answer says so (503,
    ``Retry-After``) rather than "no report" (docs/epochs-and-reports.md)."""
    if epoch is not None:
        return BureauError(Code.NOT_FOUND, "", f"no report for {agent} at epoch {epoch}")
    pending = await request.app[READS].run(building)
    if pending is not None:
        return BureauError(Code.UNAVAILABLE, "", f"the reports of epoch {pending} are being "
                           f"built; {agent} has none before it", pushback=Pushback.REPORTS_BUILDING)
    return BureauError(Code.NOT_FOUND, "", f"no report for {agent} in any sealed epoch")


async def _checkpoint(request: web.Request, epoch: int | None) -> web.Response:
    body = await request.app[READS].run(lambda conn: checkpoint_envelope(conn, epoch),
                                        missing=absent)
    if body is None:
        what = "no epoch is sealed yet" if epoch is None else f"no checkpoint for epoch {epoch}"
        return error_response(BureauError(Code.NOT_FOUND, "", what))
    return _document(body, _LATEST if epoch is None else _IMMUTABLE)


@routes.get("/v1/checkpoints/latest")
async def latest_checkpoint(request: web.Request) -> web.Response:
    """The checkpoint of the latest epoch whose reports are complete (public)."""
    return await _checkpoint(request, None)


@routes.get(f"/v1/checkpoints/{{epoch:{EPOCH}}}")
async def checkpoint(request: web.Request) -> web.Response:
    """The checkpoint of one sealed epoch (public)."""
    return await _checkpoint(request, int(request.match_info["epoch"]))
