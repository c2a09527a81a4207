"""Where readers outside the bureau look for an agent, and how an agent's key id is found
there (docs/interop.md).

* The **A2A agent card extension**: an agent adds :func:`card_extension` (served ready
  by ``GET /v1/agents/{agent}/a2a-extension``) to its card's
  ``capabilities.extensions``. Its ``params`` name the bureau (``bureau``: its URL,
  ``vkey``: its note verifier key) and the agent (``agent``: its key id), and carry the
  agent's latest reputation card (``card``) once it has a report.
* :func:`card_key_ids` — the key ids a card names: in that extension, or as the ``kid``
  of one of its ``signatures`` (a JWS header). :func:`card_names_key` says whether a card
  names one given key id: the other direction of an ``a2a`` link (``bureau-check
  links``). :func:`card_key_mismatch` is the check a reporter that reads cards makes
  against the key id of the route it reports under.
* :func:`meta_names_key` — whether an MCP registry entry's ``_meta`` names a key id: the
  other direction of an ``mcp`` link.

Pure functions over parsed JSON: no I/O. A card is untrusted input: anything that is not
the expected shape names nothing, and never raises.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping
from typing import Any

#: The extension's URI. A URN rather than a URL: it names the protocol of
#: docs/interop.md, not a page any one bureau hosts.
REPUTATION_EXTENSION_URI = "urn:agent-reputation-bureau:a2a:reputation:v1"
#: where an agent card is served (A2A 0.3 and 1.0)
WELL_KNOWN_CARD = "/.well-known/agent-card.json"


def card_extension(bureau_url: str, vkey: str, agent: str,
                   card: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The object an agent puts in its card's ``capabilities.extensions``; with the
    agent's reputation ``card`` (``GET /v1/agents/{agent}/card``: at most 4,000 bytes,
    verifiable offline with ``bureau-check card``) in ``params.card``."""
    params: dict[str, Any] = {"bureau": bureau_url.rstrip("/"), "vkey": vkey, "agent": agent}
    if card is not None:
        params["card"] = dict(card)
    return {
        "uri": REPUTATION_EXTENSION_URI,
        "description": "This agent's reputation at an Agent Reputation Bureau: its signed "
                       "report is at <bureau>/v1/agents/<agent>/report; params.card, when "
                       "present, verifies offline (bureau-check card).",
        "required": False,
        "params": params,
    }


def _extensions(card: Any) -> Iterator[Mapping[str, Any]]:
    caps = card.get("capabilities") if isinstance(card, Mapping) else None
    exts = caps.get("extensions") if isinstance(caps, Mapping) else None
    if isinstance(exts, list):
        yield from (e for e in exts if isinstance(e, Mapping))


def extension_key_ids(card: Any) -> list[str]:
    """The agent key ids the card's bureau extensions name, in card order."""
    out = []
    for ext in _extensions(card):
        params = ext.get("params")
        if ext.get("uri") == REPUTATION_EXTENSION_URI and isinstance(params, Mapping):
            agent = params.get("agent")
            if isinstance(agent, str):
                out.append(agent)
    return out


def _b64url_json(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError):
        return None


def signature_key_ids(card: Any) -> list[str]:
    """The ``kid`` of each of the card's JWS ``signatures`` (protected header first,
    then the unprotected ``header``). Whether the signature verifies is not checked:
    naming the key is the card host's claim, as the extension is."""
    sigs = card.get("signatures") if isinstance(card, Mapping) else None
    out = []
    for sig in sigs if isinstance(sigs, list) else ():
        if not isinstance(sig, Mapping):
            continue
        for header in (_b64url_json(sig.get("protected")), sig.get("header")):
            kid = header.get("kid") if isinstance(header, Mapping) else None
            if isinstance(kid, str):
                out.append(kid)
    return out


def card_key_ids(card: Any) -> list[str]:
    """Every key id the card names: its bureau extensions', then its signatures'."""
    return extension_key_ids(card) + signature_key_ids(card)


def card_names_key(card: Any, keyid: str) -> bool:
    """Does this agent card name ``keyid``, in the bureau extension or a signature?"""
    return keyid in card_key_ids(card)


def card_key_mismatch(card: Any, route_key: str) -> str | None:
    """For a reporter that reads an agent's card on a route it reports under
    ``route_key``: None when the card carries no bureau extension or one naming
    ``route_key``; otherwise why not (the card's extension names another agent, so the
    facts would be about a key the card does not claim)."""
    named = extension_key_ids(card)
    if not named or route_key in named:
        return None
    return (f"the agent card's bureau extension names {', '.join(named)}, not the "
            f"route's key {route_key}")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def meta_names_key(entry: Any, keyid: str) -> bool:
    """Does an MCP registry answer name ``keyid`` in a ``_meta``: the server.json's own
    (``server._meta``, where a publisher's ``publisher-provided`` data sits), the
    answer's, or — for a bare server.json — the top-level one?"""
    if not isinstance(entry, Mapping):
        return False
    metas = [entry.get("_meta")]
    server = entry.get("server")
    if isinstance(server, Mapping):
        metas.append(server.get("_meta"))
    return any(s == keyid for meta in metas for s in _strings(meta))


def erc8004_lookup(registry: str, agent_id: str, keyid: str) -> str:
    """What a reader looks up on chain to confirm an ``erc8004`` link (nothing here
    talks to a chain)."""
    _, chain, address = registry.split(":")
    return (f"on chain {chain}, call tokenURI({agent_id}) on the Identity Registry "
            f"{address}; the registration file it points to should list {keyid} among "
            "its services (endpoints), and its registrations should name "
            f"{{agentRegistry: {registry}, agentId: {agent_id}}}")


def registration_confirms(doc: Any, registry: str, agent_id: str, keyid: str) -> str | None:
    """None when ``doc`` — an ERC-8004 registration file, the JSON the token's
    ``tokenURI`` points to — confirms the link: its ``registrations`` name
    ``{agentRegistry: registry, agentId: agent_id}`` and its ``services`` (or the older
    ``endpoints``) name ``keyid``. Else what is missing, in a line."""
    if not isinstance(doc, Mapping):
        return "not a registration file (a JSON object is needed)"
    wanted = registry.lower()
    registrations = doc.get("registrations")
    if not isinstance(registrations, list) or not any(
            isinstance(r, Mapping) and str(r.get("agentRegistry", "")).lower() == wanted
            and str(r.get("agentId")) == agent_id for r in registrations):
        return f"its registrations do not name {{agentRegistry: {registry}, agentId: {agent_id}}}"
    services = [*(doc.get("services") or []), *(doc.get("endpoints") or [])] if all(
        isinstance(doc.get(k) or [], list) for k in ("services", "endpoints")) else []
    if not any(s == keyid for s in _strings(services)):
        return f"its services do not name {keyid}"
    return None
