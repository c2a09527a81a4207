"""``bureau status --spool`` pointed at the OTLP receiver's ops listener reads its spool
gauge (issue 32: it said "no spool gauge" although ``bureau_otlp_spool_pending`` was
there)."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace.export import SpanExportResult

from bureau.status import spools
from tests.client.helpers import DEAD_URL
from tests.otlp.support import agent_spans, export, running_receiver
from tests.proxy.support import new_agent


async def test_status_reads_the_receivers_spool_gauge(tmp_path: Path) -> None:
    spans = agent_spans([{"attributes": {"gen_ai.operation.name": "invoke_agent",
                                         "gen_ai.agent.name": "Math Tutor"}}] * 3)
    async with running_receiver(tmp_path, DEAD_URL, drain_seconds=0,
                                agent_names={"Math Tutor": new_agent()}) as r:
        assert await export(r.url, spans) == SpanExportResult.SUCCESS
        (status,) = await spools([r.ops_url])
    assert status == {"url": r.ops_url, "pending": 3, "error": None}
