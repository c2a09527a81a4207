"""The LiteLLM plugin across worker processes and bureau outages (issue 32): every
worker's facts reach the bureau — each keeps a spool of its own, and a slot a dead
worker left is adopted — and no call waits on the bureau: with the spool full, facts are
dropped and counted while the calls go on. A worker process is a ``BureauLogger`` (each
LiteLLM worker imports its own); the spools' locks are the kernel's, per open file, so
two loggers in one process contend for them as two processes do. The real LiteLLM proxy
with ``--num_workers 2`` is in test_litellm_proxy.py."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import litellm
import openai
import pytest
from prometheus_client import REGISTRY

from reporters import save_key, wire
from reporters._internal import payloads
from reporters.integrations import litellm_writer as writer_module
from reporters.integrations.litellm import BureauLogger, config_from_mapping
from tests.client.helpers import DEAD_URL
from tests.integrations.support import (
    MESSAGES,
    in_callbacks,
    provider_app,
    reported,
    worker_facts,
)
from tests.integrations.test_litellm import held_records
from tests.proxy.support import ledger_facts, new_agent
from tests.support import BureauUnderTest, serving

pytestmark = pytest.mark.filterwarnings("ignore")  # LiteLLM's own (test_litellm.py)

AGENT = new_agent()


def worker(tmp: Path, bureau_url: str, **more: Any) -> BureauLogger:
    """One worker's plugin, all workers on the same config file (spool_dir included)."""
    if not (tmp / "r.key").exists():
        save_key(wire.generate_key(), tmp / "r.key")
    return BureauLogger(config_from_mapping({
        "bureau_url": bureau_url, "key_file": "r.key", "spool_dir": "spool",
        "settle_seconds": 300, "deployments": {"openai/ok": AGENT, "openai/status-503": AGENT},
        **more}, tmp))


async def calls(logger: BureauLogger, provider: str, model: str, n: int) -> None:
    """``n`` calls, and their attempts written by ``logger`` (LiteLLM runs its success
    hooks in the background: wait for them before the logger leaves the callbacks)."""
    expected = logger.attempts + n
    for _ in range(n):
        with contextlib.suppress(openai.APIStatusError):  # the caller's business
            await litellm.acompletion(model=f"openai/{model}", api_base=provider,
                                      api_key="x", messages=MESSAGES, max_retries=0)
    await reported(lambda: logger.attempts == expected)
    await logger.caught_up()


async def test_two_workers_each_keep_a_spool_and_every_fact_lands(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    save_key(key, tmp_path / "r.key")
    first, second = (worker(tmp_path, bureau.url, settle_seconds=0.2) for _ in range(2))
    async with serving(provider_app()) as url:
        async with in_callbacks(first):
            await calls(first, url + "/v1", "ok", 3)
        async with in_callbacks(second):  # the first is still alive, holding its spool
            await calls(second, url + "/v1", "ok", 2)
            await calls(second, url + "/v1", "status-503", 1)
    assert (first.slot, second.slot) == (tmp_path / "spool" / "worker-0",
                                         tmp_path / "spool" / "worker-1")
    await reported(lambda: not held_records(tmp_path / "spool" / "worker-1"),
                   "the failure to settle")
    for w in (first, second):
        await asyncio.wait_for(w.flush(), 60)
        await w.close()
    facts = await ledger_facts(bureau.database_url, wire.signing_key_id(key))
    assert len(facts) == 6 and len({f["interaction"] for f in facts}) == 6
    assert sorted((f["answered"], str(f["claimed"])) for f in facts) == \
        [(True, "FAILURE")] + [(True, "None")] * 5
    assert not first.dropped and not second.dropped


async def test_the_slot_a_dead_worker_left_is_adopted_and_delivered(
        bureau: BureauUnderTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "ADOPT_EVERY", 0.0)  # at every batch, not each minute
    key = await bureau.reporter(("facts",))
    save_key(key, tmp_path / "r.key")
    alive, doomed = worker(tmp_path, bureau.url), worker(tmp_path, DEAD_URL)
    await alive.start()
    async with serving(provider_app()) as url:
        async with in_callbacks(doomed):  # its bureau unreachable: nothing leaves it
            await calls(doomed, url + "/v1", "ok", 1)
            await calls(doomed, url + "/v1", "status-503", 1)
        slot = doomed.slot
        assert slot == tmp_path / "spool" / "worker-1" and len(held_records(slot)) == 1
        await doomed.close(release=False)  # killed: one fact spooled, one attempt held
        async with in_callbacks(alive):  # the next call on the live worker adopts the slot
            await calls(alive, url + "/v1", "ok", 1)
    await asyncio.wait_for(alive.flush(), 60)
    await alive.close()
    facts = await ledger_facts(bureau.database_url, wire.signing_key_id(key))
    assert sorted((f["answered"], str(f["claimed"])) for f in facts) == \
        [(True, "FAILURE"), (True, "None"), (True, "None")]
    assert held_records(slot) == [] and worker_facts(tmp_path / "spool") == []


async def test_settling_many_attempts_signs_a_slice_per_turn_of_the_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer shares its loop with LiteLLM's calls: settling a slot's held attempts
    (here adopted from a dead worker) signs SEND_SLICE facts per turn of the loop and
    lets the calls run in between. It signed them all in one turn (5,000 adopted: a
    0.4 s stall of every call of the worker)."""
    monkeypatch.setattr(writer_module, "ADOPT_EVERY", 0.0)
    n = 3 * writer_module.SEND_SLICE
    alive, doomed = worker(tmp_path, DEAD_URL), worker(tmp_path, DEAD_URL)
    await alive.start()
    async with in_callbacks(doomed):
        await asyncio.gather(*(litellm.acompletion(
            model="openai/status-503", api_key="x", messages=MESSAGES,
            mock_response="litellm.RateLimitError") for _ in range(n)),
            return_exceptions=True)
        await reported(lambda: doomed.attempts == n)
        await doomed.caught_up()
    assert doomed.slot is not None and len(held_records(doomed.slot)) == n
    await doomed.close(release=False)  # killed with n failures held

    signed, most = 0, 0
    sign = payloads.sign

    def counted(*args: Any) -> Any:
        nonlocal signed
        signed += 1
        return sign(*args)

    async def turns() -> None:
        nonlocal signed, most
        while True:
            most, signed = max(most, signed), 0
            await asyncio.sleep(0)

    monkeypatch.setattr(payloads, "sign", counted)
    counter = asyncio.create_task(turns())
    try:
        async with in_callbacks(alive):  # the next call on the live worker adopts the slot
            await litellm.acompletion(model="openai/ok", api_key="x", messages=MESSAGES,
                                      mock_response="42")
            await reported(lambda: alive.attempts == 1)
            await alive.caught_up()
    finally:
        counter.cancel()
    assert alive.spooled == n + 1 and held_records(doomed.slot) == []
    assert 0 < most <= writer_module.SEND_SLICE
    await alive.close()


def _dropped() -> float:
    return REGISTRY.get_sample_value("bureau_litellm_facts_dropped_total",
                                     {"reason": "spool_full"}) or 0.0


async def test_no_call_waits_when_the_bureau_is_away_and_the_spool_is_full(
        tmp_path: Path) -> None:
    """Today's failure: LiteLLM awaits the fallback-failed hook inline, and the plugin
    waited there for room in a full spool — the call hung as long as the bureau was
    away. The bound below only turns that hang into a failure; nothing is timed."""
    logger = worker(tmp_path, DEAD_URL, max_spooled=2)
    before = _dropped()
    async with serving(provider_app()) as url, in_callbacks(logger):
        await calls(logger, url + "/v1", "ok", 2)  # the spool is full
        router = litellm.Router(model_list=[
            {"model_name": name, "litellm_params": {
                "model": "openai/status-503", "api_base": url + "/v1", "api_key": "x",
                "max_retries": 0}} for name in ("primary", "backup")],
            fallbacks=[{"primary": ["backup"]}], num_retries=0)
        with pytest.raises(openai.APIStatusError):  # every fallback failed: the caller knows
            await asyncio.wait_for(router.acompletion(model="primary", messages=MESSAGES), 60)
        answer = await asyncio.wait_for(litellm.acompletion(
            model="openai/ok", api_base=url + "/v1", api_key="x", messages=MESSAGES), 60)
        assert answer.choices[0].message.content == "42"
        await reported(lambda: logger.attempts == 5)
        await logger.caught_up()
        assert logger.dropped == {"spool_full": 3}  # two failed attempts, one success
        assert _dropped() - before == 3
        assert len(worker_facts(tmp_path / "spool")) == 2 and held_records(logger.slot) == []
    await logger.close()
