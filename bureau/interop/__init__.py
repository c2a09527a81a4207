"""The bureau's reports in the formats readers outside it already use (docs/interop.md):
ERC-8004 feedback files (:mod:`bureau.interop.erc8004`), an MCP subregistry view
(:mod:`bureau.interop.mcp_view`), and the A2A card extension
(:mod:`reporters.interop`, shared with the client). Pure functions of signed reports and
the bureau's configuration; :mod:`bureau.interop.linked` reads the reports they need."""
