"""The JSON-RPC method names of A2A and MCP, without either protocol's package.

Which protocol a call speaks is known from its method name alone, so a proxy installed
without the ``a2a`` or ``mcp`` extra still recognises such a call: it forwards it without
reading it (and without a fact) instead of mistaking a protocol's plumbing, an MCP
``initialize`` say, for an interaction (docs/proxy.md, "Protocols"). Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

Kind = Literal["send", "stream", "get", "cancel", "resubscribe", "other"]
Version = Literal["0.3", "1.0"]

#: A2A methods a fact follows, by name in each version: (what it does, version).
A2A_METHODS: Mapping[str, tuple[Kind, Version]] = {
    "message/send": ("send", "0.3"), "message/stream": ("stream", "0.3"),
    "tasks/get": ("get", "0.3"), "tasks/cancel": ("cancel", "0.3"),
    "tasks/resubscribe": ("resubscribe", "0.3"),
    "SendMessage": ("send", "1.0"), "SendStreamingMessage": ("stream", "1.0"),
    "GetTask": ("get", "1.0"), "CancelTask": ("cancel", "1.0"),
    "SubscribeToTask": ("resubscribe", "1.0"),
}
#: A2A methods that are bookkeeping, not work: forwarded, no fact.
A2A_OTHER_METHODS = frozenset({
    "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard", "ListTasks", "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"})

MCP_TOOLS_CALL = "tools/call"
MCP_TOOLS_LIST = "tools/list"
#: Methods of MCP clients (the 2025 revisions): what ``protocol = "auto"`` reads as MCP.
MCP_METHODS = frozenset({
    "initialize", "ping", MCP_TOOLS_CALL, MCP_TOOLS_LIST, "resources/list",
    "resources/read", "resources/templates/list", "resources/subscribe",
    "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete",
    "logging/setLevel", "tasks/list", "tasks/result"})


def is_a2a(name: str) -> bool:
    return name in A2A_METHODS or name in A2A_OTHER_METHODS


def is_mcp(name: str) -> bool:
    return name in MCP_METHODS or name.startswith("notifications/")


def is_mcp_transport(method: str, headers: Mapping[str, str]) -> bool:
    """A request of MCP's streamable HTTP transport itself, not a JSON-RPC message: the
    GET that opens a session's stream of server messages, the DELETE that ends a
    session. Both name the session (``Mcp-Session-Id``)."""
    if "Mcp-Session-Id" not in headers:
        return False
    return method == "DELETE" or (
        method == "GET" and "text/event-stream" in headers.get("Accept", ""))


def protocol_of_method(name: str) -> Literal["a2a", "mcp"] | None:
    """The protocol a JSON-RPC method belongs to (A2A first: their names do not meet)."""
    if is_a2a(name):
        return "a2a"
    return "mcp" if is_mcp(name) else None
