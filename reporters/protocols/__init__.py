"""What the protocols agents speak mean for a fact (SPEC §4, r3, informative).

One place for the outcome mapping, used by the reporting proxy and by the prober:

* :mod:`.jsonrpc` — a JSON-RPC 2.0 request or answer, and which error codes blame the
  request (a decline) rather than the agent (a failure);
* :mod:`.a2a` — A2A 0.3 and 1.0 methods, answers and task states, read with a2a-sdk's
  own types (the ``a2a`` extra);
* :mod:`.mcp` — MCP ``tools/call`` results against the tool's ``outputSchema``, read
  with the ``mcp`` package's types (the ``mcp`` extra);
* :mod:`.sse` — server-sent events, read as they arrive.

Pure: no I/O, no clock. docs/proxy.md, "Protocols", has the tables.
"""
