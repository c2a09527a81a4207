"""A2A over JSON-RPC, as a reporter reads it: methods, answers, task states (pure).

Both protocol versions are read with a2a-sdk's own types: A2A 1.0 (``SendMessage``,
``SendStreamingMessage``, ``GetTask``, ``CancelTask``, ``SubscribeToTask``) with its
protobuf messages through ``google.protobuf.json_format``; A2A 0.3 (``message/send``,
``message/stream``, ``tasks/get``, ``tasks/cancel``, ``tasks/resubscribe``) with the
SDK's 0.3 pydantic models, converted to the 1.0 messages by the SDK's own
``a2a.compat.v0_3.conversions``. So everything after reading speaks one vocabulary:
``TaskState.TASK_STATE_COMPLETED`` is 0.3's ``completed``.

What a state means (SPEC §4, r3; docs/proxy.md has the table):

* ``completed`` claims ``SUCCESS``, ``failed`` ``FAILURE``, ``rejected`` ``DECLINED``;
  ``canceled`` claims nothing (the caller's cancel is ``derived: ABANDONED``);
* ``input-required``/``auth-required`` wait for the caller (:data:`WAITING`);
* ``submitted``/``working`` (and an unspecified state) are still running.

An error answer claims ``DECLINED`` when its code blames the request (the standard
request codes and A2A's push-notifications-not-supported, unsupported operation,
content type, extended card not configured, extension required, version not
supported), else ``FAILURE``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
from a2a.compat.v0_3 import conversions
from a2a.compat.v0_3 import types as v03
from a2a.types.a2a_pb2 import (
    AgentCard,
    Message,
    Part,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf.json_format import ParseDict, ParseError

from reporters.protocols import jsonrpc, methods
from reporters.protocols.answers import Claimed

Kind = methods.Kind
Version = methods.Version

#: A2A methods a fact follows, by name in each version: (what it does, version).
METHODS = methods.A2A_METHODS
#: A2A methods that are bookkeeping, not work: forwarded, no fact.
OTHER_METHODS = methods.A2A_OTHER_METHODS

#: Error codes that blame the request: the agent declined (see the module docstring).
DECLINING_CODES = jsonrpc.REQUEST_CODES | {-32003, -32004, -32005, -32007, -32008, -32009}

#: Final states and what they claim.
STATE_CLAIMS: Mapping[int, Claimed | None] = {
    TaskState.TASK_STATE_COMPLETED: "SUCCESS", TaskState.TASK_STATE_FAILED: "FAILURE",
    TaskState.TASK_STATE_REJECTED: "DECLINED", TaskState.TASK_STATE_CANCELED: None}
#: States in which the task waits for the caller.
WAITING = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})

#: The promise ids a card's declarations become (docs/proxy.md, "The agent card").
STREAMING_PROMISE = "a2a:streaming"
OUTPUT_MODES_PROMISE = "a2a:output-modes"
SKILL_PROMISE = "a2a:skill"


def is_final(state: int | None) -> bool:
    return state in STATE_CLAIMS


def error_claim(code: int) -> Claimed:
    """What an A2A error answer says of the agent's work."""
    return jsonrpc.error_claim(code, DECLINING_CODES)


@dataclass(frozen=True, slots=True)
class Asked:
    """What an A2A request asks: which task it concerns (the continued one for a send
    naming a task id; the one polled, cancelled or resubscribed to), in which context,
    for which skill (``metadata.skill`` or ``metadata.skillId`` of the request or its
    message: A2A has no field of its own for it), in which output modes."""

    kind: Kind
    version: Version
    task_id: str | None = None
    context_id: str | None = None
    skill: str | None = None
    output_modes: tuple[str, ...] = ()
    valid: bool = True  # False: the params are not valid for the method


@dataclass(frozen=True, slots=True)
class Turn:
    """One answer (or one event of a stream): the task it speaks of, its state if it
    says one (``None``: a message, or an artifact update), and the media types of the
    parts the agent sent in it."""

    task_id: str | None
    context_id: str | None
    state: int | None
    media_types: tuple[str, ...]
    is_message: bool = False


def read_request(method: str, params: Any) -> Asked | None:
    """The A2A request ``method(params)``; None when ``method`` is not one a fact
    follows."""
    if method not in METHODS:
        return None
    kind, version = METHODS[method]
    try:
        if kind in ("send", "stream"):
            request = _send_request(version, params)
            m = request.message
            skill = _skill(request.metadata) or _skill(m.metadata)
            return Asked(kind, version, m.task_id or None, m.context_id or None, skill,
                         tuple(request.configuration.accepted_output_modes))
        task_id = _task_id(version, params)
    except (ParseError, pydantic.ValidationError, TypeError, ValueError, KeyError):
        return Asked(kind, version, valid=False)
    return Asked(kind, version, task_id or None)


def _send_request(version: Version, params: Any) -> SendMessageRequest:
    if not isinstance(params, dict):
        raise ValueError("params must be an object")
    if version == "1.0":
        parsed: SendMessageRequest = ParseDict(params, SendMessageRequest(),
                                               ignore_unknown_fields=True)
        return parsed
    return conversions.to_core_send_message_request(
        v03.SendMessageRequest(id=0, params=v03.MessageSendParams.model_validate(params)))


def _task_id(version: Version, params: Any) -> str:
    if not isinstance(params, dict) or not isinstance(params.get("id"), str):
        raise ValueError("params.id must be a string")
    return str(params["id"])


def _skill(metadata: Any) -> str | None:
    """``skill``/``skillId`` in a metadata Struct (1.0) or dict."""
    items = dict(metadata.items()) if hasattr(metadata, "items") else {}
    for name in ("skill", "skillId", "skill_id"):
        value = items.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def read_result(kind: Kind, version: Version, result: Any) -> Turn | None:
    """The turn a successful answer's ``result`` (or one stream event's) makes; None
    when it is not valid for the method."""
    try:
        if version == "1.0":
            return _read_v10(kind, result)
        return _read_v03(kind, result)
    except (ParseError, pydantic.ValidationError, TypeError, ValueError, KeyError,
            AttributeError):
        return None


def _read_v10(kind: Kind, result: Any) -> Turn | None:
    if not isinstance(result, dict):
        return None
    if kind == "send":
        answer = ParseDict(result, SendMessageResponse(), ignore_unknown_fields=True)
        which = answer.WhichOneof("payload")
        return _of_task(answer.task) if which == "task" else \
            _of_message(answer.message) if which == "message" else None
    if kind in ("stream", "resubscribe"):
        event = ParseDict(result, StreamResponse(), ignore_unknown_fields=True)
        return _of_event(event)
    task = ParseDict(result, Task(), ignore_unknown_fields=True)
    return _of_task(task) if task.id else None


_V03_SEND: pydantic.TypeAdapter[v03.Task | v03.Message] = pydantic.TypeAdapter(
    v03.Task | v03.Message)
_V03_EVENT: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(
    v03.Task | v03.Message | v03.TaskStatusUpdateEvent | v03.TaskArtifactUpdateEvent)


def _read_v03(kind: Kind, result: Any) -> Turn | None:
    if kind == "send":
        got: Any = _V03_SEND.validate_python(result)
    elif kind in ("stream", "resubscribe"):
        got = _V03_EVENT.validate_python(result)
    else:
        got = v03.Task.model_validate(result)
    if isinstance(got, v03.Task):
        return _of_task(conversions.to_core_task(got))
    if isinstance(got, v03.Message):
        return _of_message(conversions.to_core_message(got))
    if isinstance(got, v03.TaskStatusUpdateEvent):
        ev = conversions.to_core_task_status_update_event(got)
        parts = ev.status.message.parts if ev.status.HasField("message") else []
        return Turn(ev.task_id, ev.context_id, ev.status.state, media_types(parts))
    art = conversions.to_core_task_artifact_update_event(got)
    return Turn(art.task_id, art.context_id, None, media_types(art.artifact.parts))


def _of_task(task: Task) -> Turn:
    parts: list[Part] = [p for a in task.artifacts for p in a.parts]
    if task.status.HasField("message"):
        parts += task.status.message.parts
    return Turn(task.id, task.context_id or None, task.status.state, media_types(parts))


def _of_message(message: Message) -> Turn:
    return Turn(message.task_id or None, message.context_id or None, None,
                media_types(message.parts), is_message=True)


def _of_event(event: StreamResponse) -> Turn | None:
    which = event.WhichOneof("payload")
    if which == "task":
        return _of_task(event.task)
    if which == "message":
        return _of_message(event.message)
    if which == "status_update":
        s = event.status_update
        parts = s.status.message.parts if s.status.HasField("message") else []
        return Turn(s.task_id, s.context_id or None, s.status.state, media_types(parts))
    if which == "artifact_update":
        a = event.artifact_update
        return Turn(a.task_id, a.context_id or None, None, media_types(a.artifact.parts))
    return None


def media_types(parts: Iterable[Part]) -> tuple[str, ...]:
    """Each part's media type: its own, else text/plain for text, application/json
    for data, application/octet-stream for bytes or a URL."""
    out = []
    for p in parts:
        if p.media_type:
            out.append(p.media_type)
        else:
            which = p.WhichOneof("content")
            out.append({"text": "text/plain", "data": "application/json"}.get(
                which or "", "application/octet-stream"))
    return tuple(out)


def mode_matches(media_type: str, modes: Sequence[str]) -> bool:
    """``media_type`` is among ``modes`` (parameters ignored; ``type/*`` and ``*/*``
    match as wildcards)."""
    kind = media_type.split(";")[0].strip().lower()
    major = kind.split("/")[0]
    for mode in modes:
        m = mode.split(";")[0].strip().lower()
        if m in (kind, "*/*", "*") or m == f"{major}/*":
            return True
    return False


# ---------------------------------------------------------------------- the card


@dataclass(frozen=True, slots=True)
class Declared:
    """What an agent card promises, as far as a reporter can see it kept."""

    streaming: bool
    output_modes: tuple[str, ...]
    skills: Mapping[str, tuple[str, ...]]  # skill id -> its output modes (empty: default)


def parse_card(doc: Any) -> AgentCard:
    """An agent card document (A2A 1.0, or 0.3's shape) as a2a-sdk reads it; raises
    ``ValueError`` when it is not one."""
    from a2a.client.card_resolver import parse_agent_card

    if not isinstance(doc, dict):
        raise ValueError("an agent card is a JSON object")
    try:
        card = parse_agent_card(dict(doc))
    except (ParseError, TypeError, ValueError) as exc:
        raise ValueError(f"not an agent card: {exc}") from None
    if not card.name:
        raise ValueError("not an agent card: no name")
    return card


def declared(card: AgentCard) -> Declared:
    return Declared(bool(card.capabilities.streaming), tuple(card.default_output_modes),
                    {s.id: tuple(s.output_modes) for s in card.skills})


def unlisted_skill(card: Declared | None, asked: Asked) -> str | None:
    """The skill ``asked`` names that ``card`` does not list; None when it names none,
    the card lists it, or there is no card to say. Asking for what the card does not
    offer is the caller's doing (SPEC §4, r4): a task that then fails was refused."""
    if card is None or asked.skill is None or asked.skill in card.skills:
        return None
    return asked.skill


def card_promises(card: Declared | None, asked: Asked, turns: Sequence[Turn],
                  streamed: bool | None) -> dict[str, bool]:
    """The card's promises this call puts to the test, each kept or not — only promises
    the agent made, never what the caller chose (SPEC §4, r4):

    * ``a2a:streaming`` — on a streaming call to an agent whose card offers streaming:
      kept when ``streamed`` (the agent's answer was an event stream whose events were
      valid and which reached a final state, or stopped waiting for the caller);
    * ``a2a:skill`` — when the request names a skill the card lists: kept (what the
      agent then did is its claim: a refusal is ``DECLINED``, and declining is free). A
      skill the card does not list is not put to the test: naming it is the caller's
      doing, and the fact records only what the agent did with the request;
    * ``a2a:output-modes`` — when that skill declares its own output modes and the
      agent sent parts: every part's media type is one of them. The card's
      ``defaultOutputModes`` are not put to the test: frameworks fill them in for every
      agent (fasta2a declares ``application/json`` whatever the agent answers), so they
      are not a promise the agent's operator made (docs/proxy.md, "The agent card").
    """
    if card is None:
        return {}
    out: dict[str, bool] = {}
    if asked.kind in ("stream", "resubscribe") and card.streaming:
        out[STREAMING_PROMISE] = bool(streamed)
    if asked.skill is None or asked.skill not in card.skills:
        return out
    out[SKILL_PROMISE] = True
    modes = card.skills[asked.skill]
    sent = [t for turn in turns for t in turn.media_types]
    if sent and modes:
        out[OUTPUT_MODES_PROMISE] = all(mode_matches(t, modes) for t in sent)
    return out
