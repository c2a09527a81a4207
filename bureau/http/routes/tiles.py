"""The tree as C2SP tlog-tiles, for anyone (SPEC §9.1; docs/transparency.md, "Tiles"):

* ``GET /tile/<L>/<N>[.p/<W>]`` — a hash tile: ``W`` (256 when full) hashes of 32 bytes;
* ``GET /tile/entries/<N>[.p/<W>]`` — an entry bundle: each leaf's 32-byte entry id
  after its length (two bytes, big-endian), never the entry itself.

``/checkpoint`` is the log's checkpoint (bureau.http.routes.transparency). A full tile
never changes and is served with a year-long ``immutable`` cache header; a partial one
for a minute (its bytes never change either, but it goes out of use once its full tile
exists). A path that is not a tile path as tlog-tiles writes it, or a tile the latest
published tree head does not cover, is ``404 NOT_FOUND``. No query parameter is taken.
"""

from __future__ import annotations

from aiohttp import web

from bureau.errors import BureauError, Code, pointer
from bureau.http.errors import error_response
from bureau.http.keys import FULL_TILES, READS
from bureau.http.params import TILE
from bureau.replica import absent
from bureau.transparency.tiles import read_tile
from reporters.tlog.tiles import parse_path

routes = web.RouteTableDef()

TILE_TYPE = "application/octet-stream"
FULL_CACHE = {"Cache-Control": "public, max-age=31536000, immutable"}
PARTIAL_CACHE = {"Cache-Control": "public, max-age=60"}


@routes.get(f"/tile/{{tile:{TILE}}}")
async def tile(request: web.Request) -> web.Response:
    """A hash tile or an entry bundle of the published tree (public)."""
    found = parse_path("tile/" + request.match_info["tile"])
    if found is None:
        return error_response(BureauError(Code.NOT_FOUND, "", "not a tile path (C2SP "
                                          "tlog-tiles: tile/<L>/<N>[.p/<W>], "
                                          "tile/entries/<N>[.p/<W>])"))
    if request.query:
        name = sorted(request.query)[0]
        return error_response(BureauError(Code.SCHEMA, pointer(name),
                                          f"unknown query parameter {name}"))
    cache = request.app[FULL_TILES]
    data = cache.get(found)
    if data is None:
        data = await request.app[READS].run(lambda conn: read_tile(conn, found),
                                            missing=absent)
        if data is None:
            return error_response(BureauError(Code.NOT_FOUND, "", f"{found.path} is not in "
                                              "the published tree (GET /checkpoint)"))
        cache.put(found, data)
    return web.Response(body=data, content_type=TILE_TYPE,
                        headers=FULL_CACHE if found.full else PARTIAL_CACHE)
