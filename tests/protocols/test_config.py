"""A route's ``protocol``: checked at startup, and the extras imported only when a route
can use them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import reporters
from reporters.proxy import ConfigError, from_mapping

ROOT = Path(__file__).resolve().parent.parent.parent
AGENT = reporters.key_id(reporters.generate_key())


def config(**route: Any) -> dict[str, Any]:
    return {"bureau_url": "http://127.0.0.1:9", "key_file": "k", "spool_dir": "s",
            "routes": [{"prefix": "/a", "agent": AGENT, "upstream": "http://a", **route}]}


@pytest.mark.parametrize(("field", "value", "message"), [
    ("protocol", "grpc", "routes[0].protocol: one of auto, http, a2a, mcp"),
    ("card_path", "agent.json", "routes[0].card_path"),
    ("card_keys_file", 7, "routes[0].card_keys_file"),
])
def test_bad_protocol_settings_are_refused(field: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        from_mapping(config(**{field: value}))


def test_the_default_is_auto_and_the_card_path_the_well_known_one() -> None:
    route = from_mapping(config()).routes[0]
    assert (route.protocol, route.card_path) == ("auto", "/.well-known/agent-card.json")


def _without(tmp_path: Path, *packages: str) -> dict[str, str]:
    """An environment in which importing ``packages`` fails, as without their extras."""
    for name in packages:
        shim = tmp_path / "shim" / name
        shim.mkdir(parents=True)
        (shim / "__init__.py").write_text(f"raise ImportError('{name} is not installed')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path / "shim"), str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize(("protocol", "package"), [("a2a", "a2a"), ("mcp", "mcp")])
@pytest.mark.slow
def test_a_protocol_route_without_its_extra_is_refused_in_one_line(
        tmp_path: Path, protocol: str, package: str) -> None:
    script = textwrap.dedent(f"""
        from reporters.proxy import ConfigError, from_mapping
        try:
            from_mapping({config(protocol=protocol)!r})
        except ConfigError as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=_without(tmp_path, package), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"routes[0].protocol: an {protocol} route needs "
        f"{'a2a-sdk' if protocol == 'a2a' else 'mcp'}: "
        f"pip install 'agent-reputation-bureau[{protocol}]'")


@pytest.mark.slow
def test_an_auto_route_without_the_extras_is_plain_http(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        from aiohttp import web
        from reporters.proxy.app import protocol_of
        from reporters.proxy import from_mapping
        route = from_mapping({config()!r}).routes[0]
        body = b'{{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {{}}}}'
        assert protocol_of(route, "POST", body) is None
        assert "a2a" not in sys.modules and "mcp" not in sys.modules
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=_without(tmp_path, "a2a", "mcp"), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
