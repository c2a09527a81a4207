"""docs/litellm.md held to the code: its config and its metrics, and every row of its
three tables ("What a fact says") shown — each case made to happen with LiteLLM calling a
provider on loopback (an OpenAI-compatible server answering as the row says, a port
nothing listens on, a name that cannot resolve, a server that never answers), with the
plugin in LiteLLM's callbacks; the fact it writes is held to the row, read from the
table itself. A second logger beside it records LiteLLM's own logging payload, against
which the latency is checked. The attempts and what LiteLLM did next are shown both
ways the plugin reads a failure: from LiteLLM's per-attempt hook (LiteLLM 1.100 and
later) and from its failure event alone (as on an older LiteLLM)."""

from __future__ import annotations

import contextlib
import re
import tomllib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import litellm
import openai
import pytest

from reporters import save_key, wire
from reporters.integrations.litellm import (
    ATTEMPT_HOOK,
    BureauLogger,
    LiteLLMConfig,
    config_from_mapping,
)
from reporters.integrations.litellm_metrics import METRICS
from tests.client.helpers import DEAD_URL
from tests.docs.test_docs import _table_rows
from tests.integrations.support import MESSAGES, in_callbacks, provider_app, reported, worker_facts
from tests.integrations.test_litellm import KEY_HASH, Recorder, virtual_key_metadata
from tests.proxy.support import new_agent
from tests.proxy.test_docs import check_metrics_table
from tests.support import missing, serving

pytestmark = pytest.mark.filterwarnings("ignore")  # LiteLLM's own (test_litellm.py)

TEXT = (Path(__file__).resolve().parents[2] / "docs" / "litellm.md").read_text()
SECTION = TEXT[TEXT.index("## What a fact says"):]
ATTEMPTS = _table_rows(SECTION, "| the attempt |")
DERIVED = _table_rows(SECTION, "| what LiteLLM did after a failed thread |")
CALLERS = _table_rows(SECTION, "| the request's key |")

AGENT, OTHER, CALLER = new_agent(), new_agent(), new_agent()
UNRESOLVABLE = "http://no-such-host.invalid"  # RFC 6761: never resolves


class EarlyRecorder(Recorder):
    """A recorder before the plugin in LiteLLM's callbacks (a class of its own: LiteLLM
    keeps one logger per class in some of its lists)."""


@dataclass
class Running:
    provider: str  # the provider's base URL
    recorder: Recorder  # after the plugin
    early: EarlyRecorder  # before it
    logger: BureauLogger

    async def logged(self, n: int) -> None:
        """The plugin has the ``n`` attempts, and the recorder after it every event the
        one before it had (LiteLLM runs its success hooks in the background)."""
        await reported(lambda: self.logger.attempts == n and
                       0 < self.early.events == self.recorder.events)

    def hooked(self, fact: dict[str, Any]) -> bool:
        """Whether the fact comes from LiteLLM's per-attempt hook."""
        return self.logger.attempt_hook and fact["interaction"] in self.recorder.hooked

    def started(self, fact: dict[str, Any]) -> float:
        """When LiteLLM started the fact's attempt."""
        name = fact["interaction"]
        if self.hooked(fact):
            return self.recorder.hooked[name][0]
        return float(self.recorder.payloads[name]["startTime"])

    def check_latency(self, fact: dict[str, Any]) -> None:
        """The fact's latency is the attempt's own time as LiteLLM measured it: for a
        success or a stream that broke, its logging payload's start to end; for a
        failure the per-attempt hook took, LiteLLM's start of the attempt to the hook's
        call, which came after the recorder before the plugin, before the one after."""
        name = fact["interaction"]
        if self.hooked(fact):
            started, latest = self.recorder.hooked[name]
            earliest = self.early.hooked[name][1]
            low, high = (round((t - started) * 1000) for t in (earliest, latest))
            assert low <= fact["latency_ms"] <= high, (low, fact["latency_ms"], high)
        else:
            payload = self.recorder.payloads[name]
            assert fact["latency_ms"] == \
                max(0, round((payload["endTime"] - payload["startTime"]) * 1000))


@pytest.fixture(params=[True, False], ids=["per-attempt hook", "failure events only"])
def attempt_hook(request: pytest.FixtureRequest) -> bool:
    """Whether the plugin reads failures from LiteLLM's per-attempt hook."""
    if request.param and not ATTEMPT_HOOK:
        missing("this LiteLLM has no per-attempt failure hook (LiteLLM 1.100 and later)")
    return bool(request.param)


@asynccontextmanager
async def plugin(tmp: Path, attempt_hook: bool = ATTEMPT_HOOK) -> AsyncIterator[Running]:
    """The provider, the recorder and the plugin; the plugin is closed (every request
    settled) when the block ends."""
    save_key(wire.generate_key(), tmp / "r.key")
    models = ("ok", "status-429", "status-400", "status-500", "status-503", "hang",
              "breaks-mid-stream")
    logger = BureauLogger(config_from_mapping({
        "bureau_url": DEAD_URL, "key_file": "r.key", "spool_dir": "spool",
        "settle_seconds": 300, "callers": {KEY_HASH: CALLER},
        "deployments": {**{f"openai/{m}": AGENT for m in models}, "backup": OTHER}}, tmp),
        attempt_hook=attempt_hook)
    recorder, early = Recorder(), EarlyRecorder()
    async with AsyncExitStack() as stack:
        url = await stack.enter_async_context(serving(provider_app()))
        stack.push_async_callback(logger.close)
        await stack.enter_async_context(in_callbacks(early))
        await stack.enter_async_context(in_callbacks(logger))
        await stack.enter_async_context(in_callbacks(recorder))
        yield Running(url + "/v1", recorder, early, logger)


async def call(base: str, model: str = "ok", **more: Any) -> None:
    """One attempt, as a LiteLLM proxy makes it (no retries inside the provider's SDK),
    a stream read to its end; its error is the caller's business."""
    with contextlib.suppress(openai.OpenAIError):  # LiteLLM's errors are openai's
        answer = await litellm.acompletion(model=f"openai/{model}", api_base=base,
                                           api_key="x", messages=MESSAGES, max_retries=0,
                                           **more)
        if more.get("stream"):
            async for _ in answer:
                pass


#: the first cell of each row of "| the attempt |" -> the calls that make it happen
#: (provider URL, model, options); None as the URL: the provider's own
ATTEMPT_CASES: dict[str, list[tuple[str | None, str, dict[str, Any]]]] = {
    "the deployment answered": [(None, "ok", {}), (None, "ok", {"stream": True})],
    "the provider answered a 4xx status (a rate limit, a request it will not take: "
    "`RateLimitError` 429, `BadRequestError` 400)": [(None, "status-429", {}),
                                                     (None, "status-400", {})],
    "the provider answered a 5xx status (`InternalServerError` 500, "
    "`ServiceUnavailableError` 503)": [(None, "status-500", {}), (None, "status-503", {}),
                                       (None, "status-503", {"stream": True})],
    "the provider's stream broke off after its first chunk (LiteLLM says "
    "`APIConnectionError`, `500_PROVIDER_CONNECTION_ERROR`)": [
        (None, "breaks-mid-stream", {"stream": True})],
    "the connection was refused (LiteLLM says `InternalServerError`, 500, "
    "`500_PROVIDER_CONNECTION_ERROR`)": [(DEAD_URL + "/v1", "ok", {})],
    "the provider's name does not resolve (the same `InternalServerError` from LiteLLM)": [
        (UNRESOLVABLE + "/v1", "ok", {})],
    "the provider did not answer in time (`Timeout`, 408)": [(None, "hang", {"timeout": 1})],
}


def _cell(text: str) -> Any:
    return {"true": True, "false": False, "null": None}.get(text, text.strip("`"))


def test_every_row_has_its_case_and_every_case_its_row() -> None:
    assert [row[0] for row in ATTEMPTS] == list(ATTEMPT_CASES)
    assert [row[0] for row in DERIVED] == list(DERIVED_CASES)
    assert [row[0] for row in CALLERS] == list(CALLER_CASES)


@pytest.mark.parametrize("row", ATTEMPTS, ids=[r[0][:40] for r in ATTEMPTS])
async def test_what_an_attempt_says(tmp_path: Path, row: list[str],
                                    attempt_hook: bool) -> None:
    answered, latency, claimed, well_formed = (_cell(c) for c in row[1:])
    cases = ATTEMPT_CASES[row[0]]
    async with plugin(tmp_path, attempt_hook) as running:
        for url, model, more in cases:
            await call(url or running.provider, model, **more)
        await running.logged(len(cases))
    facts = worker_facts(tmp_path / "spool")
    assert len(facts) == len(cases)  # one fact per attempt
    for fact in facts:
        assert (fact["subject"], fact["answered"], fact["claimed"], fact["well_formed"]) == \
            (AGENT, answered, claimed, well_formed), fact
        if latency is None:
            assert fact["latency_ms"] is None
        else:
            running.check_latency(fact)


async def _fell_back(provider: str, backup: str = "ok") -> None:
    router = litellm.Router(model_list=[
        {"model_name": "primary", "litellm_params": {
            "model": "openai/status-503", "api_base": provider, "api_key": "x",
            "max_retries": 0}},
        {"model_name": "backup", "litellm_params": {
            "model": f"openai/{backup}", "api_base": provider, "api_key": "x",
            "max_retries": 0}}],
        fallbacks=[{"primary": ["backup"]}], num_retries=0)
    with contextlib.suppress(openai.OpenAIError):
        await router.acompletion(model="primary", messages=MESSAGES)


async def _fell_back_in_vain(provider: str) -> None:
    await _fell_back(provider, backup="status-429")


async def _retried(provider: str) -> None:
    # LiteLLM's retries of one request share its trace id
    await call(provider, "status-429", litellm_trace_id="trace-retried")
    await call(provider, "ok", litellm_trace_id="trace-retried")


async def _gave_up(provider: str) -> None:
    await call(provider, "status-500", litellm_trace_id="trace-gave-up")


#: the first cell of each row of the derived table -> the ways to make it happen:
#: (how, attempts LiteLLM logs)
DERIVED_CASES = {
    "fell back to another agent": [(_fell_back, 2), (_fell_back_in_vain, 2)],
    "retried the same agent, and a retry succeeded": [(_retried, 2)],
    "gave up": [(_gave_up, 1)],
}


@pytest.mark.parametrize(("row", "case"), [(row, n) for row in DERIVED
                                           for n in range(len(DERIVED_CASES[row[0]]))],
                         ids=lambda x: x[0] if isinstance(x, list) else str(x))
async def test_what_litellm_did_next(tmp_path: Path, row: list[str], case: int,
                                     attempt_hook: bool) -> None:
    how, attempts = DERIVED_CASES[row[0]][case]
    async with plugin(tmp_path, attempt_hook) as running:
        await how(running.provider)
        await running.logged(attempts)
    facts = worker_facts(tmp_path / "spool")
    assert len(facts) == attempts
    first = min((f for f in facts if f["subject"] == AGENT), key=running.started)
    assert first["derived"] == _cell(row[1])
    assert all(f["derived"] is None for f in facts if f is not first)


#: the first cell of each row of the caller table -> the metadata LiteLLM's proxy logs
CALLER_CASES = {
    "a virtual key whose hash is in `[callers]`":
        lambda: virtual_key_metadata(key_alias="team-a"),
    "a virtual key whose hash is not in `[callers]`":
        lambda: virtual_key_metadata("sk-someone-else"),
    "the master key (LiteLLM logs `user_api_key_hash` as `litellm_proxy_master_key`)":
        lambda: virtual_key_metadata("litellm_proxy_master_key", user_id="default_user_id"),
    "a UI session (LiteLLM logs the key's alias where the hash goes)":
        lambda: virtual_key_metadata("sk-session", key_alias=KEY_HASH,
                                     is_session_token=True),
    "no key (a proxy without a `master_key`)": dict,
}


@pytest.mark.parametrize("row", CALLERS, ids=[r[0][:40] for r in CALLERS])
async def test_who_the_caller_is(tmp_path: Path, row: list[str]) -> None:
    metadata = CALLER_CASES[row[0]]()
    expected = CALLER if row[1] == "that key id" else _cell(row[1])
    async with plugin(tmp_path) as running:
        await call(running.provider, metadata=metadata)
        await running.logged(1)
    (fact,) = worker_facts(tmp_path / "spool")
    assert fact["caller"] == expected


# --------------------------------------------------------------------------- the docs

def test_every_metric_is_documented() -> None:
    check_metrics_table(TEXT, METRICS, "bureau_litellm_", "| LiteLLM plugin metric | type |")


def test_the_docs_config_is_a_valid_config(tmp_path: Path) -> None:
    assert "callbacks: reporters.integrations.litellm.handler" in TEXT
    block = re.findall(r"```toml\n(.*?)```", TEXT, re.S)[0]
    raw = tomllib.loads(block.replace("ed25519:REPLACE-WITH-THE-AGENTS-KEY-ID", new_agent())
                        .replace("ed25519:REPLACE-WITH-THE-CALLERS-KEY-ID", new_agent()))
    config = config_from_mapping(raw, tmp_path)
    assert "openai/gpt-4o" in config.deployments and len(config.callers) == 1
    fields = {row[0].strip("`") for row in _table_rows(TEXT, "| field | meaning |")}
    assert fields == {f for f in LiteLLMConfig.__dataclass_fields__} == set(raw)
