"""docs/probing.md names every flag, config field, metric and ops path there is; its
examples are real tasks; and its copy-paste example config works against a real bureau."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from aiohttp import web

from reporters.prober import ProbeConfig, Request, Response, Route, from_mapping
from reporters.prober.metrics import ProbeMetrics
from reporters.proxy.cli import build_parser
from reporters.proxy.config import RESERVED_PATHS
from tests.docs.test_docs import _table_rows
from tests.prober.support import entries, new_agent, prober, right, run
from tests.proxy.test_docs import _flags, check_metrics_table
from tests.support import BureauUnderTest, kid, serving

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "docs" / "probing.md").read_text()


def _toml_blocks() -> list[str]:
    return re.findall(r"```toml\n(.*?)```", TEXT, re.S)


def test_every_probe_flag_is_documented() -> None:
    for flag in _flags(build_parser(), "probe"):
        assert f"`{flag}" in TEXT, flag


def test_every_config_field_is_documented() -> None:
    listeners = {"ops_host", "ops_port"}  # from ops_listen
    names = ({*ProbeConfig.__dataclass_fields__} - listeners) | {"ops_listen"} | {
        *Route.__dataclass_fields__, *Request.__dataclass_fields__,
        *Response.__dataclass_fields__}
    for name in names:
        assert f"{name} =" in TEXT or f"`{name}`" in TEXT, name


def test_every_metric_is_documented_with_its_type_labels_and_help() -> None:
    check_metrics_table(TEXT, ProbeMetrics(), "bureau_probe_")


def test_the_ops_paths_are_documented() -> None:
    rows = _table_rows(TEXT, "| path | answer |")
    assert {row[0].strip("`") for row in rows} == RESERVED_PATHS


def test_the_examples_of_the_kinds_are_tasks_of_the_vectors() -> None:
    vectors = json.loads((ROOT / "tests" / "vectors" / "probing" / "batches.json").read_text())
    tasks = {t["text"]: t for case in vectors["cases"] for t in case["tasks"]}
    rows = _table_rows(TEXT, "| kind | forms |")
    assert [row[0].strip("`") for row in rows] == [
        "arithmetic", "sequences", "parsing", "bases", "logic"]
    for row in rows:
        example, answer = row[2].strip('"'), row[3].strip("`")
        assert example in tasks, example
        assert (tasks[example]["kind"], tasks[example]["answer"]["text"]) == (
            row[0].strip("`"), answer)


def test_every_config_block_is_a_valid_config(tmp_path: Path) -> None:
    agent = kid(new_agent())
    full = tomllib.loads(_toml_blocks()[2].replace("ed25519:…", agent))
    from_mapping(full, tmp_path)
    a2a = tomllib.loads(_toml_blocks()[1].replace("ed25519:REPLACE-WITH-THE-AGENTS-KEY-ID",
                                                  agent))
    from_mapping({"bureau_url": "http://b", "key_file": "k", "spool_dir": "s", **a2a},
                 tmp_path)


async def test_the_working_example_works(bureau: BureauUnderTest, tmp_path: Path) -> None:
    example: dict[str, Any] = tomllib.loads(_toml_blocks()[0])
    agent = new_agent()
    reporter = await bureau.reporter(("probes", "facts"))
    app = web.Application()
    app.router.add_post("/solve", right)
    async with serving(app) as url:
        example["bureau_url"] = bureau.url
        (r,) = example["routes"]
        assert r["agent"] == "ed25519:REPLACE-WITH-THE-AGENTS-KEY-ID"
        assert r["upstream"] == "http://127.0.0.1:9001"
        r.update(agent=kid(agent), upstream=url, probes_per_hour=360000)
        async with prober(bureau, tmp_path, example["routes"], limit=5,
                          reporter=reporter) as p:
            await run(p)
    probes = await entries(bureau.database_url, kid(reporter), "probe")
    assert [p["passed"] for p in probes] == [True] * 5
