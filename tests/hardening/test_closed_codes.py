"""A closed set (SPEC §6): the reason codes the code base can emit are exactly the §6
list, each belongs to exactly one stage, and no string that looks like a reason code
slips out of ``bureau/`` unlisted.

Three sources are held equal: the ``Code`` enum, the codes ``bureau/`` source refers to
outside the enum's own definition and the status table (found by reading the source's
syntax trees, not by importing it), and the table in docs/protocol.md — plus a copy of
SPEC §6 kept here, since the tests may not read the spec itself.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from bureau.errors import STAGE_OF, BureauError, Code, Stage
from reporters.models import PAYLOAD_MODELS

ROOT = Path(__file__).resolve().parent.parent.parent
BUREAU = ROOT / "bureau"
#: where a code is defined or mapped to a status, rather than emitted
_DEFINITIONS = {BUREAU / "errors.py", BUREAU / "http" / "errors.py"}
_CODE_LIKE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|^[A-Z]{4,}$")

#: SPEC §6, stage by stage, as the contract states it.
SPEC_6: dict[str, tuple[str, ...]] = {
    "parse": ("MALFORMED_ENVELOPE", "TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE",
              "UNKNOWN_PAYLOAD_TYPE"),
    "verify": ("SIGNATURE_COUNT", "BAD_KEY", "BAD_SIGNATURE"),
    "decode": ("MALFORMED_PAYLOAD", "SCHEMA"),
    "authorize": ("NOT_ADMIN", "UNKNOWN_REPORTER", "MISSING_ROLE", "NOT_ENROLLED",
                  "ALREADY_ENROLLED", "WITHDRAWN"),
    "admit": ("CLOCK_SKEW", "CONFLICTING_FACT", "UNWITNESSED", "SELF_DEALING",
              "DUPLICATE_VERDICT", "NOT_TIME_AND_MATERIALS", "AMOUNT_MISMATCH",
              "UNKNOWN_ENTRY", "NOT_SUBJECT", "ALREADY_RESOLVED", "STALE_UPDATE"),
    "auth": ("UNAUTHENTICATED", "FORBIDDEN"),
    "read": ("NOT_FOUND",),
    "service": ("UNAVAILABLE",),
}


def _sources() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(BUREAU.rglob("*.py"))]


def _code_references() -> dict[str, set[str]]:
    """``Code.X`` and ``Code("X")`` in bureau/, outside the definitions: code -> files."""
    found: dict[str, set[str]] = {}
    for path, tree in _sources():
        if path in _DEFINITIONS:
            continue
        for node in ast.walk(tree):
            name: str | None = None
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "Code"):
                name = node.attr
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id == "Code" and node.args
                  and isinstance(node.args[0], ast.Constant)):
                name = str(node.args[0].value)
            if name is not None:
                found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def _enum_values(schema: Any) -> set[str]:
    """Every ``enum``/``const`` string in a JSON schema."""
    out: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "enum":
                out |= {v for v in value if isinstance(v, str)}
            elif key == "const" and isinstance(value, str):
                out.add(value)
            else:
                out |= _enum_values(value)
    elif isinstance(schema, list):
        for item in schema:
            out |= _enum_values(item)
    return out


def _upper_strings(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(_upper_strings(k) | _upper_strings(v) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(*(_upper_strings(v) for v in value))
    return {value} if isinstance(value, str) and _CODE_LIKE.match(value) else set()


def _other_vocabularies() -> set[str]:
    """Upper-case words that are not reason codes: payload enums (outcomes, judgments,
    arrangements…), the scoring policy's outcome codes, HTTP methods, SQL statements
    sent alone, variable names, PostgreSQL's file names."""
    words: set[str] = set()
    for model in PAYLOAD_MODELS.values():
        words |= _enum_values(model.model_json_schema())
    policy = json.loads((BUREAU / "scoring" / "policy_v1.json").read_text())
    words |= _upper_strings(policy)
    words |= {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"}
    words |= {"COMMIT", "ROLLBACK"}
    words |= {"NFC", "NFD", "NFKC", "NFKD"}  # Unicode normalisation forms (unicodedata)
    words |= {"PG_VERSION"}  # the file that marks a PostgreSQL data directory
    words |= {"PROMETHEUS_MULTIPROC_DIR"}  # prometheus_client's environment variable
    return words


def _code_like_literals() -> dict[str, set[str]]:
    """String constants in bureau/ that look like reason codes: value -> files. Names in
    ``__all__``, environment variable names and a command line's placeholders
    (argparse's ``metavar=``) are identifiers, not codes."""
    found: dict[str, set[str]] = {}
    for path, tree in _sources():
        skip: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                skip |= {id(c) for c in ast.walk(node.value)}
            if isinstance(node, ast.keyword) and node.arg == "metavar":
                skip.add(id(node.value))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in skip and _CODE_LIKE.match(node.value)
                    and not node.value.startswith("BUREAU_")):
                found.setdefault(node.value, set()).add(str(path.relative_to(ROOT)))
    return found


def _docs_table() -> dict[str, str]:
    text = (ROOT / "docs" / "protocol.md").read_text()
    rows = re.findall(r"^\| `([A-Z_]+)` \| (\w+) \|", text, re.M)
    return dict(rows)


def test_the_enum_is_the_spec_list() -> None:
    spec = {code for codes in SPEC_6.values() for code in codes}
    assert sum(len(c) for c in SPEC_6.values()) == len(spec) == 30
    assert {c.value for c in Code} == spec


def test_each_code_belongs_to_exactly_one_stage() -> None:
    assert set(STAGE_OF) == set(Code), "every code has a stage"
    for stage, codes in SPEC_6.items():
        for code in codes:
            assert Code(code).stage is Stage(stage), code
    stages = [stage for stage, codes in SPEC_6.items() for _ in codes]
    assert len(stages) == len(Code), "no code is listed under two stages"


def test_the_codes_the_source_emits_are_exactly_the_list() -> None:
    """Every listed code is raised somewhere (none is dead), and nothing else is."""
    used = _code_references()
    members = {c.name for c in Code}
    assert set(used) - members == set(), f"unlisted codes referenced: {set(used) - members}"
    assert members - set(used) == set(), f"codes never emitted: {members - set(used)}"


def test_no_unlisted_code_like_string_in_the_source() -> None:
    """A literal such as ``"RATE_LIMITED"`` in a handler would be a code outside §6."""
    allowed = {c.value for c in Code} | _other_vocabularies()
    strays = {lit: files for lit, files in _code_like_literals().items() if lit not in allowed}
    assert strays == {}, f"code-like strings that are not §6 codes: {strays}"


def test_bureau_errors_are_built_from_the_enum_only() -> None:
    """``BureauError(...)``/``RequestError(...)`` take a ``Code``, never a bare string."""
    for path, tree in _sources():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("BureauError", "RequestError") and node.args):
                first = node.args[0]
                assert not isinstance(first, ast.Constant), (
                    f"{path.relative_to(ROOT)}:{node.lineno} builds an error from a literal")


def test_the_docs_table_is_the_list_with_its_stages() -> None:
    documented = _docs_table()
    assert set(documented) == {c.value for c in Code}
    for code in Code:
        assert documented[code.value] == code.stage.value, code


def test_error_bodies_carry_only_listed_codes() -> None:
    for code in Code:
        body = BureauError(code, "/x", "d").as_body()
        assert set(body) == {"status", "code", "path", "detail"}
        assert body["code"] in {c.value for c in Code}
