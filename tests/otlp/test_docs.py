"""docs/proxy.md's OTLP receiver section names every flag, config field and metric, and
its copy-paste config works."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from opentelemetry.sdk.trace.export import SpanExportResult

from reporters.otlp import OtlpConfig, from_mapping
from reporters.otlp.config import TABLES
from reporters.otlp.metrics import OtlpMetrics
from reporters.proxy.cli import build_parser
from tests.client.helpers import DEAD_URL
from tests.otlp.support import agent_spans, export, running_receiver, spooled_facts
from tests.proxy.support import new_agent
from tests.proxy.test_docs import _flags, check_metrics_table

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "docs" / "proxy.md").read_text()
SECTION = TEXT[TEXT.index("## The OTLP receiver"):]
PLACEHOLDER = "ed25519:REPLACE-WITH-THE-AGENTS-KEY-ID"


def test_every_otlp_flag_is_documented() -> None:
    for flag in _flags(build_parser(), "otlp"):
        assert f"`{flag}" in SECTION, flag


def test_every_config_field_is_documented() -> None:
    names = ({*OtlpConfig.__dataclass_fields__} - {"host", "port", "ops_host", "ops_port",
                                                   "subjects"}) | {"listen", "ops_listen",
                                                                   *TABLES}
    for name in names:
        assert f"`{name}`" in SECTION, name


def test_every_metric_is_documented() -> None:
    check_metrics_table(SECTION, OtlpMetrics(), "bureau_otlp_", "| OTLP metric | type |")


async def test_the_copy_paste_config_works(tmp_path: Path) -> None:
    block = re.findall(r"```toml\n(.*?)```", SECTION, re.S)[0]
    agent = new_agent()
    raw = tomllib.loads(block.replace(PLACEHOLDER, agent))
    from_mapping(raw, tmp_path)  # as written
    settings = {k: v for k, v in raw.items()
                if k not in ("bureau_url", "key_file", "spool_dir", "listen", "ops_listen")}
    async with running_receiver(tmp_path, DEAD_URL, **settings) as r:
        spans = agent_spans([{"attributes": {"gen_ai.operation.name": "invoke_agent",
                                             "gen_ai.agent.name": "Math Tutor"}}])
        assert await export(r.url, spans) == SpanExportResult.SUCCESS
    assert [f["subject"] for f in spooled_facts(tmp_path / "spool")] == [agent]
