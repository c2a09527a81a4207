"""Pieces of the OpenAPI document's operations (bureau.http.openapi): references to the
components, JSON answers, the error answers, the common parameters. Pure."""

from __future__ import annotations

from typing import Any

from bureau.http.params import KEY_ID

Json = dict[str, Any]
#: operations keyed by (method, path template)
Operations = dict[tuple[str, str], Json]

#: a query text that goes to the database: no control character (PostgreSQL refuses a NUL)
NO_CONTROL = "^[^\\x00-\\x1f\\x7f]*$"


def ref(name: str) -> Json:
    return {"$ref": f"#/components/schemas/{name}"}


def json_body(description: str, name: str) -> Json:
    return {"description": description, "content": {"application/json": {"schema": ref(name)}}}


def errors(*statuses: int) -> dict[str, Json]:
    words = {400: "the body is not JSON", 401: "UNAUTHENTICATED: no valid RFC 9421 signature",
             403: "FORBIDDEN: signed by a key that may not read this",
             404: "NOT_FOUND", 413: "TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE",
             422: "refused; `code` says why and `path` where",
             503: "UNAVAILABLE: retry after Retry-After seconds; nothing was written"}
    return {str(s): json_body(words[s], "Error") for s in statuses}


def key_param(name: str) -> Json:
    return {"name": name, "in": "path", "required": True, "description": "a key id",
            "schema": {"type": "string", "pattern": f"^{KEY_ID}$"}}


def epoch_param() -> Json:
    return {"name": "epoch", "in": "query", "required": False,
            "description": "an epoch number; default: the latest with complete reports",
            "schema": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1}}


def object_body(description: str) -> Json:
    return {"description": description,
            "content": {"application/json": {"schema": {"type": "object"}}}}


def query_param(name: str, description: str, maximum: int, default: int,
                minimum: int) -> Json:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": {"type": "integer", "minimum": minimum, "maximum": maximum,
                       "default": default}}
