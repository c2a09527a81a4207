"""The OpenAPI operations of the views for readers outside the bureau (docs/interop.md):
ERC-8004 feedback, the A2A card extension, the MCP subregistry view. Pure."""

from __future__ import annotations

from bureau.http.openapi_parts import (
    NO_CONTROL,
    Json,
    Operations,
    epoch_param,
    errors,
    key_param,
    object_body,
    query_param,
)

#: what each of these views answers without the bureau's public address
_NEEDS_PUBLIC_URL = "; 404 NOT_FOUND when the bureau has no BUREAU_PUBLIC_URL"


def interop_operations() -> Operations:
    return {**_erc8004(), **_a2a(), **_mcp()}


def _erc8004() -> Operations:
    """ERC-8004 feedback: an agent's files with their calldata, and each file's bytes."""
    public: list[Json] = []
    return {
        ("GET", "/v1/agents/{agent}/erc8004"): {
            "operationId": "agent_erc8004",
            "summary": "ERC-8004 feedback files of the agent's report, with feedbackHash "
                       "and giveFeedback calldata",
            "description": "For each erc8004 link: bureauScore, reachable, responseTime, "
                           "each with confirmed (the link confirmed from the token's side); "
                           "no calldata for an unconfirmed link unless the operator asks. "
                           "404 NOT_FOUND without BUREAU_ETH_ADDRESS, without a report or "
                           "without an erc8004 link" + _NEEDS_PUBLIC_URL,
            "security": public, "parameters": [key_param("agent"), epoch_param()],
            "responses": {"200": object_body("the feedback"), **errors(404, 422, 503)}},
        ("GET", "/v1/erc8004/{file}"): {
            "operationId": "erc8004_file",
            "summary": "One feedback file: the bytes its feedbackHash is keccak-256 of",
            "security": public, "parameters": [
                {"name": "file", "in": "path", "required": True,
                 "description": "<agent>.<epoch>.<registry>.<agent id>.<tag>.json, as "
                                "feedbackURI names it",
                 "schema": {"type": "string", "pattern": "^[A-Za-z0-9_:.-]{1,300}$"}}],
            "responses": {"200": object_body("the feedback file"), **errors(404, 422, 503)}},
    }


def _a2a() -> Operations:
    """The A2A agent card extension."""
    public: list[Json] = []
    return {
        ("GET", "/v1/agents/{agent}/a2a-extension"): {
            "operationId": "agent_a2a_extension",
            "summary": "The A2A agent card extension naming the bureau and the agent",
            "description": "{uri, description, required, params: {bureau, vkey, agent, "
                           "card}}: card, the agent's latest reputation card, once it has "
                           "a report" + _NEEDS_PUBLIC_URL,
            "security": public, "parameters": [key_param("agent")],
            "responses": {"200": object_body("the extension object"), **errors(404, 422)}},
    }


def _mcp() -> Operations:
    """The MCP subregistry view: the servers agents linked, and one of them."""
    public: list[Json] = []
    servers = {"description": "the MCP registry API's ServerList: servers[] of "
               "{server, _meta}, metadata {count, nextCursor}",
               "content": {"application/json": {"schema": {"type": "object"}}}}
    return {
        ("GET", "/v0/servers"): {
            "operationId": "mcp_servers",
            "summary": "MCP subregistry view: the servers agents linked, with the "
                       "bureau's reputation _meta",
            "description": "Cursor pagination as the MCP registry API: pass "
                           "metadata.nextCursor as cursor. Each entry shows at most 10 "
                           "claims, with claimsTotal and claimsCursor; a search looks "
                           "through at most 5,000 names a page" + _NEEDS_PUBLIC_URL,
            "security": public, "parameters": [
                {"name": "cursor", "in": "query", "required": False,
                 "schema": {"type": "string", "maxLength": 200, "pattern": NO_CONTROL}},
                query_param("limit", "at most this many servers", 100, 30, 1),
                {"name": "search", "in": "query", "required": False,
                 "description": "servers whose name contains this",
                 "schema": {"type": "string", "maxLength": 200, "pattern": NO_CONTROL}}],
            "responses": {"200": servers, **errors(404, 422, 503)}},
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
                 "schema": {"type": "string", "maxLength": 100, "pattern": NO_CONTROL}}],
            "responses": {"200": object_body("the MCP registry API's ServerResponse"),
                          **errors(404, 422, 503)}},
    }
