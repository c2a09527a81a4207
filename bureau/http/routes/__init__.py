"""Every route table the service serves, in the order the application registers them.

:func:`bureau.http.app.create_app` adds them all; ``python -m bureau.http.openapi`` describes
them without building the whole application (so that the OpenAPI module never needs
the composition root, nor the composition root anything but the document's publisher).
"""

from __future__ import annotations

from aiohttp import web

from bureau.http.routes import (
    intake,
    interop,
    ops,
    pages,
    portable,
    reads,
    reports,
    settlements,
    tiles,
    transparency,
)

TABLES: tuple[web.RouteTableDef, ...] = (
    intake.routes,
    ops.routes,
    reads.routes,
    reports.routes,
    portable.routes,
    settlements.routes,
    transparency.routes,
    tiles.routes,
    interop.routes,
    pages.routes,
)
