"""docs/reading.md names every read route and query parameter the service has."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from bureau.http.params import template
from bureau.http.routes import reads as read_routes
from bureau.http.routes import transparency

DOC = Path(__file__).resolve().parents[2] / "docs" / "reading.md"


def test_every_read_route_is_documented() -> None:
    text = DOC.read_text()
    for route in [*read_routes.routes, *transparency.routes]:
        assert isinstance(route, web.RouteDef)
        assert f"`{route.method} {template(route.path)}`" in text, route.path


def test_every_query_parameter_is_documented() -> None:
    text = DOC.read_text()
    for name in ("after", "limit", "refusals_after", "id", "size", "from", "to"):
        assert f"| `{name}` |" in text, name
    assert f"`{read_routes.MAX_LIMIT}`" in text or f"`1` to `{read_routes.MAX_LIMIT}`" in text
