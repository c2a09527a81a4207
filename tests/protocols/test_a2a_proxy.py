"""A2A through the proxy, end to end: an agent built with a2a-sdk's server, called with
a2a-sdk's client through the proxy, the facts read back from the bureau's ledger. Each
task is one fact, decided by its last state (docs/proxy.md, "A2A")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import reporters
from reporters.protocols.a2a import OUTPUT_MODES_PROMISE, SKILL_PROMISE, STREAMING_PROMISE
from tests.protocols.a2a_agent import Caller, a2a_agent
from tests.proxy.support import ShiftedClock, running_proxy, stored_facts
from tests.support import BureauUnderTest

MODES, SKILL, STREAM = OUTPUT_MODES_PROMISE, SKILL_PROMISE, STREAMING_PROMISE


def outcome(fact: dict[str, Any]) -> tuple[Any, ...]:
    return (fact["answered"], fact["well_formed"], fact["claimed"], fact["derived"],
            {p["promise"]: p["kept"] for p in fact["promises"]})


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_each_task_is_one_fact_that_says_how_it_ended(
        bureau: BureauUnderTest, tmp_path: Path, version: str) -> None:
    agent = reporters.key_id(reporters.generate_key())
    signer = reporters.generate_key()
    key = await bureau.reporter(("facts",))
    # Windows no machine passes while the calls run (a retry, a continuation, a cancel
    # all come in time however loaded it is); passed on purpose once they are done.
    clock = ShiftedClock()
    async with a2a_agent(version) as base, running_proxy(
            bureau, tmp_path, [{"prefix": "/helper", "agent": agent, "upstream": base,
                                "protocol": "a2a"}],
            reporter=key, settle=60, quiet=120, clock=clock) as px:
        assert px.proxy.cards.declared("/helper") is not None  # read at start
        caller = Caller(px.url + "/helper", signer)
        try:
            ids: dict[str, list[str]] = {}
            for text in ("complete", "reject"):
                ids[text] = (await caller.send(text)).interactions
            ids["pdf"] = (await caller.send("pdf", metadata={"skill": "solve"})).interactions
            ids["skill"] = (await caller.send("complete", metadata={"skill": "solve"})
                            ).interactions
            ids["no-skill"] = (await caller.send("complete", metadata={"skill": "juggle"})
                               ).interactions
            streamed = await caller.send("complete", streaming=True)
            assert len(streamed.events) > 1  # the stream came through as events
            ids["stream"] = streamed.interactions
            asked = await caller.send("ask")
            answered = await caller.send("celsius", task=asked.task)
            ids["ask-then-answer"] = asked.interactions + answered.interactions
            failed = await caller.send("fail")
            retried = await caller.send("complete", context_id=failed.task.context_id)
            ids["fail-then-retry"] = failed.interactions
            ids["the-retry"] = retried.interactions
            working = await caller.send("work")
            polled = await caller.get(working.task)
            cancelled = await caller.cancel(working.task)
            ids["cancelled"] = working.interactions + caller.interactions[-2:]
            assert (polled.status.state, cancelled.status.state) == (2, 5)
            ids["left-waiting"] = (await caller.send("ask")).interactions
        finally:
            await caller.close()
        clock.advance(121)  # silence past quiet_seconds: the task left waiting ends
        await px.proxy.settle()
    # One interaction per task, whatever number of calls it took.
    assert {k: len(set(v)) for k, v in ids.items()} == dict.fromkeys(ids, 1), ids
    assert len(ids["ask-then-answer"]) == 2 and len(ids["cancelled"]) == 3
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    assert len(facts) == len(ids)
    got = {name: outcome(facts[i[0]]) for name, i in ids.items()}
    assert got == {
        # the card's default output modes are not a promise (docs/proxy.md): only the
        # named skill's own are; a skill the card lacks is the caller's doing
        "complete": (True, True, "SUCCESS", None, {}),
        "reject": (True, True, "DECLINED", None, {}),
        "pdf": (True, True, "SUCCESS", None, {MODES: False, SKILL: True}),
        "skill": (True, True, "SUCCESS", None, {MODES: True, SKILL: True}),
        "no-skill": (True, True, "SUCCESS", None, {}),
        "stream": (True, True, "SUCCESS", None, {STREAM: True}),
        "ask-then-answer": (True, True, "SUCCESS", None, {}),
        "fail-then-retry": (True, True, "FAILURE", "RETRY_ACCEPTED", {}),
        "the-retry": (True, True, "SUCCESS", None, {}),
        "cancelled": (True, True, None, "ABANDONED", {}),
        "left-waiting": (True, True, None, "ABANDONED", {}),
    }
    assert all(f["caller"] == reporters.key_id(signer) for f in facts.values())
    assert all(isinstance(f["latency_ms"], int) for f in facts.values())


async def test_what_the_caller_or_another_party_did_is_not_the_agents(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    """SPEC §4 (r4), "The fact is about the agent". A task that fails after its caller
    named a skill the agent's card does not offer was refused, not failed: ``DECLINED``
    (a skill the card lists, then failed, is the agent's ``FAILURE``). An unsigned
    cancel may be anybody's — unsigned callers cannot be told apart, so another party
    could cancel the task: it makes no ``ABANDONED``."""
    agent = reporters.key_id(reporters.generate_key())
    key = await bureau.reporter(("facts",))
    clock = ShiftedClock()
    async with a2a_agent("1.0") as base, running_proxy(
            bureau, tmp_path, [{"prefix": "/helper", "agent": agent, "upstream": base,
                                "protocol": "a2a"}],
            reporter=key, settle=60, quiet=120, clock=clock) as px:
        signed = Caller(px.url + "/helper", reporters.generate_key())
        unsigned = Caller(px.url + "/helper")
        try:
            ids = {
                "an unlisted skill, failed": (await signed.send(
                    "fail", metadata={"skill": "juggle"})).interactions,
                "a listed skill, failed": (await signed.send(
                    "fail", metadata={"skill": "solve"})).interactions,
            }
            working = await unsigned.send("work")
            cancelled = await unsigned.cancel(working.task)
            assert cancelled.status.state == 5  # TASK_STATE_CANCELED
            ids["an unsigned cancel"] = working.interactions + unsigned.interactions[-1:]
        finally:
            await signed.close()
            await unsigned.close()
        clock.advance(121)
        await px.proxy.settle()
    assert {k: len(set(v)) for k, v in ids.items()} == dict.fromkeys(ids, 1), ids
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    got = {name: (facts[i[0]]["claimed"], facts[i[0]]["derived"]) for name, i in ids.items()}
    assert got == {"an unlisted skill, failed": ("DECLINED", None),  # the caller came back
                   "a listed skill, failed": ("FAILURE", "ABANDONED"),  # and then left
                   "an unsigned cancel": (None, None)}
