"""What an MCP route's server declares, as the proxy keeps it (reporters.proxy.mcp_tools):
schemas compiled when a call first needs them, once for each content, however often
the tools are listed again (every client session lists them at its start)."""

from __future__ import annotations

import time

from reporters.protocols import mcp
from reporters.proxy.mcp_tools import ToolSchemas
from reporters.proxy.metrics import ProxyMetrics

ARGS = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
SUM = {"type": "object", "properties": {"sum": {"type": "integer"}}}


def page(**tools: mcp.Declared) -> mcp.Page:
    return mcp.Page(tools, None)


def test_a_schema_listed_again_is_not_compiled_again() -> None:
    schemas = ToolSchemas(ProxyMetrics(), time.monotonic)
    schemas.learn("/t", page(add=mcp.Declared(ARGS, SUM)), None)
    first = schemas.output_schema("/t", "add")
    # another session lists the same tools: equal schemas, new objects
    schemas.learn("/t", page(add=mcp.Declared(dict(ARGS), dict(SUM)),
                             twin=mcp.Declared(None, dict(SUM))), None)
    assert first is not None
    assert schemas.output_schema("/t", "add") is first
    assert schemas.output_schema("/t", "twin") is first  # the same content
    assert schemas.callers_mistake("/t", {"name": "add", "arguments": {}}) == \
        "arguments that 'add''s inputSchema refuses"
    assert schemas.callers_mistake("/t", {"name": "add", "arguments": {"a": 1}}) is None
    # a tool whose schema changed is judged by the new one
    schemas.learn("/t", page(add=mcp.Declared(ARGS, {"type": "string"})), None)
    assert schemas.output_schema("/t", "add") is not first
