"""Every attempt the real LiteLLM proxy makes is one fact (issue 32): with LiteLLM's own
retries (``num_retries`` 2, its default) and fallbacks, against a model provider on
loopback that counts the requests it had. Through the proxy LiteLLM logs one failure
event per request; its per-attempt hook (LiteLLM 1.100 and later) is what names the
retries and the fallbacks' failures. Beside the plugin the same proxy loads it reading
failures from the failure event alone, as on an older LiteLLM: a request's first failure
and its success, as before. A caller that hangs up mid-stream leaves a fact of what the
provider did, not of what the caller did; a request the proxy refuses itself, none.

One proxy for the module (a LiteLLM proxy takes tens of seconds to start on a loaded
machine): each test calls model groups of its own, mapped to agents of its own. The
bureau is away: the facts are read in the plugin's spool, where a fact written twice
would be two rows."""

from __future__ import annotations

import collections
import itertools
import json
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
from aiohttp import web

from reporters import save_key, wire
from reporters.integrations.litellm import ATTEMPT_HOOK
from tests.client.helpers import DEAD_URL
from tests.integrations import litellm_failure_events
from tests.integrations.litellm_proxy import (
    MASTER_KEY,
    NoLiteLLM,
    RunningLiteLLM,
    ask,
    litellm_command,
    model,
    running_litellm,
)
from tests.integrations.support import (
    HITS,
    MESSAGES,
    RESUME,
    Hit,
    held_attempts,
    provider_app,
    worker_facts,
)
from tests.proxy.support import new_agent
from tests.support import missing, serving, until

pytestmark = [pytest.mark.thirdparty, pytest.mark.slow]

#: model group -> the provider's model (what it answers: tests/integrations/support.py)
GROUPS = {"refused": "refused", "primary": "status-503", "backup": "backup",
          "doomed": "status-429", "doomed-backup": "status-500", "flaky": "flaky",
          "good": "good", "streamer": "stalls-mid-stream", "guarded": "guarded"}
AGENTS = {group: new_agent() for group in GROUPS}
FALLBACKS = [{"primary": ["backup"]}, {"doomed": ["doomed-backup"]}]
RETRIES = 2  # LiteLLM's default num_retries, said here so that the counts do not guess
#: a request's retries come within a second (tests/integrations/litellm_proxy.py's
#: RETRY_BACKOFF): this outlasts them on a slow machine
SETTLE_SECONDS = 5
#: the retries test's calls, in order, and what each comes to: "refused" first, as its
#: attempts settle only after SETTLE_SECONDS of quiet (nothing says LiteLLM gave up)
CALLS = {"refused": "500", "primary": "42", "doomed": "429", "flaky": "42", "good": "42"}
FAILED = {"status-503": "FAILURE", "status-429": "DECLINED", "status-500": "FAILURE"}


@dataclass
class Gateway:
    proxy: RunningLiteLLM
    provider: web.Application  # its HITS: every request it had
    #: the spool of the plugin beside it that reads the failure event alone
    failure_events_only: Path


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    try:
        litellm_command()
    except NoLiteLLM as why:
        missing(str(why))
    tmp = tmp_path_factory.mktemp("litellm")
    save_key(wire.generate_key(), tmp / "r.key")
    plugin = {"bureau_url": DEAD_URL, "key_file": "r.key", "spool_dir": "spool",
              "settle_seconds": SETTLE_SECONDS, "deployments": AGENTS}
    source = Path(litellm_failure_events.__file__)
    shutil.copy(source, tmp / source.name)  # LiteLLM loads it from the config's directory
    (tmp / litellm_failure_events.CONFIG).write_text(
        json.dumps({**plugin, "spool_dir": "failure-events-only"}))
    app = provider_app()
    async with serving(app) as provider:
        models = [model(group, model=f"openai/{name}", max_retries=0,
                        api_base=(DEAD_URL if group == "refused" else provider) + "/v1")
                  for group, name in GROUPS.items()]
        router = {"num_retries": RETRIES, "fallbacks": FALLBACKS}
        async with running_litellm(tmp, models, plugin, router=router,
                                   callbacks=[f"{source.stem}.handler"]) as proxy:
            yield Gateway(proxy, app, tmp / "failure-events-only")


def client(proxy: RunningLiteLLM, key: str = MASTER_KEY) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=proxy.url + "/v1", api_key=key, max_retries=0,
                              timeout=120)


def expected(group: str, every_attempt: bool) -> list[tuple[Any, ...]]:
    """A group's facts in the order LiteLLM made the attempts, as
    ``(answered, claimed, well_formed, derived)``: every attempt, or (the failure event
    alone) a request's first failure and its success."""
    answer = (True, None, True, None)
    tries = RETRIES + 1 if every_attempt else 1
    if group in ("good", "backup"):
        return [answer]
    if group == "flaky":  # 503, then the retry answers
        return [(True, "FAILURE", None, "RETRY_ACCEPTED"), answer]
    if group == "refused":  # every try refused, nothing follows: no derived
        return [(False, None, None, None)] * tries
    if group == "doomed-backup" and not every_attempt:
        return []  # the last fallback: LiteLLM's proxy logs no failure event for it
    failed = (True, FAILED[GROUPS[group]], None, None)
    head = "SWITCHED_AGENT" if group in ("primary", "doomed") else None
    return [(*failed[:3], head), *[failed] * (tries - 1)]


def started(fact: dict[str, Any]) -> float:
    """The attempt's start, from its interaction id (``…:<start, µs>``)."""
    return int(fact["interaction"].rsplit(":", 1)[1]) / 1e6


def _windows(facts: list[dict[str, Any]]) -> Iterator[tuple[float, float]]:
    for fact in facts:
        yield started(fact), started(fact) + (fact["latency_ms"] + 1) / 1000


def check_latencies(facts: list[dict[str, Any]], hits: list[Hit]) -> None:
    """Each answered attempt's window (its start, plus its latency) holds the provider's
    handling of it — the request came after it began, the answer went before it ended —
    and the attempts of a group follow one another: no attempt's latency includes an
    earlier attempt or the wait before a retry."""
    assert len(facts) == len(hits)
    windows = list(_windows(facts))
    for (start, end), hit in zip(windows, hits, strict=True):
        assert start <= hit.came and hit.answered <= end, (start, hit, end)
    for (_, end), (start, _) in itertools.pairwise(windows):
        assert end <= start + 0.001


def by_agent(facts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The facts of each agent, in the order of the attempts' starts."""
    out = collections.defaultdict(list)
    for fact in sorted(facts, key=started):
        out[fact["subject"]].append(fact)
    return out


def said(facts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(f["answered"], f["claimed"], f["well_formed"], f["derived"]) for f in facts]


async def test_with_retries_and_fallbacks_every_attempt_is_one_fact(gateway: Gateway) -> None:
    groups = ("refused", "primary", "backup", "doomed", "doomed-backup", "flaky", "good")
    agents = {AGENTS[g] for g in groups}
    names = {GROUPS[g] for g in groups}
    llm = client(gateway.proxy)
    assert {group: await ask(llm, group) for group in CALLS} == CALLS
    await llm.close()
    hits = [h for h in gateway.provider[HITS] if h.model in names]
    # the provider saw each attempt LiteLLM made but the refused ones
    assert len(hits) == sum(len(expected(g, every_attempt=True)) for g in groups
                            if g != "refused")
    attempts = len(hits) + RETRIES + 1
    events_only = sum(len(expected(g, every_attempt=False)) for g in groups)
    plugin = gateway.proxy.spool_dir

    def mine(spool: Path) -> list[dict[str, Any]]:
        return [f for f in worker_facts(spool) if f["subject"] in agents]

    await until("a fact for every attempt",
                lambda: len(mine(plugin)) >= (attempts if ATTEMPT_HOOK else events_only) and
                len(mine(gateway.failure_events_only)) >= events_only, timeout=120, every=0.2)
    facts = mine(plugin)
    assert len(facts) == (attempts if ATTEMPT_HOOK else events_only)
    assert len({f["interaction"] for f in facts}) == len(facts)  # none written twice
    for fact in facts:
        assert fact["caller"] is None  # the master key names nobody
        assert (fact["latency_ms"] is None) == (not fact["answered"])
    each = by_agent(facts)
    for group in groups:
        assert said(each[AGENTS[group]]) == expected(group, ATTEMPT_HOOK), group
        if group != "refused" and ATTEMPT_HOOK:
            check_latencies(each[AGENTS[group]], [h for h in hits if h.model == GROUPS[group]])
    # the plugin on the failure event alone: as before LiteLLM had the hook
    facts = mine(gateway.failure_events_only)
    assert len(facts) == events_only
    each = by_agent(facts)
    for group in groups:
        assert said(each[AGENTS[group]]) == expected(group, every_attempt=False), group


async def test_a_caller_hanging_up_mid_stream_leaves_what_the_provider_did(
        gateway: Gateway) -> None:
    """LiteLLM's proxy logs a stream whose caller hung up as a success
    (``client_disconnected``). It was: answered, the stream had begun — but the answer
    was never whole, and how long it would have taken is not known. The fact said
    ``well_formed: true`` with its latency to the hang-up: what the caller did."""
    llm = client(gateway.proxy)
    stream = await llm.chat.completions.create(model="streamer", messages=MESSAGES,
                                               stream=True)
    first = await anext(aiter(stream))
    assert first.choices[0].delta.content == "4"
    hung_up = time.time()
    await stream.close()  # the caller hangs up, the provider still streaming
    await llm.close()

    def facts() -> list[dict[str, Any]]:
        return [f for f in worker_facts(gateway.proxy.spool_dir)
                if f["subject"] == AGENTS["streamer"]]

    try:  # an answer not whole is held as a failure is, until its request settles
        await until("the attempt's fact", facts, timeout=60)
    finally:
        gateway.provider[RESUME].set()  # and the stalled stream ends
    (fact,) = facts()
    (hit,) = [h for h in gateway.provider[HITS] if h.model == GROUPS["streamer"]]
    assert (fact["answered"], fact["claimed"], fact["well_formed"]) == (True, None, None)
    # timed to the provider's first chunk (begun before LiteLLM had it), which came
    # before the caller hung up; the hang-up is not the agent's time (0.5 ms: rounding)
    end = started(fact) + fact["latency_ms"] / 1000
    assert hit.answered - 0.0005 <= end <= hung_up + 0.0005


async def test_a_request_the_proxy_refuses_itself_is_no_fact(gateway: Gateway) -> None:
    """LiteLLM's proxy logs a request it refuses before calling any deployment (here: a
    key it does not know) as a failed attempt at the model group asked for. The agent
    never saw it: no fact (it was a DECLINED fact about the agent, one per request, from
    anyone at all)."""
    stranger = client(gateway.proxy, key="sk-nobody-knows")
    refusals = [await ask(stranger, "guarded") for _ in range(3)]
    assert all(400 <= int(status) < 500 for status in refusals), refusals
    await stranger.close()
    llm = client(gateway.proxy)
    assert await ask(llm, "guarded") == "42"
    await llm.close()
    agent, spool = AGENTS["guarded"], gateway.proxy.spool_dir

    def facts() -> list[dict[str, Any]]:
        return [f for f in worker_facts(spool) if f["subject"] == agent]

    # the worker writes its events in order, and holds a batch's failures before it
    # spools its facts: once the call's fact is there, a refusal's would be too
    await until("the call's fact", facts, timeout=60)
    (fact,) = facts()
    assert (fact["claimed"], fact["well_formed"]) == (None, True)
    assert [a for a in held_attempts(spool) if a["deployment"] == agent] == []
    assert [h.model for h in gateway.provider[HITS]].count(GROUPS["guarded"]) == 1
