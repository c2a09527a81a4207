"""What the proxy can measure of one answer: well-formedness, the agent's own claim,
the latency promises, and the optional deliverable check. Pure functions."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

# Claimed and parse_strict live with the protocol readers; the proxy's users import them here.
from reporters.protocols.answers import Claimed as Claimed
from reporters.protocols.answers import parse_strict as parse_strict

if TYPE_CHECKING:  # the proxy extra's; imported where a schema is compiled
    import jsonschema

Check = Literal["PASS", "FAIL"]

#: Statuses with no body to judge: well_formed is null for them.
_BODILESS = frozenset({204, 304})


@dataclass(frozen=True)
class Exchange:
    """One forwarded call as a deliverable check sees it."""

    method: str
    path: str  # below the route prefix, e.g. "/solve"
    query: str
    request_body: bytes
    status: int
    response_body: bytes
    document: Any  # the parsed response body; None when not JSON


#: A deliverable check: PASS, FAIL, or None (this call is not checked).
DeliverableCheck = Callable[[Exchange], Check | None]


def task_hash(method: str, path: str, query: str, body: bytes) -> str:
    """What "the same task" means (reporters.proxy.tracker): method, sub-path, query
    and body; the route prefix is left out so a task sent to another agent matches."""
    h = hashlib.sha256()
    for part in (method.upper().encode(), path.encode(), query.encode()):
        h.update(len(part).to_bytes(8, "big") + part)
    h.update(body)
    return h.hexdigest()


def compile_schema(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for a route's response schema (its draft read from ``$schema``,
    default 2020-12); raises ``jsonschema.SchemaError`` for a bad schema at startup."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


def well_formed(status: int, body: bytes,
                validator: jsonschema.protocols.Validator | None) -> tuple[bool | None, Any]:
    """Whether the answer is well-formed, and its parsed document.

    Well-formed: the body is strict JSON and, when the route has a schema, valid
    against it. The status does not enter (a ``500`` with a JSON body that fits the
    schema is well-formed; it is still not a *satisfactory* answer). ``204``/``304``
    have no body to judge: ``None``.
    """
    if status in _BODILESS and not body:
        return None, None
    ok, doc = parse_strict(body)
    if not ok:
        return False, None
    if validator is not None and not validator.is_valid(doc):
        return False, doc
    return True, doc


def promises_kept(answered: bool, latency_ms: int | None,
                  bounds: Mapping[str, int]) -> dict[str, bool]:
    """Each latency promise: kept when the answer came within its bound. No answer
    keeps no promise."""
    return {promise: answered and latency_ms is not None and latency_ms <= max_ms
            for promise, max_ms in bounds.items()}
