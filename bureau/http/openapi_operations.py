"""The OpenAPI operations of the bureau's own routes (bureau.http.openapi), one function
per group of routes, with the views for other registries (bureau.http.openapi_interop)
and the portable reads (bureau.http.openapi_portable). Pure."""

from __future__ import annotations

from bureau.http.openapi_interop import interop_operations
from bureau.http.openapi_parts import (
    Json,
    Operations,
    epoch_param,
    errors,
    key_param,
    query_param,
    ref,
)
from bureau.http.openapi_parts import json_body as _json
from bureau.http.openapi_portable import portable_operations
from bureau.http.params import KEY_ID


def operations() -> Operations:
    """Every operation the service can describe, keyed by (method, path)."""
    return {**interop_operations(), **portable_operations(), **_intake(), **_the_bureau(),
            **_signed_documents(), **_proofs(), **_signed_reads(), **_pages()}


def _intake() -> Operations:
    """Submitting evidence: one envelope, or a batch of them."""
    public: list[Json] = []
    ndjson = {"description": "one JSON object a line, in input order", "content": {
        "application/x-ndjson": {"schema": {"type": "string"}, "x-line-schema": {
            "oneOf": [ref("BatchAccepted"), ref("BatchRejected")]}}}}
    return {
        ("POST", "/v1/evidence"): {
            "operationId": "submit", "summary": "Submit one envelope", "security": public,
            "requestBody": {"required": True, "content": {
                "application/json": {"schema": ref("Envelope")}}},
            "responses": {"201": _json("admitted now", "IntakeResult"),
                          "200": _json("admitted before (same submission)", "IntakeResult"),
                          **errors(400, 413, 415, 422, 503)}},
        ("POST", "/v1/evidence/batch"): {
            "operationId": "submit_batch", "summary": "Submit up to 1,000 envelopes",
            "security": public,
            "requestBody": {"required": True, "content": {"application/x-ndjson": {
                "schema": {"type": "string"}, "x-line-schema": ref("Envelope")}}},
            "responses": {"200": ndjson, **errors(413, 415, 503)}},
    }


def _the_bureau() -> Operations:
    """What the bureau says of itself: its key and settings, its policies, this
    document, its health."""
    public: list[Json] = []
    return {
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
            "responses": {"200": _json("the policy", "Policy"), **errors(404, 422)}},
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
                                              **errors(503)}},
    }


def _signed_documents() -> Operations:
    """What the bureau signs for anyone: reports, checkpoints (JSON and notes), settlements."""
    public: list[Json] = []
    return {
        ("GET", "/v1/agents/{agent}/report"): {
            "operationId": "agent_report", "summary": "The agent's bureau-signed report",
            "security": public, "parameters": [key_param("agent"), epoch_param()],
            "responses": {"200": _json("the signed report (a DSSE envelope)", "Envelope"),
                          **errors(404, 422)}},
        ("GET", "/v1/checkpoints/latest"): {
            "operationId": "latest_checkpoint", "summary": "The latest signed checkpoint",
            "security": public,
            "responses": {"200": _json("the signed checkpoint (a DSSE envelope)", "Envelope"),
                          **errors(404)}},
        ("GET", "/v1/checkpoints/{epoch}"): {
            "operationId": "checkpoint", "summary": "The signed checkpoint of one epoch",
            "security": public, "parameters": [
                {"name": "epoch", "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}],
            "responses": {"200": _json("the signed checkpoint (a DSSE envelope)", "Envelope"),
                          **errors(404)}},
        ("GET", "/checkpoint"): {
            "operationId": "checkpoint_note",
            "summary": "The latest tree head, a signed note with witness cosignatures",
            "security": public,
            "responses": {"200": _note_response("the latest checkpoint note"),
                          **errors(503)}},
        ("GET", "/v1/checkpoints/{epoch}/note"): {
            "operationId": "epoch_checkpoint_note",
            "summary": "The checkpoint of one epoch as a signed note",
            "security": public, "parameters": [
                {"name": "epoch", "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}],
            "responses": {"200": _note_response("the epoch's checkpoint note"),
                          **errors(404)}},
        ("GET", "/v1/settlements/{epoch}"): {
            "operationId": "settlement",
            "summary": "The signed settlement of the evaluators' pool of one sealed epoch",
            "security": public, "parameters": [
                {"name": "epoch", "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}],
            "responses": {"200": _json("the signed settlement (a DSSE envelope)",
                                       "Envelope"), **errors(404, 503)}},
    }


def _proofs() -> Operations:
    """Merkle proofs against published tree heads."""
    public: list[Json] = []
    return {
        ("GET", "/v1/proofs/inclusion"): {
            "operationId": "inclusion_proof",
            "summary": "RFC 9162 inclusion proof of an entry in a published tree",
            "security": public, "parameters": [
                {"name": "id", "in": "query", "required": True, "description": "entry id",
                 "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
                _size_param("size", "a tree size, at most the latest published")],
            "responses": {"200": _json("the proof", "InclusionProof"),
                          **errors(404, 422)}},
        ("GET", "/v1/proofs/consistency"): {
            "operationId": "consistency_proof",
            "summary": "RFC 9162 consistency proof between two published tree sizes",
            "security": public, "parameters": [
                _size_param("from", "the older size, at most `to`"),
                _size_param("to", "the newer size, at most the latest published")],
            "responses": {"200": _json("the proof", "ConsistencyProof"),
                          **errors(422)}},
    }


def _signed_reads() -> Operations:
    """What a party reads of its own, with RFC 9421 signed requests."""
    return {
        ("GET", "/v1/agents/{agent}/entries"): _file_operation(
            "agent", "Every entry about the agent, and its refusals"),
        ("GET", "/v1/reporters/{reporter}/entries"): _file_operation(
            "reporter", "What the reporter submitted, and its refusals"),
        ("GET", "/v1/agents/{agent}/explain"): {
            "operationId": "agent_explain",
            "summary": "How the agent's score was made, interaction by interaction",
            "description": "RFC 9421 signed by the agent, or by an admin key.",
            "security": [{"httpSignature": []}],
            "parameters": [key_param("agent"), epoch_param()],
            "responses": {"200": {"description": "the explanation", "content": {
                "application/json": {"schema": {"type": "object"}}}},
                **errors(401, 403, 404, 422, 503)}},
        ("GET", "/v1/agents/{agent}/settlement"): {
            "operationId": "agent_settlement",
            "summary": "The agent's own allocation row and its inclusion proof",
            "description": "RFC 9421 signed by the agent, or by an admin key. An evaluator "
                           "with no row gets units 0 and no proof.",
            "security": [{"httpSignature": []}],
            "parameters": [key_param("agent"), {
                "name": "epoch", "in": "query", "required": True,
                "description": "a sealed epoch with a pool",
                "schema": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1}}],
            "responses": {"200": _json("the row and its proof", "SettlementRow"),
                          **errors(401, 403, 404, 422, 503)}},
        ("GET", "/v1/agents/{agent}/evaluator"): {
            "operationId": "agent_evaluator",
            "summary": "The agent's record as an evaluator, as of a sealed epoch",
            "description": "RFC 9421 signed by the agent, or by an admin key. Weight, "
                           "provisional, constant rater, verdicts given and ignored; never "
                           "the sample size, TPR or TNR.",
            "security": [{"httpSignature": []}],
            "parameters": [key_param("agent"), epoch_param()],
            "responses": {"200": _json("the record", "EvaluatorRecord"),
                          **errors(401, 403, 404, 422, 503)}},
    }


def _pages() -> Operations:
    """The pages for people (HTML)."""
    public: list[Json] = []
    return {
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
            "responses": {"200": _html_response("the front page"), **errors(422)}},
        ("GET", "/agents/{agent}"): {
            "operationId": "agent_page", "summary": "An agent's latest report, for people",
            "security": public, "parameters": [
                key_param("agent")],
            "responses": {"200": _html_response("the page"), "404": {
                "description": "NOT_FOUND: no report yet; a page when Accept names "
                               "text/html, the error shape otherwise",
                "content": {"text/html": {"schema": {"type": "string"}},
                            "application/json": {"schema": {"$ref":
                                                            "#/components/schemas/Error"}}}}}},
    }


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
            query_param("after", "entries with seq greater than this", cursor, 0, 0),
            query_param("limit", "at most this many entries (and refusals)", 1000, 100, 1),
            query_param("refusals_after", "refusals with ref greater than this", cursor, 0, 0),
        ],
        "responses": {"200": _json("one page of the file", "EntriesPage"),
                      **errors(401, 403, 404, 422, 503)},
    }
