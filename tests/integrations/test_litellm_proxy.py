"""The real LiteLLM proxy, end to end on loopback (issue 32): started by its own command
line with the plugin loaded from its config, called with the ``openai`` client and the
master key, models answering with LiteLLM's ``mock_response`` or a port nothing listens
on. Every attempt lands as exactly one fact whose fields say what happened — LiteLLM's
retries and fallbacks included, with two worker processes each taking a spool of their
own, in the bureau's ledger; and with the bureau stopped and the spool full, every call
still returns and the facts it could not keep are counted. Each test needs a proxy of
its own (its workers, its bureau, its spool's size); test_litellm_proxy_attempts.py
shares one among the tests that can."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path
from typing import Any

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bureau.status import spools
from reporters import save_key, wire
from reporters.integrations.litellm import ATTEMPT_HOOK
from tests.client.helpers import DEAD_URL
from tests.integrations.litellm_proxy import (
    MASTER_KEY,
    NoLiteLLM,
    RunningLiteLLM,
    ask,
    litellm_command,
    model,
    running_litellm,
)
from tests.integrations.support import worker_facts
from tests.proxy.support import ledger_facts, new_agent
from tests.support import BureauUnderTest, missing, until

pytestmark = [pytest.mark.thirdparty, pytest.mark.slow]

GOOD, GONE, PRIMARY, BACKUP, DOOMED = (new_agent() for _ in range(5))
DEPLOYMENTS = {"good": GOOD, "refused": GONE, "primary": PRIMARY, "backup": BACKUP,
               "doomed": DOOMED}
MODELS = [model("good", mock_response="42"),
          model("refused", api_base=DEAD_URL + "/v1", max_retries=0),
          model("primary", mock_response="litellm.RateLimitError"),
          model("backup", mock_response="42"),
          model("doomed", mock_response="litellm.RateLimitError")]
#: primary falls back to backup, which answers; doomed to refused, which cannot
FALLBACKS = {"fallbacks": [{"primary": ["backup"]}, {"doomed": ["refused"]}]}
RETRIES = 2  # LiteLLM's default num_retries


@pytest.fixture(autouse=True)
def _litellm() -> None:
    try:
        litellm_command()
    except NoLiteLLM as why:
        missing(str(why))


def client(proxy: RunningLiteLLM) -> openai.AsyncOpenAI:
    """The openai client on the master key. Each call on a connection of its own: the
    kernel gives each new connection to one of the workers, and a kept-alive connection
    would stay with the worker that took it."""
    return openai.AsyncOpenAI(base_url=proxy.url + "/v1", api_key=MASTER_KEY,
                              max_retries=0, timeout=60,
                              default_headers={"Connection": "close"})


def plugin_config(bureau_url: str, **more: Any) -> dict[str, Any]:
    """The plugin's config: settle_seconds outlasts a request's retries (LiteLLM's
    backoff, tests/integrations/litellm_proxy.py's RETRY_BACKOFF, well within it)."""
    return {"bureau_url": bureau_url, "key_file": "r.key", "spool_dir": "spool",
            "settle_seconds": 5, "deployments": DEPLOYMENTS, **more}


async def test_two_workers_every_attempt_lands_as_one_fact(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    save_key(key, tmp_path / "r.key")
    made: collections.Counter[str] = collections.Counter()
    async with running_litellm(tmp_path, MODELS, plugin_config(bureau.url), workers=2,
                               router={**FALLBACKS, "num_retries": RETRIES}) as proxy:
        llm = client(proxy)
        # first, as the attempts of a request nothing follows settle after settle_seconds
        assert await ask(llm, "refused") == "500"  # LiteLLM's own answer to the caller
        assert await ask(llm, "primary") == "42"  # 429s, then the fallback answers
        assert await ask(llm, "doomed") == "429"  # 429s, and the fallback is refused
        made.update(refused=1, primary=1, doomed=1)
        # calls at once until both workers have taken one (each takes its spool at its
        # first event): the kernel chooses the worker of each connection
        while len(list(proxy.spool_dir.glob("worker-*"))) < 2:
            assert made["good"] < 400, "one worker took every call"
            answers = await asyncio.gather(*(ask(llm, "good") for _ in range(16)))
            assert answers == ["42"] * 16
            made["good"] += 16
        await llm.close()
        # one fact per attempt, LiteLLM's retries and the failed fallback included;
        # without LiteLLM's per-attempt hook, a request's first failure only
        tries = RETRIES + 1 if ATTEMPT_HOOK else 1
        gone = 2 * tries if ATTEMPT_HOOK else 1  # refused's own, and doomed's fallback
        expected = made["good"] + (tries + 1) + tries + gone
        kid = wire.signing_key_id(key)
        await until("every fact in the ledger", lambda: _count(bureau, kid, expected),
                    timeout=120, every=0.2)
    facts = await ledger_facts(bureau.database_url, kid)
    assert len(facts) == expected and len({f["interaction"] for f in facts}) == expected
    by_subject = collections.defaultdict(list)
    for fact in facts:
        by_subject[fact["subject"]].append(fact)
        assert fact["caller"] is None  # the master key names nobody
    declined = (True, None, "DECLINED", None, True)
    switched = (True, None, "DECLINED", "SWITCHED_AGENT", True)
    assert [_fields(f) for f in by_subject[GOOD]] == \
        [(True, True, None, None, True)] * made["good"]
    assert [_fields(f) for f in by_subject[GONE]] == [(False, None, None, None, False)] * gone
    assert collections.Counter(_fields(f) for f in by_subject[PRIMARY]) == \
        collections.Counter([switched] + [declined] * (tries - 1))
    assert [_fields(f) for f in by_subject[BACKUP]] == [(True, True, None, None, True)]
    assert collections.Counter(_fields(f) for f in by_subject[DOOMED]) == \
        collections.Counter([switched] + [declined] * (tries - 1))


async def _count(bureau: BureauUnderTest, kid: str, expected: int) -> bool:
    return len(await ledger_facts(bureau.database_url, kid)) >= expected


def _fields(fact: dict[str, Any]) -> tuple[Any, ...]:
    """(answered, well_formed, claimed, derived, latency given)."""
    return (fact["answered"], fact["well_formed"], fact["claimed"], fact["derived"],
            fact["latency_ms"] is not None)


def _sample(text: str, name: str, **labels: str) -> float:
    return sum(s.value for family in text_string_to_metric_families(text)
               for s in family.samples if s.name == name and labels.items() <= s.labels.items())


async def test_the_bureau_stopped_and_the_spool_full_no_call_waits(tmp_path: Path) -> None:
    """Today: a call whose fallbacks all fail hangs while the bureau is away (the plugin
    waited for room in the spool inside a hook LiteLLM awaits). The client's 60 s bound
    only turns such a hang into a failure; nothing here is timed."""
    save_key(wire.generate_key(), tmp_path / "r.key")
    models = [model("good", mock_response="42"),
              *(model(name, mock_response="litellm.RateLimitError")
                for name in ("primary", "backup"))]
    async with running_litellm(tmp_path, models, plugin_config(DEAD_URL, max_spooled=2),
                               router=FALLBACKS, callbacks=["prometheus"]) as proxy:
        llm = client(proxy)
        assert [await ask(llm, "good") for _ in range(2)] == ["42", "42"]
        await until("the spool to fill", lambda: len(worker_facts(proxy.spool_dir)) == 2,
                    timeout=60)
        assert await ask(llm, "primary") == "429"  # both fallbacks refused: the caller knows
        assert [await ask(llm, "good") for _ in range(3)] == ["42"] * 3
        await llm.close()
        # two attempts kept; dropped: primary's and backup's (no retries here; without
        # the per-attempt hook, the first only), and three answers
        failed = 2 if ATTEMPT_HOOK else 1
        await until("the drops to be counted", lambda: _dropped(proxy, failed + 3), timeout=60)
        (status,) = await spools([proxy.url])
    assert status == {"url": proxy.url, "pending": 2, "error": None}
    assert len(worker_facts(proxy.spool_dir)) == 2


async def _dropped(proxy: RunningLiteLLM, n: int) -> bool:
    text = await proxy.metrics()
    return _sample(text, "bureau_litellm_facts_dropped_total", reason="spool_full") == n
