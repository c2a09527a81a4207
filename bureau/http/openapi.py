"""The OpenAPI 3.1 document and the ``schemas/*.json`` files, generated from the models.

Every schema here comes from a pydantic model: the payload models that validate
submissions (:data:`reporters.models.PAYLOAD_MODELS`), the wire shapes of
:mod:`bureau.http.shapes` and the scoring policy model. The operations are a catalogue
keyed by ``(method, path)`` (:mod:`bureau.http.openapi_operations`);
:func:`build_document` describes exactly the routes the
application registers, and :func:`undescribed_routes` names any registered route the
catalogue lacks (a test holds that list empty).

``python -m bureau.http.openapi`` prints the document; ``--write-schemas`` rewrites
``schemas/``; ``--check-schemas`` exits 1 when the files differ from the models.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from bureau.http import shapes
from bureau.http.keys import OPENAPI
from bureau.http.openapi_operations import operations
from bureau.scoring.policy import Policy
from reporters import wire
from reporters.models import PAYLOAD_MODELS

log = logging.getLogger(__name__)

SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
Json = dict[str, Any]

_WIRE_MODELS: tuple[type[BaseModel], ...] = (
    shapes.Envelope, shapes.Error, shapes.IntakeResult, shapes.BatchAccepted,
    shapes.BatchRejected, shapes.EntriesPage, shapes.BureauInfo, shapes.Status, Policy,
    shapes.InclusionProof, shapes.ConsistencyProof, shapes.EvaluatorRecord,
    shapes.SettlementRow, shapes.ProofBundle, shapes.Card)


def component_schemas() -> Json:
    models = [*PAYLOAD_MODELS.values(), *_WIRE_MODELS]
    _, top = models_json_schema([(m, "validation") for m in models],
                                ref_template="#/components/schemas/{model}")
    defs: Json = top["$defs"]
    return defs


# --------------------------------------------------------------------------- document


def registered_routes(app: web.Application) -> list[tuple[str, str]]:
    """(method, path template) of every route; HEAD is left out (aiohttp adds one per
    GET, answering like it)."""
    found = {(r.method, r.resource.canonical) for r in app.router.routes()
             if r.resource is not None and r.method != "HEAD"}
    return sorted(found, key=lambda mp: (mp[1], mp[0]))


def undescribed_routes(app: web.Application) -> list[tuple[str, str]]:
    ops = operations()
    return [mp for mp in registered_routes(app) if mp not in ops]


def build_document(app: web.Application) -> Json:
    ops = operations()
    paths: Json = {}
    for method, path in registered_routes(app):
        if (method, path) in ops:
            paths.setdefault(path, {})[method.lower()] = ops[(method, path)]
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": JSON_SCHEMA_DIALECT,
        "info": {"title": "Agent Reputation Bureau", "version": "1",
                 "description": "Protocol v1. Every error has the Error shape."},
        "paths": paths,
        "components": {
            "schemas": component_schemas(),
            "securitySchemes": {"httpSignature": {
                "type": "apiKey", "in": "header", "name": "Signature",
                "description": "RFC 9421 HTTP Message Signature (Signature-Input and "
                               "Signature headers): alg ed25519, keyid = the reader's key "
                               "id, covering @method @path @query, created at most 300 s "
                               "old, a single-use nonce. See docs/authentication.md."}},
        },
    }


async def publish(app: web.Application) -> None:
    """on_startup: build the document once, after every route is registered."""
    for method, path in undescribed_routes(app):
        log.warning("route %s %s has no entry in bureau.http.openapi_operations.operations()",
                    method, path)
    app[OPENAPI] = json.dumps(build_document(app), ensure_ascii=False).encode()


# --------------------------------------------------------------------------- schemas/


def _standalone(model: type[BaseModel], title: str) -> bytes:
    doc: Json = {"$schema": JSON_SCHEMA_DIALECT, **model.model_json_schema(), "title": title}
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def schema_files() -> dict[str, bytes]:
    """File name → bytes of every file ``schemas/`` holds."""
    files = {f"{name}.v1.json": _standalone(model, wire.payload_type(name))
             for name, model in PAYLOAD_MODELS.items()}
    files["envelope.json"] = _standalone(shapes.Envelope, "envelope")
    files["error.json"] = _standalone(shapes.Error, "error")
    return files


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bureau.http.openapi", description=__doc__)
    parser.add_argument("--write-schemas", action="store_true")
    parser.add_argument("--check-schemas", action="store_true")
    parser.add_argument("--dir", type=Path, default=SCHEMAS_DIR)
    args = parser.parse_args(argv)
    files = schema_files()
    if args.write_schemas:
        args.dir.mkdir(parents=True, exist_ok=True)
        for stale in set(p.name for p in args.dir.glob("*.json")) - files.keys():
            (args.dir / stale).unlink()
        for name, data in files.items():
            (args.dir / name).write_bytes(data)
        return 0
    if args.check_schemas:
        on_disk = {p.name: p.read_bytes() for p in args.dir.glob("*.json")}
        drift = sorted(n for n in on_disk.keys() | files.keys()
                       if on_disk.get(n) != files.get(n))
        for name in drift:
            print(f"schemas/{name} differs from the models", file=sys.stderr)
        return 1 if drift else 0
    from bureau.http.routes import TABLES  # the routes, not the application

    app = web.Application()
    for table in TABLES:
        app.add_routes(table)
    print(json.dumps(build_document(app), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
