"""The LiteLLM plugin with real LiteLLM calls (its mock responses stand in for the
providers; the hooks that call the plugin are LiteLLM's own): the facts land in the spool
file with LiteLLM's retries and fallbacks as derived outcomes, and the caller from the
virtual key's hash as LiteLLM's proxy fills it in."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

# The model cost map from the package, not fetched from the network at import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm

from reporters import save_key, wire
from reporters.integrations.litellm import (
    CONFIG_ENV,
    BureauLogger,
    LiteLLMConfigError,
    config_from_mapping,
)
from tests.client.helpers import DEAD_URL
from tests.otlp.support import spooled_facts
from tests.proxy.support import new_agent
from tests.support import until

# LiteLLM warns from its internals (pydantic over its TypedDicts, its own deprecations),
# some of it inside its background logging, where the suite's warnings-as-errors would
# make LiteLLM skip the very hooks under test: LiteLLM's warnings are its own business.
pytestmark = pytest.mark.filterwarnings("ignore")

PRIMARY, BACKUP, CALLER = new_agent(), new_agent(), new_agent()
VIRTUAL_KEY = "sk-bureau-test-0001"
KEY_HASH = hashlib.sha256(VIRTUAL_KEY.encode()).hexdigest()  # as LiteLLM's hash_token
MESSAGES = [{"role": "user", "content": "What is 6 x 7?"}]


def _config(tmp: Path, **more: Any) -> dict[str, Any]:
    save_key(wire.generate_key(), tmp / "r.key")
    return {"bureau_url": DEAD_URL, "key_file": "r.key", "spool_dir": "spool",
            "deployments": {"dep-primary": PRIMARY, "backup": BACKUP,
                            "openai/solo": PRIMARY},
            "callers": {KEY_HASH: CALLER}, **more}


@asynccontextmanager
async def installed(tmp: Path, settle: float) -> AsyncIterator[BureauLogger]:
    """A plugin in LiteLLM's callbacks, as a LiteLLM proxy's config installs it."""
    logger = BureauLogger(config_from_mapping(_config(tmp, settle_seconds=settle), tmp))
    before = list(litellm.callbacks)
    litellm.callbacks = [*before, logger]
    try:
        yield logger
    finally:
        litellm.callbacks = before
        # LiteLLM copies callbacks into lists of its own, and keeps one per type there:
        # take this one out, or the next test's would never be called.
        litellm.logging_callback_manager.remove_callback_from_all_lists(logger)
        await logger.close()


@pytest.fixture
async def plugin(tmp_path: Path) -> AsyncIterator[BureauLogger]:
    async with installed(tmp_path, 300) as logger:
        yield logger


async def reported(check: Callable[[], bool]) -> None:
    """Wait on progress: LiteLLM runs its success hooks in the background."""
    await until("the plugin to report", check, timeout=60, every=0.02)


def _virtual_key_metadata() -> dict[str, Any]:
    """The request metadata LiteLLM's proxy fills in for a virtual key (its
    ``user_api_key_*`` fields; the hash is the key's SHA-256, as ``hash_token``)."""
    try:
        from litellm.proxy._types import UserAPIKeyAuth
        from litellm.proxy.litellm_pre_call_utils import LiteLLMProxyRequestSetup
    except ImportError:  # litellm without its [proxy] extra: the same fields by hand
        return {"user_api_key_hash": KEY_HASH, "user_api_key_alias": "team-a"}
    auth = UserAPIKeyAuth(api_key=VIRTUAL_KEY, key_alias="team-a")
    return dict(LiteLLMProxyRequestSetup.get_sanitized_user_information_from_key(auth))


async def test_a_fallback_is_a_switch_and_the_caller_comes_from_the_virtual_key(
        plugin: BureauLogger, tmp_path: Path) -> None:
    router = litellm.Router(model_list=[
        {"model_name": "primary", "model_info": {"id": "dep-primary"},
         "litellm_params": {"model": "openai/a", "api_key": "x",
                            "mock_response": "litellm.RateLimitError"}},
        {"model_name": "backup", "model_info": {"id": "dep-backup"},
         "litellm_params": {"model": "openai/b", "api_key": "x", "mock_response": "42"}},
    ], fallbacks=[{"primary": ["backup"]}], num_retries=1, retry_after=0)
    metadata = _virtual_key_metadata()
    assert metadata["user_api_key_hash"] == KEY_HASH
    answer = await router.acompletion(model="primary", messages=MESSAGES, metadata=metadata)
    assert answer.choices[0].message.content == "42"
    await reported(lambda: len(spooled_facts(tmp_path / "spool")) == 3)
    first, retry, backup = spooled_facts(tmp_path / "spool")
    assert (first["subject"], first["derived"]) == (PRIMARY, "SWITCHED_AGENT")
    assert (retry["subject"], retry["derived"]) == (PRIMARY, None)
    assert (backup["subject"], backup["derived"], backup["well_formed"]) == (BACKUP, None, True)
    for fact in (first, retry):  # a 429 is an answer, a refusal of the call
        assert fact["answered"] is True and fact["latency_ms"] is not None
    assert {f["caller"] for f in (first, retry, backup)} == {CALLER}
    assert len({f["interaction"] for f in (first, retry, backup)}) == 3


async def test_a_retry_that_succeeds_is_retry_accepted(plugin: BureauLogger,
                                                       tmp_path: Path) -> None:
    trace = "trace-retry-1"
    with pytest.raises(litellm.RateLimitError):
        await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                                  mock_response="litellm.RateLimitError",
                                  litellm_trace_id=trace)
    await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                              mock_response="42", litellm_trace_id=trace)
    await reported(lambda: len(spooled_facts(tmp_path / "spool")) == 2)
    failed, kept = spooled_facts(tmp_path / "spool")
    assert (failed["derived"], kept["derived"]) == ("RETRY_ACCEPTED", None)
    assert failed["caller"] is None  # no virtual key: no caller


async def test_a_failure_nothing_follows_is_reported_after_the_window(
        tmp_path: Path) -> None:
    async with installed(tmp_path, 0.2):
        with pytest.raises(litellm.Timeout):
            await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                                      mock_timeout=True, timeout=0.01)
        await reported(lambda: len(spooled_facts(tmp_path / "spool")) == 1)
    (fact,) = spooled_facts(tmp_path / "spool")
    assert (fact["answered"], fact["latency_ms"], fact["derived"]) == (False, None, None)


async def test_an_unmapped_deployment_is_counted_not_guessed(plugin: BureauLogger,
                                                             tmp_path: Path) -> None:
    await litellm.acompletion(model="openai/elsewhere", api_key="x", messages=MESSAGES,
                              mock_response="hi")
    await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                              mock_response="hi")
    await reported(lambda: len(spooled_facts(tmp_path / "spool")) == 1)
    await reported(lambda: plugin.unmapped == 1)
    assert [f["subject"] for f in spooled_facts(tmp_path / "spool")] == [PRIMARY]


async def test_held_failures_survive_a_restart(tmp_path: Path) -> None:
    config = config_from_mapping(_config(tmp_path, settle_seconds=3600), tmp_path)
    first = BureauLogger(config)
    litellm.callbacks = [first]
    try:
        with pytest.raises(litellm.RateLimitError):
            await litellm.acompletion(model="openai/solo", api_key="x", messages=MESSAGES,
                                      mock_response="litellm.RateLimitError")
        await reported(lambda: bool(first._traces))
        reporter = await first.reporter()
        await reported(lambda: True)
        assert len(await reporter.held()) == 1
    finally:
        litellm.callbacks = []
        litellm.logging_callback_manager.remove_callback_from_all_lists(first)
    await first.close(release=False)  # as a crash would leave it: held, not spooled
    assert spooled_facts(tmp_path / "spool") == []
    second = BureauLogger(config)
    await second.reporter()  # takes the held failure back
    await second.close()  # and releases it
    (fact,) = spooled_facts(tmp_path / "spool")
    assert fact["subject"] == PRIMARY and fact["answered"] is True


def test_the_handler_reads_its_config_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reporters.integrations.litellm import handler

    assert isinstance(handler, litellm.integrations.custom_logger.CustomLogger)
    raw = _config(tmp_path)
    (tmp_path / "bureau.json").write_text(json.dumps(raw))
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "bureau.json"))
    assert BureauLogger().config.deployments["backup"] == BACKUP
    monkeypatch.delenv(CONFIG_ENV)
    with pytest.raises(LiteLLMConfigError, match=CONFIG_ENV):
        _ = BureauLogger().config
    with pytest.raises(LiteLLMConfigError, match=r"deployments\.x"):
        config_from_mapping({**raw, "deployments": {"x": "ed25519:nope"}})
