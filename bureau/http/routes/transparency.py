"""The ledger as a transparency log, for anyone (SPEC §8.1, §9; docs/transparency.md):

* ``GET /checkpoint`` — the latest tree head, a C2SP signed note, with every witness
  cosignature kept for it;
* ``GET /v1/checkpoints/{epoch}/note`` — that epoch's checkpoint as a signed note;
* ``GET /v1/proofs/inclusion?id=ID&size=N`` and ``GET /v1/proofs/consistency?from=M&to=N``
  — RFC 9162 proofs in any tree the bureau published, from the stored nodes: a
  consistency proof in one query (the latest published size and the nodes), an
  inclusion proof in two (the size and the entry's seq, then the nodes).

Bad input (SPEC §9): a missing, repeated, malformed or unknown query parameter, a size
above the latest published tree head, ``from > to``, or an entry after the tree asked
about, is ``422 SCHEMA`` at ``/<parameter>``; an unknown entry id is ``404 NOT_FOUND``.
Parameters are checked in that order: the query's form, then the sizes against what
was published, then the entry.
"""

from __future__ import annotations

from aiohttp import web

from bureau.errors import BureauError, Code, Pushback, pointer
from bureau.http.errors import error_response
from bureau.http.keys import READS
from bureau.http.params import EPOCH, is_hex64, number
from bureau.replica import absent
from bureau.storage import db
from bureau.storage import heads as head_rows
from bureau.transparency import heads
from bureau.transparency.tree import check_found, inclusion_proof
from reporters.tlog import proofs

routes = web.RouteTableDef()

NOTE_TYPE = "text/plain"
#: a tree size: a number (bureau.http.params), within a PostgreSQL bigint
MAX_SIZE = 10**18 - 1
_IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
_FRESH = {"Cache-Control": "no-cache"}


def _note(text: str, headers: dict[str, str]) -> web.Response:
    return web.Response(text=text, content_type=NOTE_TYPE, charset="utf-8", headers=headers)


def _params(request: web.Request, names: tuple[str, ...]) -> dict[str, str]:
    """Each of ``names`` given exactly once, and nothing else."""
    for name in sorted(set(request.query) - set(names)):
        raise BureauError(Code.SCHEMA, pointer(name), f"unknown query parameter {name}")
    found = {}
    for name in names:
        values = request.query.getall(name, [])
        if not values:
            raise BureauError(Code.SCHEMA, pointer(name), f"{name} is required")
        if len(values) > 1:
            raise BureauError(Code.SCHEMA, pointer(name), f"{name} is given more than once")
        found[name] = values[0]
    return found


def _size(params: dict[str, str], name: str) -> int:
    size = number(params[name])
    if size is None or size > MAX_SIZE:
        raise BureauError(Code.SCHEMA, pointer(name), f"{name} is a tree size: a whole "
                          "number in ASCII decimal digits, without a sign or leading zeros")
    return size


def _above_published(name: str, size: int, published: int | None) -> BureauError | None:
    latest = published if published is not None else -1
    if size <= latest:
        return None
    return BureauError(Code.SCHEMA, pointer(name), f"{name} {size} is above the latest "
                       f"published tree head (size {max(latest, 0)}; GET /checkpoint)")


@routes.get("/checkpoint")
async def checkpoint_note(request: web.Request) -> web.Response:
    """The latest tree head as a C2SP signed note, with witness cosignatures (public)."""
    head = await request.app[READS].run(heads.latest, missing=absent)
    if head is None:  # every process publishes one as it starts
        return error_response(BureauError(Code.UNAVAILABLE, "", "no tree head published "
                                          "yet", pushback=Pushback.INTERNAL_ERROR))
    return _note(head.served, _FRESH)


@routes.get(f"/v1/checkpoints/{{epoch:{EPOCH}}}/note")
async def epoch_checkpoint_note(request: web.Request) -> web.Response:
    """One sealed epoch's checkpoint as a C2SP signed note (public)."""
    epoch = int(request.match_info["epoch"])
    note = await request.app[READS].run(lambda conn: heads.epoch_note(conn, epoch),
                                        missing=absent)
    if note is None:
        return error_response(BureauError(Code.NOT_FOUND, "", f"no checkpoint for epoch {epoch}"))
    return _note(note, _IMMUTABLE)


@routes.get("/v1/proofs/inclusion")
async def inclusion(request: web.Request) -> web.Response:
    """RFC 9162 inclusion proof of an entry in a published tree (public)."""
    try:
        params = _params(request, ("id", "size"))
        entry_id, size = params["id"], _size(params, "size")
        if not is_hex64(entry_id):
            raise BureauError(Code.SCHEMA, pointer("id"), "id is an entry id: 64 lowercase "
                              "hex digits")
    except BureauError as err:
        return error_response(err)  # a bad query is not a refused envelope
    answer = await request.app[READS].run(
        lambda conn: _inclusion(conn, entry_id, size), missing=_refused)
    if isinstance(answer, BureauError):
        return error_response(answer)
    return web.json_response(answer, headers=_IMMUTABLE)


def _refused(answer: object) -> bool:
    """A refusal that depends on what the database holds (rule 2 of bureau.replica)."""
    return isinstance(answer, BureauError)


async def _inclusion(conn: db.Connection, entry_id: str,
                     size: int) -> dict[str, object] | BureauError:
    """The inclusion proof's body, or the refusal of the query (checked query)."""
    published, seq = await head_rows.published_and_entry(conn, entry_id)
    refusal = _above_published("size", size, published)
    if refusal is not None:
        return refusal
    if seq is None:
        return BureauError(Code.NOT_FOUND, "", "no entry has that id")
    if seq > size:
        return BureauError(Code.SCHEMA, pointer("size"), f"entry {seq} is not in the "
                           f"tree of size {size}")
    hashes = await inclusion_proof(conn, seq - 1, size)
    return {"leaf_index": seq - 1, "tree_size": size, "hashes": [h.hex() for h in hashes]}


@routes.get("/v1/proofs/consistency")
async def consistency(request: web.Request) -> web.Response:
    """RFC 9162 consistency proof between two published tree sizes (public)."""
    try:
        params = _params(request, ("from", "to"))
        old, new = _size(params, "from"), _size(params, "to")
        if old > new:
            raise BureauError(Code.SCHEMA, pointer("from"), f"from {old} is larger than "
                              f"to {new}")
    except BureauError as err:
        return error_response(err)
    plan = proofs.consistency_plan(old, new)

    async def read(conn: db.Connection) -> dict[str, object] | BureauError:
        published, found = await heads.published_and_nodes(conn, plan.nodes)
        refusal = _above_published("to", new, published)
        if refusal is not None:
            return refusal
        hashes = plan.hashes(check_found(plan.nodes, found))
        return {"from": old, "to": new, "hashes": [h.hex() for h in hashes]}

    answer = await request.app[READS].run(read, missing=_refused)
    if isinstance(answer, BureauError):
        return error_response(answer)
    return web.json_response(answer, headers=_IMMUTABLE)
