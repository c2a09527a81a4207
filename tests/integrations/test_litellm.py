"""The LiteLLM plugin with real LiteLLM calls (its mock responses stand in for the
providers; the hooks that call the plugin are LiteLLM's own): the facts land in the
worker's spool with LiteLLM's retries and fallbacks as derived outcomes, held failures
survive a restart, and the config refuses what cannot name a caller. Each case of the
docs' tables is in test_litellm_tables.py; workers and outages in
test_litellm_workers.py; the real LiteLLM proxy in test_litellm_proxy*.py."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import litellm
import pytest
from litellm.integrations.custom_logger import CustomLogger

from reporters import save_key, wire
from reporters._internal.spool import DB_FILE
from reporters.integrations.litellm import (
    CONFIG_ENV,
    BureauLogger,
    LiteLLMConfigError,
    config_from_mapping,
)
from reporters.integrations.litellm_facts import (
    call_details,
    deployment_names,
    interaction,
    started_at,
)
from tests.client.helpers import DEAD_URL
from tests.integrations.support import MESSAGES, in_callbacks, reported, worker_facts
from tests.proxy.support import new_agent

# LiteLLM warns from its internals (pydantic over its TypedDicts, its own deprecations),
# some of it inside its background logging, where the suite's warnings-as-errors would
# make LiteLLM skip the very hooks under test: LiteLLM's warnings are its own business.
pytestmark = pytest.mark.filterwarnings("ignore")

PRIMARY, BACKUP, CALLER = new_agent(), new_agent(), new_agent()
VIRTUAL_KEY = "sk-bureau-test-0001"
KEY_HASH = hashlib.sha256(VIRTUAL_KEY.encode()).hexdigest()  # as LiteLLM's hash_token


def config(tmp: Path, **more: Any) -> dict[str, Any]:
    if not (tmp / "r.key").exists():
        save_key(wire.generate_key(), tmp / "r.key")
    return {"bureau_url": DEAD_URL, "key_file": "r.key", "spool_dir": "spool",
            "deployments": {"dep-primary": PRIMARY, "backup": BACKUP,
                            "openai/solo": PRIMARY},
            "callers": {KEY_HASH: CALLER}, **more}


@asynccontextmanager
async def installed(tmp: Path, **more: Any) -> AsyncIterator[BureauLogger]:
    """A plugin in LiteLLM's callbacks, closed (open requests settled) at the end."""
    logger = BureauLogger(config_from_mapping(config(tmp, **more), tmp))
    try:
        async with in_callbacks(logger):
            yield logger
    finally:
        await logger.close()


class Recorder(CustomLogger):
    """LiteLLM's logging payload of every attempt, by the interaction id it gets: a
    logger beside the plugin, after it in LiteLLM's callbacks (so once the recorder has
    an event, the plugin has had it). With LiteLLM's per-attempt failure hook, also each
    failed attempt's start (LiteLLM's) and the moment the hook reached the recorder."""

    def __init__(self) -> None:
        super().__init__()
        self.payloads: dict[str, dict[str, Any]] = {}
        #: interaction id -> (the attempt's start, when the hook came), epoch seconds
        self.hooked: dict[str, tuple[float, float]] = {}
        #: LiteLLM's events and hook calls so far
        self.events = 0

    async def async_post_call_failure_deployment_hook(
            self, request_data: Any, exception: Exception, call_type: Any,
            fallback_depth: int | None = None) -> None:
        came = time.time()
        started = started_at(call_details(request_data))
        assert started is not None
        name = interaction(str(request_data["litellm_call_id"]),
                           {**deployment_names(request_data), "startTime": started})
        self.hooked[name] = (started, came)
        self.events += 1

    async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                                      end_time: Any) -> None:
        self._keep(kwargs)

    async def async_log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                                      end_time: Any) -> None:
        self._keep(kwargs)

    def _keep(self, kwargs: Any) -> None:
        payload = kwargs["standard_logging_object"]
        self.payloads[interaction(kwargs["litellm_call_id"], payload)] = payload
        self.events += 1


def held_records(slot: Path) -> list[str]:
    db = sqlite3.connect(slot / DB_FILE)
    try:
        return [name for (name,) in db.execute("SELECT name FROM held")]
    finally:
        db.close()


def virtual_key_metadata(api_key: str = VIRTUAL_KEY, **auth: Any) -> dict[str, Any]:
    """The request metadata LiteLLM's proxy fills in for a key (its ``user_api_key_*``
    fields), by LiteLLM's own code."""
    try:
        from litellm.proxy._types import UserAPIKeyAuth
        from litellm.proxy.litellm_pre_call_utils import LiteLLMProxyRequestSetup
    except ImportError as exc:
        from tests.support import missing

        missing(f"LiteLLM's proxy cannot be imported ({exc}): litellm[proxy], the test extra")
    return dict(LiteLLMProxyRequestSetup.get_sanitized_user_information_from_key(
        UserAPIKeyAuth(api_key=api_key, **auth)))


async def test_a_fallback_is_a_switch_and_the_caller_comes_from_the_virtual_key(
        tmp_path: Path) -> None:
    router = litellm.Router(model_list=[
        {"model_name": "primary", "model_info": {"id": "dep-primary"},
         "litellm_params": {"model": "openai/a", "api_key": "x",
                            "mock_response": "litellm.RateLimitError"}},
        {"model_name": "backup", "model_info": {"id": "dep-backup"},
         "litellm_params": {"model": "openai/b", "api_key": "x", "mock_response": "42"}},
    ], fallbacks=[{"primary": ["backup"]}], num_retries=1, retry_after=0)
    metadata = virtual_key_metadata(key_alias="team-a")
    assert metadata["user_api_key_hash"] == KEY_HASH
    async with installed(tmp_path, settle_seconds=300):
        answer = await router.acompletion(model="primary", messages=MESSAGES,
                                          metadata=metadata)
        assert answer.choices[0].message.content == "42"
        await reported(lambda: len(worker_facts(tmp_path / "spool")) == 3)
    first, retry, backup = worker_facts(tmp_path / "spool")
    assert (first["subject"], first["derived"]) == (PRIMARY, "SWITCHED_AGENT")
    assert (retry["subject"], retry["derived"]) == (PRIMARY, None)
    assert (backup["subject"], backup["derived"], backup["well_formed"]) == (BACKUP, None, True)
    for fact in (first, retry):  # a 429 is an answer: the provider refused the call
        assert (fact["answered"], fact["claimed"]) == (True, "DECLINED")
        assert fact["latency_ms"] is not None
    assert {f["caller"] for f in (first, retry, backup)} == {CALLER}
    assert len({f["interaction"] for f in (first, retry, backup)}) == 3


async def test_attempts_sharing_the_requests_call_id_are_told_apart(tmp_path: Path) -> None:
    """LiteLLM's proxy gives a request one call id, which its fallbacks share (and a
    provider may repeat a response id): each attempt is still its own interaction."""
    router = litellm.Router(model_list=[
        {"model_name": "primary", "model_info": {"id": "dep-primary"},
         "litellm_params": {"model": "openai/a", "api_key": "x",
                            "mock_response": "litellm.RateLimitError"}},
        {"model_name": "backup", "litellm_params": {"model": "openai/b", "api_key": "x",
                                                    "mock_response": "42"}},
    ], fallbacks=[{"primary": ["backup"]}], num_retries=0)
    async with installed(tmp_path, settle_seconds=300):
        await router.acompletion(model="primary", messages=MESSAGES,
                                 litellm_call_id="one-call-id-for-the-request")
        await reported(lambda: len(worker_facts(tmp_path / "spool")) == 2)
    switched, answered = worker_facts(tmp_path / "spool")
    assert switched["interaction"] != answered["interaction"]
    assert all(f["interaction"].startswith("litellm:one-call-id-for-the-request:")
               for f in (switched, answered))
    assert (switched["derived"], answered["well_formed"]) == ("SWITCHED_AGENT", True)


async def test_a_retry_that_succeeds_is_retry_accepted(tmp_path: Path) -> None:
    trace = "trace-retry-1"
    async with installed(tmp_path, settle_seconds=300):
        with pytest.raises(litellm.RateLimitError):
            await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                                      mock_response="litellm.RateLimitError",
                                      litellm_trace_id=trace)
        await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                                  mock_response="42", litellm_trace_id=trace)
        await reported(lambda: len(worker_facts(tmp_path / "spool")) == 2)
    failed, kept = worker_facts(tmp_path / "spool")
    assert (failed["derived"], kept["derived"]) == ("RETRY_ACCEPTED", None)
    assert failed["caller"] is None  # no key: no caller


async def test_a_failure_nothing_follows_is_reported_after_the_window(
        tmp_path: Path) -> None:
    async with installed(tmp_path, settle_seconds=0.2):
        with pytest.raises(litellm.Timeout):
            await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                                      mock_timeout=True, timeout=0.01)
        await reported(lambda: len(worker_facts(tmp_path / "spool")) == 1)
    (fact,) = worker_facts(tmp_path / "spool")
    assert (fact["answered"], fact["latency_ms"], fact["derived"]) == (False, None, None)


async def test_an_unmapped_deployment_is_counted_not_guessed(tmp_path: Path) -> None:
    async with installed(tmp_path) as plugin:
        await litellm.acompletion(model="openai/elsewhere", api_key="x", messages=MESSAGES,
                                  mock_response="hi")
        await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                                  mock_response="hi")
        await reported(lambda: len(worker_facts(tmp_path / "spool")) == 1)
        await reported(lambda: plugin.unmapped == 1)
    assert [f["subject"] for f in worker_facts(tmp_path / "spool")] == [PRIMARY]


async def test_held_failures_survive_a_restart(tmp_path: Path) -> None:
    settings = config_from_mapping(config(tmp_path, settle_seconds=3600), tmp_path)
    first = BureauLogger(settings)
    async with in_callbacks(first):
        with pytest.raises(litellm.RateLimitError):
            await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                                      mock_response="litellm.RateLimitError")
        await first.caught_up()
    assert first.slot == tmp_path / "spool" / "worker-0"
    assert len(held_records(first.slot)) == 1
    await first.close(release=False)  # as a crash would leave it: held, not spooled
    assert worker_facts(tmp_path / "spool") == []
    second = BureauLogger(settings)
    await second.start()  # takes the slot, and the held failure back
    assert second.slot == first.slot
    await second.close()  # and settles it
    (fact,) = worker_facts(tmp_path / "spool")
    assert (fact["subject"], fact["answered"], fact["claimed"]) == (PRIMARY, True, "DECLINED")
    assert held_records(first.slot) == []


def test_the_handler_reads_its_config_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reporters.integrations.litellm import handler

    assert isinstance(handler, litellm.integrations.custom_logger.CustomLogger)
    raw = config(tmp_path)
    (tmp_path / "bureau.json").write_text(json.dumps(raw))
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "bureau.json"))
    assert BureauLogger().config.deployments["backup"] == BACKUP
    monkeypatch.delenv(CONFIG_ENV)
    with pytest.raises(LiteLLMConfigError, match=CONFIG_ENV):
        _ = BureauLogger().config
    with pytest.raises(LiteLLMConfigError, match=r"deployments\.x"):
        config_from_mapping({**raw, "deployments": {"x": "ed25519:nope"}})
    with pytest.raises(LiteLLMConfigError, match="max_spooled"):
        config_from_mapping({**raw, "max_spooled": 0})


async def test_a_config_that_cannot_be_read_is_said_once_not_per_call(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Each call read the missing config again and logged a traceback: one per call."""
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    recorder = Recorder()
    async with in_callbacks(BureauLogger()), in_callbacks(recorder):
        for _ in range(3):
            answer = await litellm.acompletion(model="openai/solo", api_key="x",
                                               messages=MESSAGES, mock_response="42")
            assert answer.choices[0].message.content == "42"  # the call goes on
        await reported(lambda: len(recorder.payloads) == 3)  # and the plugin had them
    said = [r for r in caplog.records if r.name == "reporters.integrations.litellm"]
    assert len(said) == 1 and said[0].exc_info is not None
    assert CONFIG_ENV in str(said[0].exc_info[1])


@pytest.mark.parametrize(("name", "why"), [
    ("litellm_proxy_master_key", "master key"),  # one fixed string for whoever holds it
    (VIRTUAL_KEY, "not the key itself"),  # the key, where its hash belongs
    ("team-a", "not the key itself"),  # an alias: a UI session logs it in the hash's place
    (KEY_HASH.upper(), "not the key itself"),
])
def test_callers_name_virtual_key_hashes_only(tmp_path: Path, name: str, why: str) -> None:
    """The master key names nobody; only a virtual key's SHA-256 names a caller."""
    with pytest.raises(LiteLLMConfigError, match=why):
        config_from_mapping({**config(tmp_path), "callers": {name: CALLER}}, tmp_path)
