"""docs/proxy.md and docs/simulation.md name every flag and config field there is."""

from __future__ import annotations

import argparse
from pathlib import Path

from bureau.cli import build_parser as bureau_parser
from reporters.proxy.cli import build_parser as proxy_parser
from reporters.proxy.config import ProxyConfig, Route

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


def _flags(parser: argparse.ArgumentParser, command: str) -> list[str]:
    sub = next(a for a in parser._actions if a.dest == "command")
    cmd = sub.choices[command]  # type: ignore[index]
    return [f for a in cmd._actions for f in a.option_strings if f not in ("-h", "--help")]


def test_every_proxy_flag_is_documented() -> None:
    text = (DOCS / "proxy.md").read_text()
    for flag in _flags(proxy_parser(), "proxy"):
        assert f"`{flag}" in text, flag


def test_every_simulate_flag_is_documented() -> None:
    text = (DOCS / "simulation.md").read_text()
    for flag in _flags(bureau_parser(), "simulate"):
        assert f"`{flag}" in text, flag


def test_every_config_field_is_documented() -> None:
    text = (DOCS / "proxy.md").read_text()
    fields = {"bureau_url", "key_file", "spool_dir", "proxy_id", "listen", "settle_seconds",
              "quiet_seconds", "max_body", "promises", "max_ms", "prefix", "agent", "upstream",
              "timeout_seconds", "schema", "schema_file", "claim", "check", "pointer", "values"}
    assert {f for f in ProxyConfig.__dataclass_fields__ if f not in ("host", "port", "routes")}\
        <= fields
    assert set(Route.__dataclass_fields__) <= fields
    for name in fields:
        assert f"{name} =" in text or f"`{name}`" in text, name
