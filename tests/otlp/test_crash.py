"""The receiver as a real process (``bureau-reporter otlp``), killed with SIGKILL while an
exporter sends: every span whose export was acknowledged reaches the ledger, exactly once,
after a restart; the exporter's re-sends of unacknowledged requests are duplicates."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import re
import signal
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult

import reporters
from tests.otlp.support import agent_spans, exporter, ids
from tests.proxy.process import ReporterProcess
from tests.proxy.support import new_agent
from tests.proxy.test_crash import wait_for_facts
from tests.support import BureauUnderTest

pytestmark = pytest.mark.slow


class OtlpProcess(ReporterProcess):
    command = "otlp"
    started = re.compile(rb"OTLP/HTTP on (http://\S+/v1/traces), ops on (http://\S+), spool ")
    listeners = ("--listen", "--ops-listen")


async def test_kill_9_during_exports_loses_no_acknowledged_span_and_enters_none_twice(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    seed = int(os.environ.get("BUREAU_TEST_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    print(f"seed {seed} (BUREAU_TEST_SEED={seed} repeats this run)")
    key = await bureau.reporter(("facts",))
    reporters.save_key(key, tmp_path / "r.key")
    (tmp_path / "otlp.json").write_text(json.dumps({
        "bureau_url": bureau.url, "key_file": "r.key", "spool_dir": "spool",
        "agent_names": {"Math Tutor": new_agent()}}))
    proc = OtlpProcess(tmp_path / "otlp.log", "--config", str(tmp_path / "otlp.json"))
    spec = {"attributes": {"gen_ai.operation.name": "invoke_agent",
                           "gen_ai.agent.name": "Math Tutor"}}
    acknowledged: set[str] = set()
    for _ in range(3):
        await proc.start()
        # gzip sends every export through the decoding thread (issue 35's bounds): a
        # kill lands while a request is decoded off the loop, or while it is spooled
        exp = exporter(proc.urls[0], rng.choice(["protobuf", "json"]),
                       gzip=rng.random() < 0.5)
        kill_after = rng.randint(1, 8)
        done = 0
        batch = agent_spans([spec])
        while True:
            # a new batch, or the last one again (an exporter's re-send)
            if rng.random() < 0.7:
                batch = agent_spans([spec] * rng.randint(1, 50))
            if done == kill_after:
                # the kill lands while this export is on its way
                task = asyncio.create_task(asyncio.to_thread(exp.export, batch))
                await asyncio.sleep(rng.random() / 100)
                proc.kill()
                await task  # failed or not, unacknowledged spans promise nothing
                break
            result = await asyncio.to_thread(exp.export, batch)
            assert result == SpanExportResult.SUCCESS
            acknowledged.update(ids(s) for s in batch)
            done += 1
        exp.shutdown()
        assert await proc.wait() == -signal.SIGKILL
    await proc.start()  # the last run delivers what the others left in the spool
    facts = await wait_for_facts(bureau.database_url, reporters.key_id(key), acknowledged)
    assert await proc.stop(signal.SIGTERM) == 0
    counts = collections.Counter(f["interaction"] for f in facts)
    assert [i for i, n in counts.items() if n > 1] == [], f"seed {seed}"
    assert acknowledged <= set(counts), f"seed {seed}"
