"""A route's ``protocol``: checked at startup, and the extras imported only when a route
can use them."""

from __future__ import annotations

import json
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
        f"routes[0].protocol: an {protocol} route needs the {protocol} extra: "
        f"pip install './client[proxy,{protocol}]' (the bureau-reporters client, from a "
        f"checkout), or pip install '.[{protocol}]' (the whole project, "
        f"agent-reputation-bureau)")


@pytest.mark.slow
def test_an_auto_route_without_the_extras_forwards_their_calls_without_a_fact(
        tmp_path: Path) -> None:
    """Issue 32: without the mcp extra, an auto route recorded an MCP ``initialize`` as
    an interaction. Now it knows the method by name, forwards it without a fact, counts
    it as ``made="unread"`` and says so once per route; plain HTTP still makes facts."""
    script = textwrap.dedent("""
        import asyncio, json, logging, sys
        import aiohttp
        from aiohttp import web
        import reporters
        from reporters.proxy import Proxy, from_mapping

        async def agent(request):
            await request.read()
            return web.json_response({"jsonrpc": "2.0", "id": 1, "result": {}})

        async def main():
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", agent)
            up = web.AppRunner(app)
            await up.setup()
            await web.TCPSite(up, "127.0.0.1", 0).start()
            port = up.addresses[0][1]
            raw = json.loads(sys.argv[1])
            raw["routes"][0]["upstream"] = "http://127.0.0.1:%d" % port
            raw["spool_dir"] = sys.argv[2]
            proxy = Proxy(from_mapping(raw), reporters.generate_key())
            runner = web.AppRunner(proxy.app())
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            url = "http://127.0.0.1:%d/a/mcp" % runner.addresses[0][1]
            got = []
            async with aiohttp.ClientSession() as session:
                for method in ("initialize", "initialize", "SendMessage", None):
                    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}} \
                        if method else {"plain": True}
                    async with session.post(url, json=body) as resp:
                        got.append([resp.status, resp.headers.get("Bureau-Interaction")])
            metrics = proxy.metrics.exposition().decode()
            await runner.cleanup()
            await up.cleanup()
            unread = [line for line in metrics.splitlines()
                      if line.startswith("bureau_proxy_protocol_calls_total{")]
            print(json.dumps({"got": got, "unread": unread,
                               "loaded": [m for m in ("a2a", "mcp") if m in sys.modules]}))

        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(config()),
                           str(tmp_path / "spool")], capture_output=True, text=True,
                          env=_without(tmp_path, "a2a", "mcp"), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    statuses, interactions = zip(*out["got"], strict=True)
    assert statuses == (200, 200, 200, 200)
    assert interactions[:3] == (None, None, None) and interactions[3] is not None
    assert sorted(out["unread"]) == [
        'bureau_proxy_protocol_calls_total{made="unread",protocol="a2a",route="/a"} 1.0',
        'bureau_proxy_protocol_calls_total{made="unread",protocol="mcp",route="/a"} 2.0']
    warned = [line for line in done.stderr.splitlines() if "extra is not installed" in line]
    assert len(warned) == 2, done.stderr  # once per route and protocol, not per call
    assert "pip install './client[proxy,mcp]'" in warned[0] + warned[1]
    assert out["loaded"] == []
