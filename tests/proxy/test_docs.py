"""docs/proxy.md and docs/simulation.md name every flag and config field there is."""

from __future__ import annotations

import argparse
from pathlib import Path

from prometheus_client.metrics import MetricWrapperBase

from bureau.cli import build_parser as bureau_parser
from reporters.proxy.cli import build_parser as proxy_parser
from reporters.proxy.config import RESERVED_PATHS, ProxyConfig, Route
from reporters.proxy.metrics import ProxyMetrics
from tests.docs.test_docs import _table_rows

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


def _flags(parser: argparse.ArgumentParser, command: str) -> list[str]:
    sub = next(a for a in parser._actions if a.dest == "command")
    cmd = sub.choices[command]  # type: ignore[index]
    return [f for a in cmd._actions for f in a.option_strings if f not in ("-h", "--help")]


def test_every_proxy_flag_is_documented() -> None:
    text = (DOCS / "proxy.md").read_text()
    for command in ("proxy", "resend"):
        for flag in _flags(proxy_parser(), command):
            assert f"`{flag}" in text, (command, flag)


def test_every_simulate_flag_is_documented() -> None:
    text = (DOCS / "simulation.md").read_text()
    for flag in _flags(bureau_parser(), "simulate"):
        assert f"`{flag}" in text, flag


def test_every_config_field_is_documented() -> None:
    text = (DOCS / "proxy.md").read_text()
    fields = {"bureau_url", "key_file", "spool_dir", "proxy_id", "listen", "ops_listen",
              "drain_seconds", "keep_delivered_days", "settle_seconds",
              "quiet_seconds", "max_body", "promises", "max_ms", "prefix", "agent", "upstream",
              "timeout_seconds", "schema", "schema_file", "claim", "check", "pointer", "values",
              "protocol", "card_path", "card_keys_file", "card_refresh_seconds",
              "card_jku_hosts", "max_card_bytes", "header_seconds", "body_seconds"}
    listeners = ("host", "port", "ops_host", "ops_port", "routes")  # from listen, ops_listen
    assert {f for f in ProxyConfig.__dataclass_fields__ if f not in listeners} <= fields
    assert set(Route.__dataclass_fields__) <= fields
    for name in fields:
        assert f"{name} =" in text or f"`{name}`" in text, name


def check_metrics_table(doc: str, registry_owner: object, prefix: str,
                        header: str = "| metric | type |") -> None:
    """The doc's ``| metric | type | labels |`` table is exactly the metrics of
    ``registry_owner`` (an object whose attributes are its metrics), with their types
    and labels; every metric has help text and the prefix."""
    rows = _table_rows(doc, header)
    documented = {row[0].strip("`"): row for row in rows}
    metrics = [m for m in vars(registry_owner).values() if isinstance(m, MetricWrapperBase)]
    exposed = {}
    for m in metrics:
        assert m._name.startswith(prefix), m._name
        assert m._documentation.strip(), m._name
        # prometheus_client keeps a counter's name without "_total" and adds it on exposition
        exposed[m._name + "_total" if m._type == "counter" else m._name] = m
    assert set(documented) == set(exposed)
    for name, m in exposed.items():
        kind, labels = documented[name][1], documented[name][2]
        assert kind == m._type, name
        assert {label.strip("` ") for label in labels.split(",") if label.strip()} == \
            set(m._labelnames), name


def test_every_metric_is_documented_with_its_type_labels_and_help() -> None:
    check_metrics_table((DOCS / "proxy.md").read_text(), ProxyMetrics(), "bureau_proxy_")


def test_the_ops_paths_are_documented() -> None:
    text = (DOCS / "proxy.md").read_text()
    rows = _table_rows(text, "| path | answer |")
    assert {row[0].strip("`") for row in rows} == RESERVED_PATHS
