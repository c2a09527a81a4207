"""No control characters in any string of any payload, value or object key, known or
unknown (SPEC §3 r2): ``SCHEMA`` with ``path`` at that field, the path escaped so that it
is printable ASCII of bounded length — and the client library refuses exactly what the
bureau refuses, with the same path (issue 12, the U+0000 poison envelope).

These run the decode stage itself (:func:`bureau.intake.pipeline.prepare`) over every
string of a valid payload of every kind; tests/intake/test_group_isolation.py sends the
same through the real group commit."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bureau.errors import Code
from bureau.intake.pipeline import prepare
from bureau.intake.state import Submission
from reporters import wire
from reporters._internal.errors import BureauClientError
from reporters._internal.payloads import build
from reporters.models import (
    MAX_POINTER_SEGMENT,
    PAYLOAD_MODELS,
    json_pointer,
    pointer_segment,
)
from tests.intake.world import offline_parties, template

KINDS = sorted(PAYLOAD_MODELS)
#: one of each kind of control: C0 (NUL, tab, newline, unit separator), DEL, C1 (NEL among them)
CONTROLS = ["\x00", "\t", "\n", "\x1f", "\x7f", "\x80", "\x85", "\x9f"]
Path = tuple[str | int, ...]


def _strings(doc: Any, at: Path = ()) -> Iterator[Path]:
    """The path of every string value in ``doc``."""
    if isinstance(doc, str):
        yield at
    elif isinstance(doc, dict):
        for key, value in doc.items():
            yield from _strings(value, (*at, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _strings(value, (*at, i))


def _keys(doc: Any, at: Path = ()) -> Iterator[Path]:
    """The path of every object key in ``doc``."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*at, key)
            yield from _keys(value, (*at, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _keys(value, (*at, i))


def _parent(doc: Any, path: Path) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


def _with_value(doc: dict[str, Any], path: Path, char: str) -> dict[str, Any]:
    out = json.loads(json.dumps(doc))
    parent = _parent(out, path)
    parent[path[-1]] = parent[path[-1]][:1] + char + parent[path[-1]][1:]
    return out


def _with_key(doc: dict[str, Any], path: Path, key: str) -> dict[str, Any]:
    """``doc`` with the key at ``path`` renamed to ``key``, in the same place."""
    out = json.loads(json.dumps(doc))
    parent = _parent(out, path)
    items = [(key if k == path[-1] else k, v) for k, v in parent.items()]
    parent.clear()
    parent.update(items)
    return out


def _decode(name: str, doc: dict[str, Any]) -> tuple[str, str] | None:
    """(code, path) of the decode stage's refusal, None when it decodes."""
    key, _ = template(offline_parties(), name)
    raw = json.dumps(wire.sign_payload(key, name, doc)).encode()
    sub = prepare(raw)
    assert isinstance(sub, Submission), sub
    if sub.refusal is None:
        return None
    return sub.refusal.code.value, sub.refusal.path


def _client(name: str, doc: dict[str, Any]) -> tuple[str, str] | None:
    try:
        build(PAYLOAD_MODELS[name], doc)
    except BureauClientError as exc:
        return exc.code, exc.path
    return None


@pytest.mark.parametrize("name", KINDS)
def test_the_templates_decode(name: str) -> None:
    _, doc = template(offline_parties(), name)
    assert _decode(name, doc) is None
    assert _client(name, doc) is None


@pytest.mark.parametrize("name", KINDS)
def test_a_control_character_in_any_string_value_is_schema_at_that_value(name: str) -> None:
    _, doc = template(offline_parties(), name)
    paths = list(_strings(doc))
    assert paths, name
    for path in paths:
        for char in CONTROLS:
            bad = _with_value(doc, path, char)
            expected = ("SCHEMA", json_pointer(*path))
            assert _decode(name, bad) == expected, (path, char)
            assert _client(name, bad) == expected, (path, char)


@pytest.mark.parametrize("name", KINDS)
def test_a_control_character_in_any_key_is_schema_naming_that_key(name: str) -> None:
    _, doc = template(offline_parties(), name)
    for path in _keys(doc):
        for char in CONTROLS:
            key = str(path[-1]) + char
            bad = _with_key(doc, path, key)
            expected = ("SCHEMA", json_pointer(*path[:-1], key))
            assert _decode(name, bad) == expected, (path, char)
            assert _client(name, bad) == expected, (path, char)


@pytest.mark.parametrize("name", KINDS)
def test_an_unknown_key_that_is_only_a_nul_is_schema_with_an_escaped_path(name: str) -> None:
    """The issue's amendment: an unknown key ``"\\u0000"`` — its refusal's ``path`` once
    carried the NUL into a text column and failed the whole group commit."""
    _, doc = template(offline_parties(), name)
    assert _decode(name, {**doc, "\x00": 1}) == ("SCHEMA", "/\\u0000")
    assert _client(name, {**doc, "\x00": 1}) == ("SCHEMA", "/\\u0000")


def test_an_anchor_holding_a_nul_is_schema_at_the_anchor_value() -> None:
    """The issue's other poison envelope: an unregistered key enrolling with U+0000 in its
    anchor, which reached the agents table."""
    _, doc = template(offline_parties(), "enrollment")
    for value in ("\x00", "a\x00@b.example", "ops@b.example\x00"):
        bad = {**doc, "anchor": {"kind": "email", "value": value}}
        assert _decode("enrollment", bad) == ("SCHEMA", "/anchor/value")


@pytest.mark.parametrize(("name", "field", "item", "path"), [
    ("fact", "promises", {"promise": "p", "kept": True}, "/promises"),
    ("enrollment", "promises", {"promise": "p", "description": "d"}, "/promises"),
    ("amendment", "promises", {"promise": "p", "description": "d"}, "/promises"),
    ("value-judgment", "units", {"unit": "hour", "quantity": 1}, "/units"),
    ("reporter", "roles", "facts", "/roles"),
])
def test_arrays_hold_at_most_64_items(name: str, field: str, item: Any, path: str) -> None:
    _, doc = template(offline_parties(), name)
    code, where = _decode(name, {**doc, field: [item] * 65}) or ("", "")
    assert (code, where) == ("SCHEMA", path)


def test_unknown_keys_in_paths_are_escaped_and_cut() -> None:
    _, doc = template(offline_parties(), "withdrawal")
    cases = {"a/b": "/a~1b", "a~b": "/a~0b", "back\\slash": "/back\\\\slash",
             "é": "/\\u00e9", "\U0001f600": "/\\ud83d\\ude00", "x" * 300: "/" + "x" * 128}
    for key, path in cases.items():
        assert _decode("withdrawal", {**doc, key: 1}) == ("SCHEMA", path), key


#: one escape or one plain printable ASCII character of an escaped segment
_TOKEN = re.compile(r"~[01]|\\\\|\\u[0-9a-f]{4}|[ -.0-\[\]-}]")


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=200))
def test_an_escaped_segment_is_printable_bounded_and_never_cut_inside_an_escape(
        key: str) -> None:
    segment = pointer_segment(key)
    assert len(segment) <= MAX_POINTER_SEGMENT
    assert all(" " <= c <= "~" for c in segment)
    tokens = _TOKEN.findall(segment)
    assert "".join(tokens) == segment  # every character belongs to a whole token
    units = "".join(key.encode("utf-16-be", "surrogatepass")[i:i + 2].hex()
                    for i in range(0, len(key.encode("utf-16-be", "surrogatepass")), 2))
    if len(segment) < MAX_POINTER_SEGMENT - 6:  # not cut: it reads back as the key
        decoded = "".join(
            {"~0": "~", "~1": "/", "\\\\": "\\"}.get(t, t) if not t.startswith("\\u")
            else bytes.fromhex(t[2:]).decode("utf-16-be", "surrogatepass") for t in tokens)
        assert decoded.encode("utf-16-be", "surrogatepass").hex() == units


def test_a_payload_without_any_escape_skips_the_walk_and_still_refuses_c1() -> None:
    """The fast path (no backslash, no DEL, no C1 bytes: no walk over the strings) must not
    let a raw C1 control through: U+0085 sent as raw UTF-8 is still refused."""
    _, doc = template(offline_parties(), "withdrawal")
    key, _ = template(offline_parties(), "withdrawal")
    body = json.dumps({**doc, "reason": "bye\u0085"}, ensure_ascii=False).encode()
    assert b"\\" not in body
    sub = prepare(json.dumps(wire.sign_envelope(key, wire.payload_type("withdrawal"),
                                                body)).encode())
    assert isinstance(sub, Submission) and sub.refusal is not None
    assert (sub.refusal.code, sub.refusal.path) == (Code.SCHEMA, "/reason")
