"""MCP over JSON-RPC, as a reporter reads it: ``tools/call`` results (pure).

Read with the ``mcp`` package's types (``CallToolRequestParams``, ``CallToolResult``,
``ListToolsResult``). One ``tools/call`` is one interaction; everything else
(``initialize``, ``tools/list``, ``ping``, notifications, resources, prompts) is the
session's bookkeeping and makes no fact — though a ``tools/list`` answer teaches the
reporter each tool's ``outputSchema``.

What an answer means (SPEC §4, r3; docs/proxy.md has the table):

* a result with ``isError: true`` claims ``FAILURE``; any other valid result ``SUCCESS``
  (the tool says it did the work);
* a result that is not a ``CallToolResult``, or whose ``structuredContent`` does not
  validate against the tool's declared ``outputSchema`` (or is missing when the tool
  declares one and the result is not an error), is ``well_formed: false``;
* an error answer claims ``DECLINED`` when its code blames the request (parse error,
  invalid request, method not found, invalid params: an unknown tool), else ``FAILURE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import pydantic
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult

from reporters.protocols import jsonrpc, methods
from reporters.protocols.answers import Claimed

TOOLS_CALL = methods.MCP_TOOLS_CALL
TOOLS_LIST = methods.MCP_TOOLS_LIST
#: Methods of MCP clients (the 2025 revisions): what ``protocol = "auto"`` reads as MCP.
METHODS = methods.MCP_METHODS
is_method = methods.is_mcp


is_transport = methods.is_mcp_transport


def tool_name(params: Any) -> str | None:
    """The tool a ``tools/call`` asks for; None when its params are not valid."""
    try:
        return CallToolRequestParams.model_validate(params).name
    except pydantic.ValidationError:
        return None


def output_schemas(result: Any) -> dict[str, Mapping[str, Any] | None] | None:
    """tool name -> its ``outputSchema`` (None: it declares none), from a ``tools/list``
    result; None when the result is not a ``ListToolsResult``."""
    try:
        listed = ListToolsResult.model_validate(result)
    except pydantic.ValidationError:
        return None
    return {t.name: t.output_schema for t in listed.tools}


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    well_formed: bool
    claimed: Claimed | None
    why: str = ""


def judge_result(result: Any, schema: jsonschema.protocols.Validator | None) -> ToolOutcome:
    """A ``tools/call`` result against the tool's compiled ``outputSchema`` (None: none
    declared, or not known; :func:`compile_output_schema` makes one)."""
    try:
        got = CallToolResult.model_validate(result)
    except pydantic.ValidationError:
        return ToolOutcome(False, None, "not a CallToolResult")
    claim: Claimed = "FAILURE" if got.is_error else "SUCCESS"
    if schema is None or got.is_error:
        return ToolOutcome(True, claim)
    if got.structured_content is None:
        return ToolOutcome(False, claim, "no structuredContent for a declared outputSchema")
    if not schema.is_valid(got.structured_content):
        return ToolOutcome(False, claim, "structuredContent breaks the outputSchema")
    return ToolOutcome(True, claim)


def judge_error(code: int) -> ToolOutcome:
    return ToolOutcome(True, jsonrpc.error_claim(code), f"JSON-RPC error {code}")


def compile_output_schema(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        # A tool that declares a broken schema promised nothing checkable.
        return jsonschema.Draft202012Validator({})
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator
