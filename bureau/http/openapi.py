"""The OpenAPI 3.1 document and the ``schemas/*.json`` files, generated from the models.

Every schema here comes from a pydantic model: the payload models that validate
submissions (:data:`reporters.models.PAYLOAD_MODELS`), the wire shapes of
:mod:`bureau.http.shapes` and the scoring policy model. The operations are a catalogue
keyed by ``(method, path)``; :func:`build_document` describes exactly the routes the
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
from bureau.http.openapi_parts import epoch_param as _epoch_param
from bureau.http.openapi_parts import errors as _errors
from bureau.http.openapi_parts import json_body as _json
from bureau.http.openapi_parts import key_param as _key_param
from bureau.http.openapi_parts import object_body as _object
from bureau.http.openapi_parts import ref as _ref
from bureau.http.openapi_portable import portable_operations
from bureau.http.params import KEY_ID
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


# --------------------------------------------------------------------------- operations


#: a query text that goes to the database: no control character (PostgreSQL refuses a NUL)
_NO_CONTROL = "^[^\\x00-\\x1f\\x7f]*$"


def _query(name: str, description: str, maximum: int, default: int, minimum: int) -> Json:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": {"type": "integer", "minimum": minimum, "maximum": maximum,
                       "default": default}}


def _note_response(description: str) -> Json:
    return {"description": description, "content": {"text/plain": {"schema": {
        "type": "string", "description": "a C2SP signed note (tlog-checkpoint)"}}}}


def _size_param(name: str, description: str) -> Json:
    return {"name": name, "in": "query", "required": True, "description": description,
            "schema": {"type": "string", "pattern": "^(0|[1-9][0-9]{0,18})$"}}


def _html_response(description: str) -> Json:
    return {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}


def _file_operation(party: str, summary: str) -> Json:
    cursor = 10**18 - 1
    return {
        "operationId": f"{party}_entries", "summary": summary,
        "description": "RFC 9421 signed by the key in the path, or by an admin key. "
                       "See docs/reading.md.",
        "security": [{"httpSignature": []}],
        "parameters": [
            {"name": party, "in": "path", "required": True, "description": "a key id",
             "schema": {"type": "string", "pattern": f"^{KEY_ID}$"}},
            _query("after", "entries with seq greater than this", cursor, 0, 0),
            _query("limit", "at most this many entries (and refusals)", 1000, 100, 1),
            _query("refusals_after", "refusals with ref greater than this", cursor, 0, 0),
        ],
        "responses": {"200": _json("one page of the file", "EntriesPage"),
                      **_errors(401, 403, 404, 422, 503)},
    }


def operations() -> dict[tuple[str, str], Json]:
    """Every operation the service can describe, keyed by (method, path)."""
    public: list[dict[str, Any]] = []
    ndjson = {"description": "one JSON object a line, in input order", "content": {
        "application/x-ndjson": {"schema": {"type": "string"}, "x-line-schema": {
            "oneOf": [_ref("BatchAccepted"), _ref("BatchRejected")]}}}}
    return {
        **_interop_operations(),
        **portable_operations(),
        ("POST", "/v1/evidence"): {
            "operationId": "submit", "summary": "Submit one envelope", "security": public,
            "requestBody": {"required": True, "content": {
                "application/json": {"schema": _ref("Envelope")}}},
            "responses": {"201": _json("admitted now", "IntakeResult"),
                          "200": _json("admitted before (same submission)", "IntakeResult"),
                          **_errors(400, 413, 415, 422, 503)}},
        ("POST", "/v1/evidence/batch"): {
            "operationId": "submit_batch", "summary": "Submit up to 1,000 envelopes",
            "security": public,
            "requestBody": {"required": True, "content": {"application/x-ndjson": {
                "schema": {"type": "string"}, "x-line-schema": _ref("Envelope")}}},
            "responses": {"200": ndjson, **_errors(413, 415, 503)}},
        ("GET", "/v1/bureau"): {
            "operationId": "bureau", "summary": "The bureau's key, policy hash, epoch length",
            "security": public, "responses": {"200": _json("the bureau", "BureauInfo")}},
        ("GET", "/v1/policy"): {
            "operationId": "policy",
            "summary": "The current epoch's scoring policy, as canonical JSON bytes",
            "security": public, "responses": {"200": _json("the policy", "Policy")}},
        ("GET", "/v1/policies/{hash}"): {
            "operationId": "policy_by_hash",
            "summary": "Any policy the bureau knows, by its hash, byte for byte",
            "security": public, "parameters": [
                {"name": "hash", "in": "path", "required": True,
                 "description": "BLAKE3 of the policy's canonical bytes, as reports name it",
                 "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}],
            "responses": {"200": _json("the policy", "Policy"), **_errors(404, 422)}},
        ("GET", "/v1/agents/{agent}/entries"): _file_operation(
            "agent", "Every entry about the agent, and its refusals"),
        ("GET", "/v1/reporters/{reporter}/entries"): _file_operation(
            "reporter", "What the reporter submitted, and its refusals"),
        ("GET", "/openapi.json"): {
            "operationId": "openapi", "summary": "This document", "security": public,
            "responses": {"200": {"description": "OpenAPI 3.1", "content": {
                "application/json": {"schema": {"type": "object"}}}}}},
        ("GET", "/healthz"): {
            "operationId": "healthz", "summary": "Liveness", "security": public,
            "responses": {"200": _json("the process serves HTTP", "Status")}},
        ("GET", "/readyz"): {
            "operationId": "readyz", "summary": "Readiness: the database answers",
            "security": public, "responses": {"200": _json("ready", "Status"),
                                              **_errors(503)}},
        ("GET", "/v1/agents/{agent}/report"): {
            "operationId": "agent_report", "summary": "The agent's bureau-signed report",
            "security": public, "parameters": [_key_param("agent"), _epoch_param()],
            "responses": {"200": _json("the signed report (a DSSE envelope)", "Envelope"),
                          **_errors(404, 422)}},
        ("GET", "/v1/checkpoints/latest"): {
            "operationId": "latest_checkpoint", "summary": "The latest signed checkpoint",
            "security": public,
            "responses": {"200": _json("the signed checkpoint (a DSSE envelope)", "Envelope"),
                          **_errors(404)}},
        ("GET", "/v1/checkpoints/{epoch}"): {
            "operationId": "checkpoint", "summary": "The signed checkpoint of one epoch",
            "security": public, "parameters": [
                {"name": "epoch", "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}],
            "responses": {"200": _json("the signed checkpoint (a DSSE envelope)", "Envelope"),
                          **_errors(404)}},
        ("GET", "/checkpoint"): {
            "operationId": "checkpoint_note",
            "summary": "The latest tree head, a signed note with witness cosignatures",
            "security": public,
            "responses": {"200": _note_response("the latest checkpoint note"),
                          **_errors(503)}},
        ("GET", "/v1/checkpoints/{epoch}/note"): {
            "operationId": "epoch_checkpoint_note",
            "summary": "The checkpoint of one epoch as a signed note",
            "security": public, "parameters": [
                {"name": "epoch", "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}],
            "responses": {"200": _note_response("the epoch's checkpoint note"),
                          **_errors(404)}},
        ("GET", "/v1/proofs/inclusion"): {
            "operationId": "inclusion_proof",
            "summary": "RFC 9162 inclusion proof of an entry in a published tree",
            "security": public, "parameters": [
                {"name": "id", "in": "query", "required": True, "description": "entry id",
                 "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
                _size_param("size", "a tree size, at most the latest published")],
            "responses": {"200": _json("the proof", "InclusionProof"),
                          **_errors(404, 422)}},
        ("GET", "/v1/proofs/consistency"): {
            "operationId": "consistency_proof",
            "summary": "RFC 9162 consistency proof between two published tree sizes",
            "security": public, "parameters": [
                _size_param("from", "the older size, at most `to`"),
                _size_param("to", "the newer size, at most the latest published")],
            "responses": {"200": _json("the proof", "ConsistencyProof"),
                          **_errors(422)}},
        ("GET", "/v1/agents/{agent}/explain"): {
            "operationId": "agent_explain",
            "summary": "How the agent's score was made, interaction by interaction",
            "description": "RFC 9421 signed by the agent, or by an admin key.",
            "security": [{"httpSignature": []}],
            "parameters": [_key_param("agent"), _epoch_param()],
            "responses": {"200": {"description": "the explanation", "content": {
                "application/json": {"schema": {"type": "object"}}}},
                **_errors(401, 403, 404, 422, 503)}},
        ("GET", "/v1/settlements/{epoch}"): {
            "operationId": "settlement",
            "summary": "The signed settlement of the evaluators' pool of one sealed epoch",
            "security": public, "parameters": [
                {"name": "epoch", "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}],
            "responses": {"200": _json("the signed settlement (a DSSE envelope)",
                                       "Envelope"), **_errors(404, 503)}},
        ("GET", "/v1/agents/{agent}/settlement"): {
            "operationId": "agent_settlement",
            "summary": "The agent's own allocation row and its inclusion proof",
            "description": "RFC 9421 signed by the agent, or by an admin key. An evaluator "
                           "with no row gets units 0 and no proof.",
            "security": [{"httpSignature": []}],
            "parameters": [_key_param("agent"), {
                "name": "epoch", "in": "query", "required": True,
                "description": "a sealed epoch with a pool",
                "schema": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1}}],
            "responses": {"200": _json("the row and its proof", "SettlementRow"),
                          **_errors(401, 403, 404, 422, 503)}},
        ("GET", "/v1/agents/{agent}/evaluator"): {
            "operationId": "agent_evaluator",
            "summary": "The agent's record as an evaluator, as of a sealed epoch",
            "description": "RFC 9421 signed by the agent, or by an admin key. Weight, "
                           "provisional, constant rater, verdicts given and ignored; never "
                           "the sample size, TPR or TNR.",
            "security": [{"httpSignature": []}],
            "parameters": [_key_param("agent"), _epoch_param()],
            "responses": {"200": _json("the record", "EvaluatorRecord"),
                          **_errors(401, 403, 404, 422, 503)}},
        ("GET", "/"): {
            "operationId": "index",
            "summary": "The bureau's front page (HTML): agents ranked by score.low",
            "description": "The latest sealed epoch's reports, ranked by the low end of "
                           "the score's interval, 50 a page; `q` keeps the agents whose "
                           "name (case aside) or key id contains it.",
            "security": public, "parameters": [
                {"name": "q", "in": "query", "required": False,
                 "schema": {"type": "string", "maxLength": 200}},
                {"name": "page", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 1, "maximum": 10000}}],
            "responses": {"200": _html_response("the front page"), **_errors(422)}},
        ("GET", "/agents/{agent}"): {
            "operationId": "agent_page", "summary": "An agent's latest report, for people",
            "security": public, "parameters": [
                _key_param("agent")],
            "responses": {"200": _html_response("the page"), "404": {
                "description": "NOT_FOUND: no report yet; a page when Accept names "
                               "text/html, the error shape otherwise",
                "content": {"text/html": {"schema": {"type": "string"}},
                            "application/json": {"schema": {"$ref":
                                                            "#/components/schemas/Error"}}}}}},
    }


def _interop_operations() -> dict[tuple[str, str], Json]:
    """The views for readers outside the bureau (docs/interop.md)."""
    public: list[dict[str, Any]] = []
    needs = ("; 404 NOT_FOUND when the bureau has no BUREAU_PUBLIC_URL")
    servers = {"description": "the MCP registry API's ServerList: servers[] of "
               "{server, _meta}, metadata {count, nextCursor}",
               "content": {"application/json": {"schema": {"type": "object"}}}}
    return {
        ("GET", "/v1/agents/{agent}/erc8004"): {
            "operationId": "agent_erc8004",
            "summary": "ERC-8004 feedback files of the agent's report, with feedbackHash "
                       "and giveFeedback calldata",
            "description": "For each erc8004 link: bureauScore, reachable, responseTime, "
                           "each with confirmed (the link confirmed from the token's side); "
                           "no calldata for an unconfirmed link unless the operator asks. "
                           "404 NOT_FOUND without BUREAU_ETH_ADDRESS, without a report or "
                           "without an erc8004 link" + needs,
            "security": public, "parameters": [_key_param("agent"), _epoch_param()],
            "responses": {"200": _object("the feedback"), **_errors(404, 422, 503)}},
        ("GET", "/v1/erc8004/{file}"): {
            "operationId": "erc8004_file",
            "summary": "One feedback file: the bytes its feedbackHash is keccak-256 of",
            "security": public, "parameters": [
                {"name": "file", "in": "path", "required": True,
                 "description": "<agent>.<epoch>.<registry>.<agent id>.<tag>.json, as "
                                "feedbackURI names it",
                 "schema": {"type": "string", "pattern": "^[A-Za-z0-9_:.-]{1,300}$"}}],
            "responses": {"200": _object("the feedback file"), **_errors(404, 422, 503)}},
        ("GET", "/v1/agents/{agent}/a2a-extension"): {
            "operationId": "agent_a2a_extension",
            "summary": "The A2A agent card extension naming the bureau and the agent",
            "description": "{uri, description, required, params: {bureau, vkey, agent, "
                           "card}}: card, the agent's latest reputation card, once it has "
                           "a report" + needs,
            "security": public, "parameters": [_key_param("agent")],
            "responses": {"200": _object("the extension object"), **_errors(404, 422)}},
        ("GET", "/v0/servers"): {
            "operationId": "mcp_servers",
            "summary": "MCP subregistry view: the servers agents linked, with the "
                       "bureau's reputation _meta",
            "description": "Cursor pagination as the MCP registry API: pass "
                           "metadata.nextCursor as cursor. Each entry shows at most 10 "
                           "claims, with claimsTotal and claimsCursor; a search looks "
                           "through at most 5,000 names a page" + needs,
            "security": public, "parameters": [
                {"name": "cursor", "in": "query", "required": False,
                 "schema": {"type": "string", "maxLength": 200, "pattern": _NO_CONTROL}},
                _query("limit", "at most this many servers", 100, 30, 1),
                {"name": "search", "in": "query", "required": False,
                 "description": "servers whose name contains this",
                 "schema": {"type": "string", "maxLength": 200, "pattern": _NO_CONTROL}}],
            "responses": {"200": servers, **_errors(404, 422, 503)}},
        ("GET", "/v0/servers/{name}"): {
            "operationId": "mcp_server",
            "summary": "One linked MCP server, by its URL-encoded name",
            "description": "At most 50 claims a page, after agent cursor (the "
                           "claimsCursor of the page before)",
            "security": public, "parameters": [
                {"name": "name", "in": "path", "required": True,
                 "description": "the server name, / written %2F",
                 "schema": {"type": "string"}},
                {"name": "cursor", "in": "query", "required": False,
                 "schema": {"type": "string", "maxLength": 100, "pattern": _NO_CONTROL}}],
            "responses": {"200": _object("the MCP registry API's ServerResponse"),
                          **_errors(404, 422, 503)}},
    }


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
        log.warning("route %s %s has no entry in bureau.http.openapi.operations()", method, path)
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
