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
  invalid request, method not found, invalid params: an unknown tool), else ``FAILURE``;
* a call that is the caller's mistake by what the server declared (:func:`callers_mistake`:
  an unknown tool, arguments the tool's ``inputSchema`` refuses) and that the server
  answered with ``isError: true`` — as real servers do, never ``-32602`` — claims
  ``DECLINED``: the tool refused the input, it did not fail (SPEC §4, r4).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import pydantic
import referencing.exceptions
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
)

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


@dataclass(frozen=True, slots=True)
class Declared:
    """What a tool declares in a ``tools/list`` answer: its argument and result schemas."""

    input_schema: Mapping[str, Any] | None
    output_schema: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Page:
    """One ``tools/list`` answer: what each tool on it declares, and the cursor of the
    next page (None: this is the last)."""

    tools: Mapping[str, Declared]
    next_cursor: str | None


def listed_page(result: Any) -> Page | None:
    """The page of a ``tools/list`` result; None when the result is not a
    ``ListToolsResult``."""
    try:
        listed = ListToolsResult.model_validate(result)
    except pydantic.ValidationError:
        return None
    return Page({t.name: Declared(t.input_schema, t.output_schema) for t in listed.tools},
                listed.next_cursor)


def page_asked(params: Any) -> str | None:
    """The cursor a ``tools/list`` request asks for; None: the first page (or params
    that are not a paginated request's: read as asking from the start)."""
    try:
        return None if params is None else PaginatedRequestParams.model_validate(params).cursor
    except pydantic.ValidationError:
        return None


def callers_mistake(params: Any, listed: Collection[str],
                    input_schema: Callable[[str], jsonschema.protocols.Validator | None],
                    *, all_listed: bool) -> str | None:
    """Why a ``tools/call`` is the caller's mistake by what the server declared (SPEC §4,
    r4): params that are not a tool call, a tool the server does not list (said only
    when ``all_listed``: ``listed`` is a whole listing, every page of it), arguments its
    ``inputSchema`` refuses (``input_schema``: a listed tool's, compiled; None when it
    declares none). None: nothing wrong with the call, as far as the declarations say."""
    try:
        asked = CallToolRequestParams.model_validate(params)
    except pydantic.ValidationError:
        return "not the params of a tools/call"
    if asked.name not in listed:
        return f"the server lists no tool {asked.name!r}" if all_listed else None
    schema = input_schema(asked.name)
    if schema is not None and not conforms(schema, asked.arguments or {}):
        return f"arguments that {asked.name!r}'s inputSchema refuses"
    return None


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
    if not conforms(schema, got.structured_content):
        return ToolOutcome(False, claim, "structuredContent breaks the outputSchema")
    return ToolOutcome(True, claim)


def judge_error(code: int) -> ToolOutcome:
    return ToolOutcome(True, jsonrpc.error_claim(code), f"JSON-RPC error {code}")


def refused(outcome: ToolOutcome, mistake: str | None) -> ToolOutcome:
    """``outcome`` of a call that was the caller's ``mistake``: a failure the server
    answered it with is the tool declining the input."""
    if mistake is None or outcome.claimed != "FAILURE":
        return outcome
    return ToolOutcome(outcome.well_formed, "DECLINED", f"{outcome.why}; {mistake}".strip("; "))


def conforms(schema: jsonschema.protocols.Validator, instance: Any) -> bool:
    """Whether ``instance`` is valid against a tool's compiled schema. A schema that is
    valid JSON Schema but cannot be applied — a ``$ref`` to nowhere or to another
    document (nothing is fetched), one that refers to itself without end — promised
    nothing checkable, as a broken one (:func:`compile_output_schema`): everything
    conforms to it. (Such a schema raised out of the proxy's handler: the caller got a
    500 instead of the tool's answer, and no fact was made.)"""
    try:
        return bool(schema.is_valid(instance))
    except (referencing.exceptions.Unresolvable, RecursionError):
        return True


def compile_output_schema(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for a tool's declared schema (``outputSchema`` or ``inputSchema``)."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        # A tool that declares a broken schema promised nothing checkable.
        return jsonschema.Draft202012Validator({})
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator
