"""What one LiteLLM attempt says about the deployment it called: pure, no I/O.

docs/litellm.md ("What a fact says") has the tables this module implements; a test
reads them row by row. In short, for an attempt LiteLLM logged:

* **Subject** — the deployment id (``model_info.id``), model group, model, then
  ``provider/model``, looked up in the config's ``[deployments]``; unmapped: no fact.
* **Answered** — a success; or a failure whose cause is an answer from the provider
  (an HTTP error status). Not answered: the connection was refused or dropped, the name
  did not resolve, the call timed out — whatever status LiteLLM then gives the error
  (it reports a refused connection as ``InternalServerError`` 500, code
  ``500_PROVIDER_CONNECTION_ERROR``). The exception chain below LiteLLM's own wrappers
  decides (the provider SDK's connection error, or its status error); without one,
  LiteLLM's error class, normalized code and status code.
* **Claimed** — an answered error status: ``4xx`` the provider refused the request
  (``DECLINED``: a rate limit, a request it will not take), ``5xx`` it failed
  (``FAILURE``); a stream that broke off after its first chunk is answered and
  ``FAILURE`` (:func:`failure`). A success claims nothing: a completion says nothing of
  its own quality.
* **Caller** — ``[callers]`` by the virtual key's hash; the master key, a UI session
  (which logs its alias in the hash's place) and no key are no caller.
* **No fact** — a request LiteLLM's proxy refused itself before calling any deployment
  (a key it does not know, its own rate limit or budget, a guardrail): LiteLLM logs it
  as a failure of the model group asked for, but the agent never saw it
  (:func:`refused_by_gateway`).
* **Derived** — from LiteLLM's trace id, across retries and fallbacks (:func:`derive`).

Two sources: LiteLLM's logging payload (its success and failure events, :func:`attempt`)
and, for a failure, LiteLLM's per-attempt hook where it has one (LiteLLM 1.100 and
later: :func:`hook_attempt`), which a proxy calls for every failed attempt while it logs
one failure event per request.
"""

from __future__ import annotations

import datetime
import re
import socket
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from reporters.integrations.litellm_config import LiteLLMConfig

_UNSAFE = re.compile(r"[^A-Za-z0-9._:/-]")

#: Exception classes (or their bases) that mean nobody answered, by name so that no
#: provider SDK needs importing: openai's (APITimeoutError is an APIConnectionError),
#: httpx's, aiohttp's, LiteLLM's own timeout.
_UNREACHED_NAMES = frozenset({
    "APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout",
    "TimeoutException", "ClientConnectorError", "ServerTimeoutError",
    "ServerDisconnectedError", "Timeout"})
_UNREACHED_TYPES = (ConnectionError, TimeoutError, socket.gaierror)
#: What LiteLLM's error information says of an attempt nobody answered: its classes,
#: its normalized codes (LiteLLM 1.7x and later), its status codes for a timeout.
_UNREACHED_CLASSES = frozenset({"Timeout", "APIConnectionError"})
_UNREACHED_CODES = frozenset({"500_PROVIDER_CONNECTION_ERROR", "408_UPSTREAM_TIMEOUT"})
_TIMEOUT_STATUSES = frozenset({408, 504})
_CHAIN_LIMIT = 16
#: How LiteLLM's proxy marks a failure it logs for a request it refused itself: the
#: event's marker (1.108) and its parameters' flag; earlier versions log the proxy's own
#: errors the same way, unmarked, so their classes tell too (FastAPI's ``HTTPException``
#: is what its rate limiters raise).
_NO_UPSTREAM_CALL = "litellm_no_upstream_llm_call"
_REJECTED_BEFORE_ROUTING = "proxy_rejected_before_routing"
_GATEWAY_ERRORS = frozenset({"ProxyException", "GuardrailRaisedException", "HTTPException"})
_GATEWAY_MODULES = ("litellm", "fastapi", "starlette")
#: How LiteLLM's proxy marks a success whose caller hung up before the end (1.108: in
#: the request's metadata, and as the payload's error class)
_HUNG_UP = "client_disconnected"
_HUNG_UP_CLASS = "ClientDisconnected"


@dataclass
class Attempt:
    """One attempt LiteLLM made, as the plugin keeps it until its request settles."""

    name: str  # the held record's name, and the fact's interaction id
    agent: str  # the subject's key id: threads are per agent
    fields: dict[str, Any]
    satisfactory: bool
    at: float  # wall seconds of the event
    held: bool = False
    #: not written (the spool was full): it still counts for its trace's ``derived``
    dropped: bool = False

    def record(self, trace: str) -> dict[str, Any]:
        """What is held on disk for it (read back by :func:`attempt_from_record`)."""
        return {"trace": trace, "deployment": self.agent, "fields": self.fields, "at": self.at}


def attempt_from_record(name: str, record: Mapping[str, Any]) -> tuple[str, Attempt]:
    """``(trace, attempt)`` of a record an earlier run held."""
    return str(record["trace"]), Attempt(name, str(record["deployment"]),
                                         dict(record["fields"]), False,
                                         float(record["at"]), held=True)


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen = 0
    while exc is not None and seen < _CHAIN_LIMIT:
        yield exc
        exc = exc.__cause__ or exc.__context__
        seen += 1


def _status(text: Any) -> int | None:
    text = str(text or "")
    return int(text) if text.isdigit() else None


def reached(exception: BaseException | None,
            error: Mapping[str, Any] | None = None) -> tuple[bool, int | None]:
    """``(answered, status)`` of a failed attempt: whether the provider answered, and
    the HTTP status it answered with when known. ``error``: LiteLLM's error information
    from its logging payload; without it, the class and status of LiteLLM's exception
    itself, which is what LiteLLM writes there."""
    if error is None:
        error = {"error_class": type(exception).__name__,
                 "error_code": str(getattr(exception, "status_code", "") or "")}
    below = False  # past LiteLLM's wrappers, among the provider SDK's errors
    for exc in _chain(exception):
        if type(exc).__module__.split(".")[0] == "litellm":
            if below:  # an earlier attempt's error, in whose handling this one was raised
                break
            continue  # LiteLLM's wrappers carry a status of LiteLLM's choosing
        below = True
        names = {cls.__name__ for cls in type(exc).__mro__}
        if names & _UNREACHED_NAMES or isinstance(exc, _UNREACHED_TYPES):
            return False, None
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status not in _TIMEOUT_STATUSES, status
    status = _status(error.get("error_code"))
    if error.get("error_class") in _UNREACHED_CLASSES or \
            error.get("normalized_error") in _UNREACHED_CODES or status is None:
        return False, status
    return status not in _TIMEOUT_STATUSES, status


def failure(kwargs: Mapping[str, Any], payload: Mapping[str, Any]) -> tuple[bool, str | None]:
    """``(answered, claimed)`` of a failed attempt. A stream whose first chunk had come
    (LiteLLM's ``completion_start_time``) and that then broke off was answered, with a
    failure, whatever the error says of the connection: the provider was reached and
    said something (SPEC §4, r4). Otherwise :func:`reached` decides."""
    if kwargs.get("completion_start_time") is not None:
        return True, "FAILURE"
    answered, status = reached(kwargs.get("exception"), payload.get("error_information") or {})
    return answered, claimed(status) if answered else None


def refused_by_gateway(kwargs: Mapping[str, Any]) -> bool:
    """Whether a failure LiteLLM logged is its proxy refusing the request before calling
    any deployment — an unknown key, the proxy's own rate limit or budget, a guardrail.
    LiteLLM's proxy logs such a refusal as a failure of the model group asked for (and
    names its deployment), but nothing reached the agent: a fact would write down what
    the caller did as the agent's answer (SPEC §4: the fact is about the agent), and
    would let anyone holding no key at all put facts about an agent in the spool."""
    if kwargs.get(_NO_UPSTREAM_CALL):
        return True
    params = kwargs.get("litellm_params")
    if isinstance(params, Mapping) and params.get(_REJECTED_BEFORE_ROUTING):
        return True
    error = type(kwargs.get("exception"))
    return error.__name__ in _GATEWAY_ERRORS and \
        error.__module__.split(".")[0] in _GATEWAY_MODULES


def hung_up(kwargs: Mapping[str, Any], payload: Mapping[str, Any]) -> bool:
    """Whether the caller hung up before the answer was whole: LiteLLM's proxy logs
    such a stream as a success, marked ``client_disconnected`` (1.108)."""
    params = kwargs.get("litellm_params")
    for metadata in (kwargs.get("metadata"), payload.get("metadata"),
                     params.get("metadata") if isinstance(params, Mapping) else None):
        if isinstance(metadata, Mapping) and metadata.get(_HUNG_UP):
            return True
    error = payload.get("error_information")
    return isinstance(error, Mapping) and error.get("error_class") == _HUNG_UP_CLASS


def claimed(status: int | None) -> str | None:
    """An answered error status: the provider refused (4xx) or failed (5xx)."""
    if status is None:
        return None
    return "DECLINED" if 400 <= status < 500 else "FAILURE" if status >= 500 else None


def subject(payload: Mapping[str, Any], deployments: Mapping[str, str]) -> str | None:
    provider, model = payload.get("custom_llm_provider"), payload.get("model")
    for value in (payload.get("model_id"), payload.get("model_group"), model,
                  f"{provider}/{model}"):  # "openai/gpt-4o", as config.yaml names it
        if isinstance(value, str) and value in deployments:
            return deployments[value]
    return None


def caller(metadata: Mapping[str, Any], callers: Mapping[str, str]) -> str | None:
    """The caller's key id from the virtual key's hash. ``[callers]`` holds SHA-256
    hashes only (never the master key's fixed string: the config refuses it); a UI
    session logs its key alias where the hash goes, a name its holder chose: no caller."""
    key_hash = metadata.get("user_api_key_hash")
    if not isinstance(key_hash, str) or key_hash == metadata.get("user_api_key_alias"):
        return None
    return callers.get(key_hash)


def _timestamp(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


def attempt(kwargs: Mapping[str, Any], success: bool,
            config: LiteLLMConfig) -> tuple[str, Attempt] | None:
    """``(trace, attempt)`` for the event LiteLLM logged, or None when the config maps
    no agent to its deployment."""
    payload = kwargs.get("standard_logging_object") or {}
    agent = subject(payload, config.deployments)
    if agent is None:
        return None
    answered, said = (True, None) if success else failure(kwargs, payload)
    start, end = float(payload.get("startTime") or 0), float(payload.get("endTime") or 0)
    whole = success and not hung_up(kwargs, payload)
    if success and not whole:  # the caller hung up: the provider had answered, so far
        end = float(payload.get("completionStartTime") or end)
    fields: dict[str, Any] = {
        "subject": agent, "caller": caller(payload.get("metadata") or {}, config.callers),
        "observed_at": _timestamp(end or time.time()), "answered": answered,
        "latency_ms": max(0, round((end - start) * 1000)) if answered else None,
        "well_formed": True if whole else None, "claimed": said}
    call_id = str(kwargs.get("litellm_call_id") or payload.get("id"))
    trace = str(payload.get("trace_id") or call_id)
    return trace, Attempt(interaction(call_id, payload), agent, fields, whole, time.time())


def started_at(details: Mapping[str, Any]) -> float | None:
    """When LiteLLM handed an attempt to the provider (its ``api_call_start_time``, in
    the logging object's ``model_call_details``; a naive local datetime), else when it
    began the call: epoch seconds. A proxy shares one logging object among a request's
    attempts and sets this anew for each, before the provider is called."""
    for name in ("api_call_start_time", "start_time"):
        value = details.get(name)
        if isinstance(value, datetime.datetime):
            return value.timestamp()
    return None


def call_details(request_data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``model_call_details`` of the logging object of the attempt the per-attempt
    hook is called for."""
    details = getattr(request_data.get("litellm_logging_obj"), "model_call_details", None)
    return details if isinstance(details, Mapping) else {}


def deployment_names(request_data: Mapping[str, Any]) -> dict[str, Any]:
    """The names of the deployment an attempt called, as the logging payload gives them
    (for :func:`subject` and :func:`interaction`): its id, model group, the model
    without its provider, the provider."""
    metadata = request_data.get("metadata") or request_data.get("litellm_metadata") or {}
    info = metadata.get("model_info") or request_data.get("model_info") or {}
    model, provider = str(request_data.get("model") or ""), request_data.get("custom_llm_provider")
    if isinstance(provider, str) and model.startswith(provider + "/"):
        model = model.removeprefix(provider + "/")
    elif provider is None and "/" in model:  # "openai/gpt-4o", as config.yaml names it
        provider, model = model.split("/", 1)
    return {"model_id": info.get("id") if isinstance(info, Mapping) else None,
            "model_group": metadata.get("model_group"), "model": model,
            "custom_llm_provider": provider, "metadata": metadata}


def hook_attempt(request_data: Mapping[str, Any], exception: BaseException, started: float,
                 config: LiteLLMConfig) -> tuple[str, Attempt] | None:
    """``(trace, attempt)`` for a failed attempt LiteLLM's per-attempt hook
    (``async_post_call_failure_deployment_hook``) was called for, or None when the
    config maps no agent to its deployment. ``started``: the attempt's start
    (:func:`started_at`); it ends now, as LiteLLM calls the hook right after the attempt
    failed. The exception (with its cause chain) decides :func:`reached`."""
    names = deployment_names(request_data)
    agent = subject(names, config.deployments)
    if agent is None:
        return None
    now = time.time()
    answered, status = reached(exception)
    fields: dict[str, Any] = {
        "subject": agent, "caller": caller(names["metadata"], config.callers),
        "observed_at": _timestamp(now), "answered": answered,
        "latency_ms": max(0, round((now - started) * 1000)) if answered else None,
        "well_formed": None, "claimed": claimed(status) if answered else None}
    call_id = str(request_data.get("litellm_call_id"))
    # the request's trace id, as the logging payload gives it (a proxy's logging object
    # holds one of its own); a call without one: the logging object's, as in its payload
    trace = request_data.get("litellm_trace_id") or \
        getattr(request_data.get("litellm_logging_obj"), "litellm_trace_id", None) or call_id
    return str(trace), Attempt(interaction(call_id, {**names, "startTime": started}), agent,
                               fields, False, now)


def fallback_attempt(kwargs: Mapping[str, Any], config: LiteLLMConfig) -> Attempt | None:
    """The last fallback of a request LiteLLM gave up on, from its fallback-failed hook's
    arguments (which name the fallback's deployment, never how it failed): an attempt
    that is never written (``dropped``), there for its trace's ``derived``; None when
    the fallback's deployment is not mapped."""
    metadata = kwargs.get("metadata") or {}
    model_info = metadata.get("model_info") or {}
    agent = subject({"model_id": model_info.get("id") if isinstance(model_info, Mapping)
                     else None, "model_group": metadata.get("model_group") or kwargs.get("model"),
                     "model": metadata.get("deployment")}, config.deployments)
    if agent is None:
        return None
    return Attempt("", agent, {}, False, time.time(), dropped=True)


def interaction(call_id: str, payload: Mapping[str, Any]) -> str:
    """``litellm:<call id>:<deployment>:<start, µs>``. LiteLLM's proxy gives a request one
    call id, shared by its retries and fallbacks; the deployment and the attempt's start
    tell its attempts apart (the payload's ``id`` will not: for a success it is the
    provider's response id, which a provider may repeat)."""
    deployment = payload.get("model_id") or \
        f"{payload.get('custom_llm_provider')}/{payload.get('model')}"
    start = round(float(payload.get("startTime") or 0) * 1_000_000)
    return _UNSAFE.sub("-", f"litellm:{call_id[:64]}:{str(deployment)[:16]}:{start}")[:128]


def derive(attempts: list[Attempt]) -> list[str | None]:
    """``derived`` of each attempt of one settled trace (in arrival order). A *thread*
    is a trace's attempts at one agent (two deployments mapped to one key id are one
    agent: moving between them is a retry, not a switch); only its first attempt
    carries an outcome: ``SWITCHED_AGENT`` when a later thread followed it,
    ``RETRY_ACCEPTED`` when it has several attempts and its last was satisfactory."""
    order: list[str] = []
    threads: dict[str, list[int]] = {}
    for i, a in enumerate(attempts):
        if a.agent not in threads:
            order.append(a.agent)
        threads.setdefault(a.agent, []).append(i)
    out: list[str | None] = [None] * len(attempts)
    for n, agent in enumerate(order):
        members = threads[agent]
        head = members[0]
        if n + 1 < len(order) and not attempts[members[-1]].satisfactory:
            out[head] = "SWITCHED_AGENT"
        elif len(members) > 1 and attempts[members[-1]].satisfactory:
            out[head] = "RETRY_ACCEPTED"
    return out


__all__ = ["Attempt", "attempt", "attempt_from_record", "call_details", "caller", "claimed",
           "deployment_names", "derive", "failure", "fallback_attempt", "hook_attempt",
           "hung_up", "interaction", "reached", "refused_by_gateway", "started_at", "subject"]
