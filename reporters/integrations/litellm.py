"""A LiteLLM logger that reports every attempt LiteLLM makes at a mapped deployment as a
fact (docs/litellm.md).

A LiteLLM proxy loads it with one line of its ``config.yaml``::

    litellm_settings:
      callbacks: reporters.integrations.litellm.handler

and reads this plugin's own config from the file named by ``BUREAU_LITELLM_CONFIG``
(:mod:`reporters.integrations.litellm_config`). What each attempt's fact says is
:mod:`reporters.integrations.litellm_facts`; the writer that holds, settles, signs and
spools the facts is :mod:`reporters.integrations.litellm_writer`.

**Which hook says what.** A success comes from LiteLLM's success event. A failure comes
from LiteLLM's per-attempt hook, ``async_post_call_failure_deployment_hook`` (LiteLLM
1.100 and later), called for every failed attempt — each retry, each fallback hop —
where LiteLLM's proxy logs one failure event per request (it shares one logging object
among a request's attempts). The failure event then adds only what that hook did not
see: a stream that broke off after the provider's answer had begun (the hook is called
around the call that opens the stream, not while it is read). On an older LiteLLM,
without that hook, failures come from the failure event alone: through a proxy, a
request's first failure. The fallback-failed hook says that LiteLLM gave up on a request.

**No call waits on the bureau, nor on the disk.** LiteLLM awaits some of its hooks
inline (the per-attempt failure hook on the request's error path, the failure and
fallback-failed hooks), so a hook that waits stalls the LLM call. Each hook here only
reads the event into an attempt and queues it (:meth:`FactWriter.submit
<reporters.integrations.litellm_writer.FactWriter.submit>`): no lock, no disk, no
signature, no bureau.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from reporters.integrations.litellm_config import (
    CONFIG_ENV,
    LiteLLMConfig,
    LiteLLMConfigError,
    config_from_mapping,
    read_config,
)
from reporters.integrations.litellm_facts import (
    attempt,
    call_details,
    deployment_names,
    derive,
    fallback_attempt,
    hook_attempt,
    hung_up,
    refused_by_gateway,
    started_at,
)
from reporters.integrations.litellm_metrics import METRICS
from reporters.integrations.litellm_writer import Event, FactWriter

log = logging.getLogger("reporters.integrations.litellm")


def _internal_call() -> bool:
    """Whether LiteLLM is calling a model for a feature of its own (recent versions mark
    it; LiteLLM logs neither the successes nor the failures of such calls)."""
    try:
        from litellm._internal_context import is_internal_call
    except ImportError:  # an older LiteLLM: no such mark
        return False
    return is_internal_call.get()


#: Whether this LiteLLM calls the per-attempt failure hook (1.100 and later)
ATTEMPT_HOOK = "async_post_call_failure_deployment_hook" in vars(CustomLogger)
#: attempts the per-attempt hook took, whose failure event may follow: the event comes
#: right after the hook, on the same request, so a few thousand cover any concurrency
_HOOKED_MAX = 4096

_AttemptKey = tuple[str, float | None]  # (LiteLLM's call id, the attempt's start)


def _key(details: Mapping[str, Any]) -> _AttemptKey:
    """One attempt of one call: the hook's request data and the failure event's
    arguments both lead to the logging object's details, which say the same of it."""
    return str(details.get("litellm_call_id")), started_at(details)


class BureauLogger(CustomLogger):
    """The LiteLLM ``CustomLogger``. ``config``: the plugin's config, or ``None`` to read
    the file named by ``BUREAU_LITELLM_CONFIG`` at the first event. ``attempt_hook``:
    whether failures come from LiteLLM's per-attempt hook (by default, where this
    LiteLLM calls it); False reads them from the failure event alone, as on a LiteLLM
    before 1.100 (the tests run both ways on one LiteLLM)."""

    def __init__(self, config: LiteLLMConfig | None = None, *,
                 attempt_hook: bool = ATTEMPT_HOOK) -> None:
        super().__init__()
        self._config = config
        self.attempt_hook = attempt_hook
        self._writer = FactWriter(lambda: self.config)
        self._hooked: collections.OrderedDict[_AttemptKey, None] = collections.OrderedDict()
        self._logged: set[str] = set()
        #: attempts at mapped deployments read from LiteLLM's events
        self.attempts = 0
        #: attempts at deployments the config does not map: counted, not reported
        self.unmapped = 0
        #: requests LiteLLM's proxy refused before calling a deployment: no attempt
        self.refused_by_gateway = 0
        #: streams whose caller hung up before the provider's first chunk: no attempt
        self.hung_up_unanswered = 0

    # ------------------------------------------------------------------ configuration

    @property
    def config(self) -> LiteLLMConfig:
        if self._config is None:
            path = os.environ.get(CONFIG_ENV)
            if not path:
                raise LiteLLMConfigError(f"{CONFIG_ENV} must name the plugin's config file")
            self._config = read_config(Path(path))
        return self._config

    @property
    def slot(self) -> Path | None:
        """This process's spool directory, once the first event claimed it."""
        return self._writer.slot

    @property
    def dropped(self) -> collections.Counter[str]:
        """Facts not written, by reason (as ``bureau_litellm_facts_dropped_total``)."""
        return self._writer.dropped

    @property
    def spooled(self) -> int:
        """Facts signed and spooled."""
        return self._writer.spooled

    # ------------------------------------------------------------------ LiteLLM's hooks

    async def async_log_success_event(self, kwargs: dict[str, Any], response_obj: Any,
                                      start_time: Any, end_time: Any) -> None:
        self._take(kwargs, success=True)

    async def async_log_failure_event(self, kwargs: dict[str, Any], response_obj: Any,
                                      start_time: Any, end_time: Any) -> None:
        """Through a proxy, once per request; the per-attempt hook has already taken
        the attempt it is about, unless the failure came after that hook's turn (a
        stream that broke off) or this LiteLLM has no such hook."""
        if _key(kwargs) in self._hooked:
            return
        self._take(kwargs, success=False)

    async def async_post_call_failure_deployment_hook(
            self, request_data: Mapping[str, Any], exception: Exception, call_type: Any,
            fallback_depth: int | None = None) -> None:
        """One failed attempt at a deployment (LiteLLM 1.100 and later): each retry and
        each fallback hop. LiteLLM awaits it on the request's error path, right after
        the attempt failed: read, queue, return."""
        if not self.attempt_hook:
            return
        try:
            if _internal_call():
                return  # LiteLLM logs neither its successes nor its failures: no fact
            details = call_details(request_data)
            key = _key(details)
            started = key[1]
            if started is None or key in self._hooked:  # a start LiteLLM did not set anew
                started = time.time()
            self._hooked[key] = None
            while len(self._hooked) > _HOOKED_MAX:
                self._hooked.popitem(last=False)
            taken = hook_attempt(request_data, exception, started, self.config)
            if taken is None:
                self._unmapped(deployment_names(request_data))
                return
            self.attempts += 1
            self._writer.submit(Event(*taken))
        except Exception:
            self._writer.warn("event", "could not report a LiteLLM attempt", exc_info=True)

    async def log_failure_fallback_event(self, original_model_group: str,
                                         kwargs: dict[str, Any],
                                         original_exception: Exception) -> None:
        """LiteLLM tried every fallback and gave up: the trace is over. With the
        per-attempt hook, the last fallback's failures are attempts of their own; without
        it (LiteLLM before 1.100), a proxy logs none of them, and the last fallback is
        noted for the request's ``derived`` only — nothing says how it failed."""
        try:
            trace = kwargs.get("litellm_trace_id")
            if isinstance(trace, str):
                last = None if self.attempt_hook else fallback_attempt(kwargs, self.config)
                self._writer.submit(Event(trace, last))
        except Exception:
            self._writer.warn("event", "could not report a LiteLLM request", exc_info=True)

    # ------------------------------------------------------------------ the call's side

    def _take(self, kwargs: dict[str, Any], success: bool) -> None:
        """Read one event into an attempt and queue it: never waits, never raises (a
        reporting failure must not break the gateway's call)."""
        try:
            if not success and refused_by_gateway(kwargs):  # the agent never saw it
                self.refused_by_gateway += 1
                return
            payload = kwargs.get("standard_logging_object") or {}
            if success and kwargs.get("completion_start_time") is None and \
                    hung_up(kwargs, payload):  # nothing came from the agent: nothing to say
                self.hung_up_unanswered += 1
                return
            taken = attempt(kwargs, success, self.config)
            if taken is None:
                self._unmapped(payload)
                return
            self.attempts += 1
            self._writer.submit(Event(*taken))
        except Exception:
            self._writer.warn("event", "could not report a LiteLLM request", exc_info=True)

    def _unmapped(self, payload: Mapping[str, Any]) -> None:
        self.unmapped += 1
        METRICS.unmapped.inc()
        names = f"{payload.get('model_id')!r}/{payload.get('model_group')!r}/" \
                f"{payload.get('model')!r}"
        if names not in self._logged and len(self._logged) < 1000:
            self._logged.add(names)
            log.warning("a call to a deployment the config does not map (deployment id/"
                        "model group/model %s): not reported; add it to [deployments]", names)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Claim this process's spool now (the first event does it otherwise): what an
        earlier run of the slot held is taken back, to be settled by the sweep."""
        self._writer.submit(Event("", None))  # settles no trace: the writer claims, done
        await self.caught_up()

    async def caught_up(self) -> None:
        """Return once every event queued so far is written (held, spooled or dropped)."""
        await self._writer.caught_up()

    async def flush(self) -> None:
        """Wait until everything queued is written and the bureau has answered for
        every spooled fact (as long as it takes: bound it with ``asyncio.timeout``)."""
        await self._writer.flush()

    async def close(self, *, release: bool = True) -> None:
        """Write what is queued, settle every open trace (``release``), and close."""
        await self._writer.close(release=release)


#: The instance a LiteLLM proxy's ``callbacks:`` names.
handler = BureauLogger()

__all__ = ["ATTEMPT_HOOK", "CONFIG_ENV", "BureauLogger", "LiteLLMConfig", "LiteLLMConfigError",
           "config_from_mapping", "derive", "handler", "read_config"]
