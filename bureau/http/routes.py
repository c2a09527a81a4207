"""Every route table the service serves, in the order the application registers them.

:func:`bureau.http.app.create_app` adds them all; ``python -m bureau.openapi`` describes
them without building the whole application (so that the OpenAPI module never needs
the composition root, nor the composition root anything but the document's publisher).
"""

from __future__ import annotations

from aiohttp import web

from bureau.http import intake_routes, ops_routes, page_routes, read_routes, report_routes

TABLES: tuple[web.RouteTableDef, ...] = (
    intake_routes.routes,
    ops_routes.routes,
    read_routes.routes,
    report_routes.routes,
    page_routes.routes,
)
