"""A LiteLLM logger that reports every call LiteLLM makes to a mapped deployment as a fact
(reporters/README.md, "LiteLLM"; docs/proxy.md, "Which one do I use").

A LiteLLM proxy loads it with one line of its ``config.yaml``::

    litellm_settings:
      callbacks: reporters.integrations.litellm.handler

and reads this plugin's own config from the file named by ``BUREAU_LITELLM_CONFIG``
(TOML, or JSON)::

    bureau_url = "http://127.0.0.1:8080"
    key_file = "litellm-reporter.key"   # the reporter's key (role "facts")
    spool_dir = "./litellm-spool"
    settle_seconds = 30                 # a failed call's thread stays open this long

    [deployments]      # LiteLLM's deployment id (model_info.id), model group or model
    "gpt-4o-eu" = "ed25519:…"           #   -> the key id of the agent or model behind it
    [callers]          # a virtual key's hash (user_api_key_hash) -> the caller's key id
    "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b" = "ed25519:…"

Each attempt LiteLLM makes is one fact: the subject from ``[deployments]`` (looked up by
deployment id, then model group, then model, then ``provider/model``; a call to an
unmapped deployment is counted in :attr:`BureauLogger.unmapped` and logged, never
guessed), the caller from
``[callers]`` when the virtual key's hash is mapped, ``answered``, ``latency_ms`` and
``observed_at`` from LiteLLM's standard logging payload. ``derived`` comes from LiteLLM's
own trace id (one per request, across its retries and fallbacks): a deployment's first
failed attempt is ``SWITCHED_AGENT`` when LiteLLM fell back to another deployment,
``RETRY_ACCEPTED`` when a retry on the same deployment succeeded. Failed attempts are held
durably in the spool until their trace settles (a success, LiteLLM's fallback-failed
hook, or ``settle_seconds`` of silence); a restart releases what an earlier run held.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from reporters import Reporter, load_key
from reporters.wire import WireError, public_key_from_key_id

log = logging.getLogger("reporters.integrations.litellm")

CONFIG_ENV = "BUREAU_LITELLM_CONFIG"
_UNSAFE = re.compile(r"[^A-Za-z0-9._:/-]")
_NO_ANSWER = frozenset({"Timeout", "APIConnectionError"})


class LiteLLMConfigError(ValueError):
    """The plugin's configuration cannot be used; the message names the field."""


@dataclass(frozen=True)
class LiteLLMConfig:
    bureau_url: str
    key_file: Path
    spool_dir: Path
    #: deployment id, model group or model -> subject key id
    deployments: Mapping[str, str]
    #: virtual key hash -> caller key id
    callers: Mapping[str, str] = field(default_factory=dict)
    settle_seconds: float = 30.0


def _key_ids(raw: Any, name: str) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise LiteLLMConfigError(f"{name}: a table of name -> key id is needed")
    out = {}
    for value, kid in raw.items():
        try:
            public_key_from_key_id(str(kid))
        except WireError as exc:
            raise LiteLLMConfigError(f"{name}.{value}: {exc.detail}") from None
        out[str(value)] = str(kid)
    return out


def config_from_mapping(raw: Mapping[str, Any], base: Path = Path(".")) -> LiteLLMConfig:
    unknown = set(raw) - {"bureau_url", "key_file", "spool_dir", "deployments", "callers",
                          "settle_seconds"}
    if unknown:
        raise LiteLLMConfigError(f"unknown field(s) {sorted(unknown)}")
    for name in ("bureau_url", "key_file", "spool_dir"):
        if not isinstance(raw.get(name), str):
            raise LiteLLMConfigError(f"{name}: required")
    deployments = _key_ids(raw.get("deployments", {}), "deployments")
    if not deployments:
        raise LiteLLMConfigError("deployments: at least one deployment is needed")
    settle = float(raw.get("settle_seconds", 30.0))
    if not settle > 0:
        raise LiteLLMConfigError("settle_seconds must be positive")
    return LiteLLMConfig(raw["bureau_url"].rstrip("/"), base / raw["key_file"],
                         base / raw["spool_dir"], deployments,
                         _key_ids(raw.get("callers", {}), "callers"), settle)


def read_config(path: Path) -> LiteLLMConfig:
    text = path.read_text()
    doc = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    return config_from_mapping(doc, path.parent)


@dataclass
class _Attempt:
    name: str  # the held record's name, and the fact's interaction id
    deployment: str  # the subject's key id: threads are per agent
    fields: dict[str, Any]
    satisfactory: bool
    at: float  # wall seconds of the event
    held: bool = False


def derive(attempts: list[_Attempt]) -> list[str | None]:
    """``derived`` of each attempt of one settled trace (in arrival order). A *thread*
    is a trace's attempts at one deployment; only its first attempt carries an outcome:
    ``SWITCHED_AGENT`` when a later thread (another deployment) followed it,
    ``RETRY_ACCEPTED`` when it has several attempts and its last was satisfactory."""
    order: list[str] = []
    threads: dict[str, list[int]] = {}
    for i, a in enumerate(attempts):
        if a.deployment not in threads:
            order.append(a.deployment)
        threads.setdefault(a.deployment, []).append(i)
    out: list[str | None] = [None] * len(attempts)
    for n, deployment in enumerate(order):
        members = threads[deployment]
        head = members[0]
        if n + 1 < len(order) and not attempts[members[-1]].satisfactory:
            out[head] = "SWITCHED_AGENT"
        elif len(members) > 1 and attempts[members[-1]].satisfactory:
            out[head] = "RETRY_ACCEPTED"
    return out


def _timestamp(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


class BureauLogger(CustomLogger):
    """The LiteLLM ``CustomLogger``. ``config``: the plugin's config, or ``None`` to read
    the file named by ``BUREAU_LITELLM_CONFIG`` at the first event."""

    def __init__(self, config: LiteLLMConfig | None = None) -> None:
        super().__init__()
        self._config = config
        self._reporter: Reporter | None = None
        self._starting: asyncio.Lock | None = None
        self._traces: dict[str, list[_Attempt]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        #: calls to deployments the config does not map: counted, not reported
        self.unmapped = 0
        self._logged: set[str] = set()

    # ------------------------------------------------------------------ lifecycle

    @property
    def config(self) -> LiteLLMConfig:
        if self._config is None:
            path = os.environ.get(CONFIG_ENV)
            if not path:
                raise LiteLLMConfigError(f"{CONFIG_ENV} must name the plugin's config file")
            self._config = read_config(Path(path))
        return self._config

    async def reporter(self) -> Reporter:
        """The reporter, started on the running loop at the first event; what an
        earlier run held is taken back (and settled by the sweep)."""
        if self._reporter is not None:
            return self._reporter
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._reporter is None:
                config = self.config
                reporter = Reporter(load_key(config.key_file), config.bureau_url,
                                    config.spool_dir)
                for name, record in (await reporter.held()).items():
                    doc = json.loads(record)
                    self._traces.setdefault(doc["trace"], []).append(_Attempt(
                        name, doc["deployment"], doc["fields"], False, doc["at"], held=True))
                self._reporter = reporter
                self._sweeper = asyncio.create_task(self._sweep())
        return self._reporter

    async def close(self, *, release: bool = True) -> None:
        """Settle every open trace (``release``) and close the reporter."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._reporter is None:
            return
        if release:
            for trace in list(self._traces):
                await self._settle(trace)
        await self._reporter.close()
        self._reporter = None

    async def flush(self) -> None:
        """Wait until the bureau has answered for every spooled fact."""
        await (await self.reporter()).flush()

    # ------------------------------------------------------------------ LiteLLM's hooks

    async def async_log_success_event(self, kwargs: dict[str, Any], response_obj: Any,
                                      start_time: Any, end_time: Any) -> None:
        await self._event(kwargs, success=True)

    async def async_log_failure_event(self, kwargs: dict[str, Any], response_obj: Any,
                                      start_time: Any, end_time: Any) -> None:
        await self._event(kwargs, success=False)

    async def log_failure_fallback_event(self, original_model_group: str,
                                         kwargs: dict[str, Any],
                                         original_exception: Exception) -> None:
        """LiteLLM tried every fallback and gave up: the trace is over."""
        trace = kwargs.get("litellm_trace_id")
        if isinstance(trace, str) and trace in self._traces:
            await self._settle(trace)

    # ------------------------------------------------------------------ facts

    def _subject(self, payload: Mapping[str, Any]) -> str | None:
        deployments = self.config.deployments
        provider, model = payload.get("custom_llm_provider"), payload.get("model")
        for value in (payload.get("model_id"), payload.get("model_group"), model,
                      f"{provider}/{model}"):  # "openai/gpt-4o", as config.yaml names it
            if isinstance(value, str) and value in deployments:
                return deployments[value]
        return None

    async def _event(self, kwargs: dict[str, Any], *, success: bool) -> None:
        try:
            await self._record(kwargs, success)
        except Exception:  # a reporting failure must never break the gateway's call
            log.exception("could not report a LiteLLM call")

    async def _record(self, kwargs: dict[str, Any], success: bool) -> None:
        payload = kwargs.get("standard_logging_object") or {}
        subject = self._subject(payload)
        if subject is None:
            self.unmapped += 1
            names = f"{payload.get('model_id')!r}/{payload.get('model_group')!r}/" \
                    f"{payload.get('model')!r}"
            if names not in self._logged and len(self._logged) < 1000:
                self._logged.add(names)
                log.warning("a call to a deployment the config does not map (deployment id/"
                            "model group/model %s): not reported; add it to [deployments]",
                            names)
            return
        reporter = await self.reporter()
        error = payload.get("error_information") or {}
        error_code = str(error.get("error_code") or "")
        # A provider's HTTP error status is an answer (a refusal); a timeout (LiteLLM
        # gives it 408) or a connection error is not.
        answered = success or (error_code.isdigit() and error_code != "408" and
                               error.get("error_class") not in _NO_ANSWER)
        start, end = float(payload.get("startTime", 0)), float(payload.get("endTime", 0))
        key_hash = (payload.get("metadata") or {}).get("user_api_key_hash")
        fields: dict[str, Any] = {
            "subject": subject, "caller": self.config.callers.get(str(key_hash)),
            "observed_at": _timestamp(end or time.time()), "answered": answered,
            "latency_ms": max(0, round((end - start) * 1000)) if answered else None,
            "well_formed": True if success else None}
        call_id = _UNSAFE.sub("-", str(payload.get("id") or kwargs.get("litellm_call_id")))
        # A thread is a trace's attempts at one *agent*: two deployments mapped to the
        # same key id are one agent, and moving between them is a retry, not a switch.
        attempt = _Attempt(f"litellm:{call_id}"[:128], subject, fields, success, time.time())
        trace = str(payload.get("trace_id") or call_id)
        attempts = self._traces.setdefault(trace, [])
        attempts.append(attempt)
        if success:  # LiteLLM returned this answer: the trace is over
            await self._settle(trace)
        else:
            await reporter.hold({attempt.name: json.dumps({
                "trace": trace, "deployment": attempt.deployment, "fields": fields,
                "at": attempt.at}).encode()})
            attempt.held = True

    async def _settle(self, trace: str) -> None:
        attempts = self._traces.pop(trace, [])
        reporter = await self.reporter()
        for attempt, derived in zip(attempts, derive(attempts), strict=True):
            fact = reporter.fact(attempt.name, derived=derived,  # type: ignore[arg-type]
                                 **attempt.fields)
            await reporter.send(fact, releasing=attempt.name if attempt.held else None)

    async def _sweep(self) -> None:
        """Settle the traces that have been quiet for ``settle_seconds``."""
        settle = self.config.settle_seconds
        while True:
            await asyncio.sleep(min(settle / 2, 5.0))
            now = time.time()
            for trace, attempts in list(self._traces.items()):
                if attempts and now - attempts[-1].at >= settle:
                    try:
                        await self._settle(trace)
                    except Exception:
                        log.exception("could not report a settled LiteLLM trace")


#: The instance a LiteLLM proxy's ``callbacks:`` names.
handler = BureauLogger()

__all__ = ["CONFIG_ENV", "BureauLogger", "LiteLLMConfig", "LiteLLMConfigError",
           "config_from_mapping", "derive", "handler", "read_config"]
