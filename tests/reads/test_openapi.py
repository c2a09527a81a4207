"""/openapi.json and schemas/: generated from the models, describing every route."""

from __future__ import annotations

import json
import re
from typing import Any

from bureau.errors import Code
from bureau.http import shapes
from bureau.http.openapi import (
    SCHEMAS_DIR,
    build_document,
    component_schemas,
    registered_routes,
    schema_files,
    undescribed_routes,
)
from reporters import wire
from reporters.models import PAYLOAD_MODELS
from tests.support import BureauUnderTest


async def _served(bureau: BureauUnderTest) -> dict[str, Any]:
    async with bureau.session.get(bureau.url + "/openapi.json") as resp:
        assert resp.status == 200
        assert resp.content_type == "application/json"
        doc: dict[str, Any] = await resp.json()
    return doc


async def test_served_document_is_openapi_3_1(bureau: BureauUnderTest) -> None:
    doc = await _served(bureau)
    assert doc["openapi"].startswith("3.1.")
    assert doc == json.loads(json.dumps(build_document(bureau.app)))


async def test_every_registered_route_is_described(bureau: BureauUnderTest) -> None:
    doc = await _served(bureau)
    assert undescribed_routes(bureau.app) == []
    for method, path in registered_routes(bureau.app):
        assert method.lower() in doc["paths"].get(path, {}), (method, path)
        params = set(re.findall(r"\{(\w+)\}", path))
        op = doc["paths"][path][method.lower()]
        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert declared == params, (method, path)
        assert "security" in op, (method, path)
    described = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert described == set(registered_routes(bureau.app))


def _refs(value: Any) -> set[str]:
    if isinstance(value, dict):
        own = {value["$ref"]} if isinstance(value.get("$ref"), str) else set()
        return own.union(*(_refs(v) for v in value.values()))
    if isinstance(value, list):
        found: set[str] = set()
        return found.union(*(_refs(v) for v in value))
    return set()


async def test_every_reference_resolves(bureau: BureauUnderTest) -> None:
    doc = await _served(bureau)
    components = doc["components"]["schemas"]
    for ref in _refs(doc):
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.rsplit("/", 1)[1] in components, ref


def test_components_come_from_the_models() -> None:
    components = component_schemas()
    for model in PAYLOAD_MODELS.values():
        own = model.model_json_schema(ref_template="#/components/schemas/{model}")
        own.pop("$defs", None)
        assert components[model.__name__] == own, model.__name__
    assert set(components["Code"]["enum"]) == {c.value for c in Code}
    assert components["Envelope"]["properties"]["payloadType"]["enum"] == [
        wire.payload_type(n) for n in PAYLOAD_MODELS]


def test_schema_files_match_the_models() -> None:
    """Regenerate in memory; on a difference run `python -m bureau.http.openapi --write-schemas`."""
    expected = schema_files()
    on_disk = {p.name: p.read_bytes() for p in SCHEMAS_DIR.glob("*.json")}
    assert sorted(on_disk) == sorted(expected)
    for name, data in expected.items():
        assert on_disk[name] == data, f"schemas/{name} is stale"
    assert {f"{n}.v1.json" for n in PAYLOAD_MODELS} <= set(on_disk)


def test_payload_schemas_say_what_the_models_refuse() -> None:
    fact = json.loads(schema_files()["fact.v1.json"])
    assert fact["additionalProperties"] is False
    assert fact["title"] == wire.payload_type("fact")
    error = json.loads(schema_files()["error.json"])
    assert set(error["required"]) == {"status", "code", "path", "detail"}
    assert shapes.Error.model_json_schema()["properties"].keys() == {
        "status", "code", "path", "detail"}
