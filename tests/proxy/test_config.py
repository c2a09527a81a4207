"""Config files, flags, routes and interaction ids: no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reporters import wire
from reporters.daemon.config import ConfigError, read_file
from reporters.daemon.ids import InteractionIds
from reporters.protocols.answers import Claimed, claimed, parse_strict
from reporters.proxy.cli import build_config, build_parser
from reporters.proxy.config import from_mapping
from reporters.proxy.measure import promises_kept, task_hash

A = wire.signing_key_id(wire.generate_key())
B = wire.signing_key_id(wire.generate_key())


def base(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"bureau_url": "http://127.0.0.1:8080", "key_file": "gw.key",
                           "spool_dir": "spool",
                           "routes": [{"prefix": "/alpha", "agent": A, "upstream": "http://a"}]}
    doc.update(extra)
    return doc


def test_toml_file_with_flags_laid_over_it(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"type": "object"}))
    (tmp_path / "proxy.toml").write_text(f'''
bureau_url = "http://bureau.example"
key_file = "gw.key"
spool_dir = "spool"
settle_seconds = 10

[agents."{A}"]
promises = [{{promise = "p95-under-2s", max_ms = 2000}}]

[[routes]]
prefix = "/alpha/"
agent = "{A}"
upstream = "http://a.internal/api/"
schema_file = "r.json"
claim = {{pointer = "/status", values = {{ok = "SUCCESS"}}}}
''')
    args = build_parser().parse_args([
        "proxy", "--config", str(tmp_path / "proxy.toml"), "--quiet-seconds", "60",
        "--route", f"/beta={B}@http://b.internal", "--promise", f"{B}=fast:100",
        "--listen", "0.0.0.0:9000"])
    config = from_mapping(build_config(args), tmp_path)
    assert config.key_file == tmp_path / "gw.key"
    assert (config.settle_seconds, config.quiet_seconds) == (10, 60)
    assert (config.host, config.port) == ("0.0.0.0", 9000)
    alpha, beta = config.routes
    assert (alpha.prefix, alpha.upstream, alpha.schema) == (
        "/alpha", "http://a.internal/api", {"type": "object"})
    assert alpha.claim is not None and alpha.claim.values == {"ok": "SUCCESS"}
    assert (beta.prefix, beta.agent) == ("/beta", B)
    assert config.promises == {A: {"p95-under-2s": 2000}, B: {"fast": 100}}
    assert read_file(tmp_path / "r.json") == {"type": "object"}


@pytest.mark.parametrize("change, field", [
    ({"routes": []}, "routes"),
    ({"surprise": 1}, "unknown"),
    ({"routes": [{"prefix": "alpha", "agent": A, "upstream": "http://a"}]}, "prefix"),
    ({"routes": [{"prefix": "/a", "agent": "ed25519:nope", "upstream": "http://a"}]}, "agent"),
    ({"routes": [{"prefix": "/a", "agent": A, "upstream": "ftp://a"}]}, "upstream"),
    ({"routes": [{"prefix": "/a", "agent": A, "upstream": "http://a"}] * 2}, "twice"),
    ({"settle_seconds": 10, "quiet_seconds": 5}, "settle_seconds"),
    ({"agents": {A: {"promises": [{"promise": "p", "max_ms": 1.5}]}}}, "promises"),
    ({"routes": [{"prefix": "/a", "agent": A, "upstream": "http://a",
                  "claim": {"pointer": "/s", "values": {"ok": "GREAT"}}}]}, "claim"),
])
def test_bad_configs_name_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        from_mapping(base(**change))


def test_longest_prefix_on_segment_boundaries() -> None:
    config = from_mapping(base(routes=[
        {"prefix": "/a", "agent": A, "upstream": "http://a"},
        {"prefix": "/a/b", "agent": B, "upstream": "http://b"}]))
    assert config.route_for("/a/b/c").agent == B  # type: ignore[union-attr]
    assert config.route_for("/a/bc").agent == A  # type: ignore[union-attr]
    assert config.route_for("/a").agent == A  # type: ignore[union-attr]
    assert config.route_for("/ab") is None


def test_ids_are_leased_and_namespaced(tmp_path: Path) -> None:
    ids = InteractionIds(tmp_path, "gw", block=3)
    assert [ids.next() for _ in range(4)] == ["gw:000000", "gw:000001", "gw:000002",
                                              "gw:000003"]
    again = InteractionIds(tmp_path, "gw", block=3)
    assert again.next() == "gw:000006"  # after the last lease: never reused
    with pytest.raises(ValueError, match="belongs to proxy id"):
        InteractionIds(tmp_path, "other")


def test_strict_json_and_claims() -> None:
    assert parse_strict(b'{"a": [1, {"b": null}]}') == (True, {"a": [1, {"b": None}]})
    for bad in (b'{"a":1,"a":2}', b"[NaN]", b"\xef\xbb\xbf{}", b"\xff", b"[" * 200 + b"]" * 200):
        assert parse_strict(bad) == (False, None), bad
    values: dict[str, Claimed] = {"ok": "SUCCESS", "true": "SUCCESS"}
    assert claimed({"s": {"t": "ok"}}, "/s/t", values) == "SUCCESS"
    assert claimed({"s": True}, "/s", values) == "SUCCESS"
    assert claimed({"s": "meh"}, "/s", values) is None
    assert claimed({"s": "ok"}, None, values) is None
    assert promises_kept(True, 10, {"fast": 10, "instant": 0}) == {"fast": True,
                                                                  "instant": False}


def test_task_ignores_the_route_but_not_the_request() -> None:
    t = task_hash("POST", "/solve", "x=1", b"{}")
    assert t == task_hash("post", "/solve", "x=1", b"{}")
    assert t != task_hash("POST", "/solve", "x=2", b"{}")
    assert t != task_hash("POST", "/solvex", "=1", b"{}")  # lengths are framed
