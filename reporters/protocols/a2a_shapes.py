"""What real A2A implementations write that a2a-sdk's types refuse, read all the same
(SPEC §4, r4: "Read what the protocol allows").

a2a-sdk reads each protocol version strictly. Agents in the field deviate in ways their
own clients tolerate — fasta2a (pydantic-ai's A2A server) writes timestamps without a
zone (``"2026-12-07T06:19:36.990163"``) and, to a 0.3 method (``message/send``), answers
in 1.0's shapes (``{"task": {…}}``) with 0.3's names (``"state": "completed"``,
``"role": "user"``). A strict reading makes such an agent's every task
``well_formed: false`` and ``claimed: null``: the bureau blind to what happened.

:func:`read_result` reads an answer strictly first; when that fails, it reads it again
with what it can mend mended, first in the method's version and then in the other one:

* a timestamp without a zone is read as UTC (``timestamp-without-zone``);
* task states and roles named as in the other version are renamed
  (``other-version-names``);
* a result in the other version's shape is read in that shape
  (``other-version-shape``).

It says which of these it needed, so the proxy can say, once per agent, that an agent
deviates. What no mending makes readable stays unreadable: ``well_formed: false``. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from reporters.protocols import a2a

TIMESTAMP_WITHOUT_ZONE = "timestamp-without-zone"
OTHER_VERSION_NAMES = "other-version-names"
OTHER_VERSION_SHAPE = "other-version-shape"
#: every deviation :func:`read_result` may report (docs/proxy.md, "A2A")
DEVIATIONS = (TIMESTAMP_WITHOUT_ZONE, OTHER_VERSION_NAMES, OTHER_VERSION_SHAPE)

_NAIVE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?")
_STATES_03_TO_10 = {
    "submitted": "TASK_STATE_SUBMITTED", "working": "TASK_STATE_WORKING",
    "input-required": "TASK_STATE_INPUT_REQUIRED", "auth-required": "TASK_STATE_AUTH_REQUIRED",
    "completed": "TASK_STATE_COMPLETED", "canceled": "TASK_STATE_CANCELED",
    "failed": "TASK_STATE_FAILED", "rejected": "TASK_STATE_REJECTED",
    "unknown": "TASK_STATE_UNSPECIFIED"}
_ROLES_03_TO_10 = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
_NAMES: dict[a2a.Version, dict[str, dict[str, str]]] = {
    "1.0": {"state": _STATES_03_TO_10, "role": _ROLES_03_TO_10},
    "0.3": {"state": {v: k for k, v in _STATES_03_TO_10.items()},
            "role": {v: k for k, v in _ROLES_03_TO_10.items()}},
}


def mended(doc: Any, version: a2a.Version) -> tuple[Any, frozenset[str]]:
    """A copy of ``doc`` with zone-less timestamps read as UTC and state and role names
    of the other version renamed to ``version``'s; which of the two it changed."""
    changed: set[str] = set()
    names = _NAMES[version]

    def walk(value: Any, key: str | None) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, None) for v in value]
        if isinstance(value, str) and key is not None:
            if key == "timestamp" and _NAIVE.fullmatch(value):
                changed.add(TIMESTAMP_WITHOUT_ZONE)
                return value + "Z"
            renamed = names.get(key, {}).get(value)
            if renamed is not None:
                changed.add(OTHER_VERSION_NAMES)
                return renamed
        return value

    return walk(doc, None), frozenset(changed)


def read_result(kind: a2a.Kind, version: a2a.Version, result: Any,
                reader: Callable[[a2a.Kind, a2a.Version, Any], a2a.Turn | None] = a2a.read_result
                ) -> tuple[a2a.Turn | None, frozenset[str]]:
    """The turn of ``result`` (see the module docstring) and the deviations its reading
    needed; ``(None, ∅)`` when it cannot be read even so."""
    turn = reader(kind, version, result)
    if turn is not None:
        return turn, frozenset()
    other: a2a.Version = "0.3" if version == "1.0" else "1.0"
    for shape, extra in ((version, frozenset()), (other, frozenset({OTHER_VERSION_SHAPE}))):
        doc, fixed = mended(result, shape)
        turn = reader(kind, shape, doc)
        if turn is not None:
            return turn, fixed | extra
    return None, frozenset()
