"""The prober's config: files, flags, routes and templates, what is refused and why;
the seed file; an A2A route without the a2a extra. No bureau."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from reporters import wire
from reporters.daemon.config import ConfigError
from reporters.prober import from_mapping
from reporters.prober.cli import read_or_make_seed
from reporters.prober.http_call import build, read_answer
from reporters.probing import KINDS
from reporters.proxy.cli import build_parser

A = wire.signing_key_id(wire.generate_key())
B = wire.signing_key_id(wire.generate_key())
ROOT = Path(__file__).resolve().parents[2]
HTTP = {"agent": A, "upstream": "http://a.internal", "probes_per_hour": 6,
        "request": {"json": {"q": "{{task}}"}}}


def base(*routes: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"bureau_url": "http://127.0.0.1:8080/", "key_file": "p.key", "spool_dir": "spool",
            "routes": list(routes or [HTTP]), **extra}


def test_the_defaults(tmp_path: Path) -> None:
    config = from_mapping(base(), tmp_path)
    assert config.bureau_url == "http://127.0.0.1:8080"
    assert config.seed_path == tmp_path / "spool" / "probe.seed"
    assert config.audit_log == tmp_path / "spool" / "audit.jsonl"
    assert (config.ops_host, config.ops_port, config.facts) == ("127.0.0.1", 9466, True)
    route = config.routes[0]
    assert (route.protocol, route.kinds, route.timeout_seconds) == ("http", KINDS, 30.0)
    assert route.request.method == "POST" and route.response.reply is None


def test_a_toml_file_with_flags_laid_over_it(tmp_path: Path) -> None:
    (tmp_path / "probe.toml").write_text(textwrap.dedent(f'''
        bureau_url = "http://bureau.example"
        key_file = "prober.key"
        spool_dir = "spool"
        audit_log = "off"

        [[routes]]
        agent = "{A}"
        upstream = "http://a.internal:9001"
        probes_per_hour = 4
        kinds = ["logic", "arithmetic"]
        [routes.request]
        method = "POST"
        path = "/v1/ask"
        json = {{messages = [{{role = "user", content = "{{{{task}}}}"}}]}}
        [routes.response]
        reply = "/choices/0/text"
        claim = {{pointer = "/status", values = {{no = "DECLINED"}}}}
    '''))
    args = build_parser().parse_args(["probe", "--config", str(tmp_path / "probe.toml"),
                                      "--ops-listen", "off", "--seed-file", "s.seed",
                                      "--limit", "3"])
    from reporters.prober.cli import build_config

    config = from_mapping(build_config(args), tmp_path)
    assert args.limit == 3 and config.ops_port is None and config.audit_log is None
    assert config.seed_path == tmp_path / "s.seed"
    route = config.routes[0]
    assert route.kinds == ("arithmetic", "logic")  # in the batch's order
    assert route.response.claim is not None and route.response.claim.values == {"no": "DECLINED"}
    method, url, headers, body = build(route, 'What is "2 + 3"?')
    assert (method, str(url)) == ("POST", "http://a.internal:9001/v1/ask")
    assert headers == {"Content-Type": "application/json"}
    assert json.loads(body or b"") == {"messages": [{"role": "user",
                                                     "content": 'What is "2 + 3"?'}]}


@pytest.mark.parametrize(("change", "message"), [
    ({"routes": []}, "at least one route"),
    ({"routes": [HTTP, HTTP]}, "an agent appears twice"),
    ({"prober_id": "no spaces"}, "prober_id"),
    ({"batch_size": 0}, "batch_size"),
    ({"facts": "yes"}, "facts"),
    ({"colour": "blue"}, "unknown field"),
    ({"ops_listen": "nowhere"}, "ops_listen"),
    ({"routes": [{**HTTP, "agent": "ed25519:short"}]}, "routes[0].agent"),
    ({"routes": [{**HTTP, "upstream": "ftp://a"}]}, "upstream"),
    ({"routes": [{**HTTP, "probes_per_hour": 0}]}, "probes_per_hour"),
    ({"routes": [{**HTTP, "probes_per_hour": True}]}, "probes_per_hour"),
    ({"routes": [{**HTTP, "timeout_seconds": -1}]}, "timeout_seconds"),
    ({"routes": [{**HTTP, "kinds": ["poetry"]}]}, "kinds"),
    ({"routes": [{**HTTP, "protocol": "grpc"}]}, "protocol"),
    ({"routes": [{**HTTP, "request": {"json": {"q": "no placeholder"}}}]}, "appears nowhere"),
    ({"routes": [{**HTTP, "request": {"json": {}, "body": "{{task}}"}}]}, "not both"),
    ({"routes": [{**HTTP, "request": {"body": "{{task}}", "headers": {"X": "{{task}}"}}}]},
     "header"),
    ({"routes": [{**HTTP, "request": {"body": "{{task}}", "method": "DELETE"}}]}, "method"),
    ({"routes": [{**HTTP, "request": {"path": "nope{{task}}"}}]}, "path"),
    ({"routes": [{k: v for k, v in HTTP.items() if k != "request"}]}, "request template"),
    ({"routes": [{**HTTP, "response": {"reply": "answer"}}]}, "JSON Pointer"),
    ({"routes": [{**HTTP, "response": {"decline_pattern": "("}}]}, "decline_pattern"),
    ({"routes": [{**HTTP, "response": {"claim": {"pointer": "/s", "values": {"x": "MAYBE"}}}}]},
     "claim"),
    ({"routes": [{"agent": A, "upstream": "http://a", "protocol": "a2a",
                  "request": {"body": "{{task}}"}}]}, "for http routes"),
])
def test_what_is_refused(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        from_mapping(base(**change), tmp_path)


def test_reading_an_answer() -> None:
    config = from_mapping(base({**HTTP, "response": {
        "reply": "/answer", "claim": {"pointer": "/status", "values": {"no": "DECLINED"}}}}))
    response = config.routes[0].response
    asked = read_answer(response, 200, b'{"answer": 42, "status": "ok"}', 5)
    assert (asked.reply, asked.well_formed, asked.claimed, asked.success_form) == (
        "42", True, None, True)
    asked = read_answer(response, 200, b'{"status": "no"}', 5)
    assert (asked.reply, asked.claimed) == (None, "DECLINED")
    asked = read_answer(response, 503, b"busy", 5)
    assert (asked.reply, asked.well_formed, asked.success_form) == (None, False, False)
    text = from_mapping(base()).routes[0].response
    assert read_answer(text, 200, b"It is 42.", 1).reply == "It is 42."
    assert read_answer(text, 200, b"\xff", 1).well_formed is False


def test_the_seed_is_made_once_and_kept_secret(tmp_path: Path) -> None:
    path = tmp_path / "d" / "probe.seed"
    seed = read_or_make_seed(path)
    assert len(seed) == 32 and os.stat(path).st_mode & 0o777 == 0o600
    assert read_or_make_seed(path) == seed
    path.write_text("not hex")
    with pytest.raises(ConfigError, match="hexadecimal"):
        read_or_make_seed(path)
    path.write_text("ab" * 8 + "\n")
    with pytest.raises(ConfigError, match="at least 16 bytes"):
        read_or_make_seed(path)


def _without_a2a(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import a2a`` fails, as without the a2a extra."""
    shim = tmp_path / "shim" / "a2a"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('a2a-sdk is not installed')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path / "shim"), str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.slow
def test_an_a2a_route_without_the_extra_fails_at_start_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "probe.json").write_text(json.dumps(base(
        {"agent": A, "upstream": "http://a.internal", "protocol": "a2a"})))
    done = subprocess.run([sys.executable, "-m", "reporters.proxy.cli", "probe", "--config",
                           str(tmp_path / "probe.json")], capture_output=True, text=True,
                          env=_without_a2a(tmp_path), timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "bureau-reporter probe: routes[0]: an A2A route needs the a2a extra: pip install "
        "'./client[proxy,a2a]' (the bureau-reporters client, from a checkout), or pip "
        "install '.[a2a]' (the whole project, agent-reputation-bureau)"]


@pytest.mark.slow
def test_http_routes_never_import_a2a(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        import nacl.signing
        from reporters.prober import Prober, from_mapping
        config = from_mapping({base()!r})
        Prober(config, nacl.signing.SigningKey.generate(), b"s" * 32)
        assert "a2a" not in sys.modules, "a2a was imported"
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=_without_a2a(tmp_path), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
