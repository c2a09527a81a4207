"""An agent's links to its identities elsewhere (SPEC §3 r3): its ERC-8004 registration,
its A2A agent card, its MCP registry entry.

A link is the agent's own claim: the bureau checks its form only, and a reader confirms
the other direction (``bureau-check links``, docs/interop.md). Every failure of one item
is ``SCHEMA`` at the item (``/links/3``), never at a field inside it: an item is one
claim, right or wrong as a whole. *(r4)* The limits are held at the item too: a link
equal to an earlier one is ``SCHEMA`` at the later item, a 17th item at ``/links/16``,
and an ``agent_id`` above 2^256 - 1 (not a uint256 token id) at the item's ``/agent_id``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import pydantic
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WrapValidator,
    field_validator,
)


class ItemRuleError(ValueError):
    """A link limit broken at a place inside the list: ``field`` is the path below
    ``/links`` the refusal names (``"16"``, ``"3"``, ``"0/agent_id"``), read by
    :func:`reporters.models.validate_payload` as it reads a cross-field rule's field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class _Claim(BaseModel):
    """A link: strict, frozen, no unknown fields (as every payload model)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


#: links on one enrollment or amendment: at most this many, all distinct
MAX_LINKS = 16
#: ``eip155:<chain id>:<0x + 40 hex>``: the chain id decimal without a leading zero, at
#: most 32 digits (CAIP-2's limit on a chain reference); the address in either case (its
#: EIP-55 checksum is not checked: the form is what the protocol fixes)
_REGISTRY_RE = re.compile(r"eip155:[1-9][0-9]{0,31}:0x[0-9a-fA-F]{40}")
#: an ERC-721 token id as decimal text: at most 78 digits (2^256 - 1 has 78), no
#: leading zero
_AGENT_ID_RE = re.compile(r"0|[1-9][0-9]{0,77}")
#: decimal text without a leading zero, of any length: a token id in the right form whose
#: value may still be out of range
_DECIMAL_RE = re.compile(r"0|[1-9][0-9]*")
#: the largest ERC-721 token id (a uint256)
MAX_AGENT_ID = 2**256 - 1
MAX_CARD_URL = 2048
#: the characters RFC 3986 allows in a URL (unreserved, reserved, percent escapes)
_URL_CHARS_RE = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
#: the MCP registry's server name: a reverse-DNS namespace, one slash, a name
_MCP_NAME_RE = re.compile(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+")
MAX_MCP_NAME = 200


def check_card_url(url: str) -> None:
    """``ValueError`` unless ``url`` is an ``https://`` URL of at most 2048 characters,
    printable ASCII without spaces, with a host and no user name or password."""
    if len(url) > MAX_CARD_URL:
        raise ValueError(f"an agent card URL is at most {MAX_CARD_URL} characters")
    if not url.startswith("https://") or not _URL_CHARS_RE.fullmatch(url):
        raise ValueError("an agent card URL is https://, in printable ASCII without spaces")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port that is not a number in range
    except ValueError:
        raise ValueError("not a URL") from None
    if not parts.hostname or "@" in parts.netloc:
        raise ValueError("an agent card URL names a host, and no user name or password")


class Erc8004Link(_Claim):
    """The agent's ERC-8004 identity: the Identity Registry (CAIP-10 style
    ``eip155:<chain id>:<address>``) and the ERC-721 token id (decimal text)."""

    kind: Literal["erc8004"]
    registry: Annotated[str, Field(pattern=_REGISTRY_RE.pattern + "$",
                                   max_length=7 + 32 + 1 + 42)]
    agent_id: Annotated[str, Field(pattern="^(" + _AGENT_ID_RE.pattern + ")$")]


class A2aLink(_Claim):
    """The agent's A2A agent card, by its https URL."""

    kind: Literal["a2a"]
    card: Annotated[str, Field(min_length=9, max_length=MAX_CARD_URL)]

    @field_validator("card")
    @classmethod
    def _https(cls, value: str) -> str:
        check_card_url(value)
        return value


class McpLink(_Claim):
    """The agent's MCP server, by its name in the MCP registry
    (``io.github.user/server``)."""

    kind: Literal["mcp"]
    server: Annotated[str, Field(pattern="^" + _MCP_NAME_RE.pattern + "$", min_length=3,
                                 max_length=MAX_MCP_NAME)]


_LINK_KINDS: dict[str, type[_Claim]] = {"erc8004": Erc8004Link, "a2a": A2aLink, "mcp": McpLink}


def _one_claim(value: Any, handler: Any) -> Any:
    """Validate one link, and turn whatever is wrong with it into one error at the item
    (pydantic would name the field inside it, or the union member it tried)."""
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    if not isinstance(kind, str) or kind not in _LINK_KINDS:
        raise ValueError("a link is an object whose kind is erc8004, a2a or mcp")
    if kind == "erc8004" and isinstance(value, dict) and _out_of_range(value.get("agent_id")):
        raise ItemRuleError("agent_id", f"agent_id is at most 2^256 - 1 ({MAX_AGENT_ID}): "
                            "an ERC-721 token id is a uint256")
    try:
        return _LINK_KINDS[kind].model_validate(value)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in first["loc"])
        why = first["msg"].removeprefix("Value error, ")
        raise ValueError(f"not a valid {kind} link: {where + ': ' if where else ''}{why}"
                         ) from None


Link = Annotated[Erc8004Link | A2aLink | McpLink, Field(discriminator="kind"),
                 WrapValidator(_one_claim)]


def _out_of_range(agent_id: Any) -> bool:
    """Is ``agent_id`` decimal text whose value is above a uint256? (79 digits or more
    always is; the length is looked at first, so no huge number is ever built.)"""
    if not isinstance(agent_id, str) or not _DECIMAL_RE.fullmatch(agent_id):
        return False
    return len(agent_id) > len(str(MAX_AGENT_ID)) or int(agent_id) > MAX_AGENT_ID


def _at_most_16(links: Any) -> Any:
    """Before the items are read: a 17th item is refused where it stands, and no item
    past it is validated."""
    if isinstance(links, list) and len(links) > MAX_LINKS:
        raise ItemRuleError(str(MAX_LINKS), f"at most {MAX_LINKS} links: this is item "
                            f"{MAX_LINKS + 1} of {len(links)}")
    return links


def _names(link: Any) -> tuple[str, ...]:
    """What a link names, for telling two links apart: two spellings of one identity are
    one link. An address's hex case is only its EIP-55 checksum (one registry, one
    token: a second spelling got the bureau's feedback for that token twice), and a
    URL's host is case-blind, ``:443`` and an empty path being https's defaults (RFC 3986
    §6.2.2-6.2.3). An MCP server name is compared as written."""
    if isinstance(link, Erc8004Link):
        return (link.kind, link.registry.lower(), link.agent_id)
    if isinstance(link, A2aLink):
        parts = urlsplit(link.card)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        port = "" if parts.port in (None, 443) else f":{parts.port}"
        return (link.kind, host + port, parts.path or "/", parts.query, parts.fragment)
    return (link.kind, link.server)


def _distinct_links(links: list[Any]) -> list[Any]:
    seen: dict[tuple[str, ...], int] = {}
    for i, link in enumerate(links):
        names = _names(link)
        if names in seen:
            raise ItemRuleError(str(i), "links must be distinct: this one is item "
                                f"{seen[names]} again")
        seen[names] = i
    return links


Links = Annotated[list[Link], BeforeValidator(_at_most_16), AfterValidator(_distinct_links),
                  Field(json_schema_extra={"maxItems": MAX_LINKS})]


def erc8004(chain_id: int, registry: str, agent_id: int) -> dict[str, str]:
    """An ``erc8004`` link: the agent's token ``agent_id`` in the Identity Registry at
    address ``registry`` on chain ``chain_id``."""
    return {"kind": "erc8004", "registry": f"eip155:{chain_id}:{registry}",
            "agent_id": str(agent_id)}


def a2a(card: str) -> dict[str, str]:
    """An ``a2a`` link: the https URL of the agent's card."""
    return {"kind": "a2a", "card": card}


def mcp(server: str) -> dict[str, str]:
    """An ``mcp`` link: the server's name in the MCP registry."""
    return {"kind": "mcp", "server": server}
