"""The docs are part of the contract: these tests hold them and the code equal."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import prometheus_client

from bureau import metrics
from bureau.cli import build_parser
from bureau.errors import BureauError, Code, Stage
from bureau.http.errors import status_of
from reporters.models import PAYLOAD_MODELS

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


def _table_rows(text: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_reason_code_table_is_the_code_list() -> None:
    rows = _table_rows((DOCS / "protocol.md").read_text(), "| code | stage | HTTP |")
    documented = {row[0].strip("`"): row for row in rows}
    assert set(documented) == {c.value for c in Code}
    for code in Code:
        row = documented[code.value]
        assert Stage(row[1]) is code.stage, code
        assert row[2].startswith(str(status_of(BureauError(code)))), code


def test_payload_table_is_the_payload_list() -> None:
    rows = _table_rows((DOCS / "protocol.md").read_text(), "| name | signed by |")
    assert {row[0].strip("`") for row in rows} == set(PAYLOAD_MODELS)


def _bureau_metrics() -> set[str]:
    names = set()
    for value in vars(metrics).values():
        if isinstance(value, prometheus_client.metrics.MetricWrapperBase):
            names.add(value._name)
    return names


def test_every_metric_is_documented_with_help() -> None:
    rows = _table_rows((DOCS / "operations.md").read_text(), "| metric | type |")
    documented = {row[0].strip("`") for row in rows}
    # prometheus_client drops the _total suffix from counter names internally
    in_code = {n + "_total" if n + "_total" in documented else n for n in _bureau_metrics()}
    in_code |= set(metrics.SCRAPED)  # read from the ledger at each scrape
    assert documented == in_code
    for value in vars(metrics).values():
        if isinstance(value, prometheus_client.metrics.MetricWrapperBase):
            assert value._name.startswith("bureau_")
            assert value._documentation.strip()


def test_every_cli_command_and_flag_is_documented() -> None:
    text = (DOCS / "operations.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, command in sub.choices.items():  # type: ignore[union-attr]
        assert f"`bureau {name}" in text, name
        for action in command._actions:
            if action.help == argparse.SUPPRESS:  # internal (serve's --reuse-port, workers')
                continue
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert flag in text, f"bureau {name} {flag}"


_CONFIG_SOURCE = Path(__file__).resolve().parents[2] / "bureau" / "config.py"


def _configured_variables() -> set[str]:
    """Every ``BUREAU_…`` name bureau/config.py reads (or names, as a deprecated one)."""
    return set(re.findall(r"\bBUREAU_[A-Z0-9_]+\b", _CONFIG_SOURCE.read_text()))


def test_every_environment_variable_is_documented() -> None:
    """The configuration table lists the variables bureau/config.py reads, and only
    those; a deprecated name is documented beside the name that replaced it."""
    text = (DOCS / "operations.md").read_text()
    configured = _configured_variables()
    assert {"BUREAU_DATABASE_URL", "BUREAU_SEAL_INTERVAL", "BUREAU_SETTLE_INTERVAL"} <= configured
    assert sorted(v for v in configured if f"`{v}`" not in text) == []
    table = {row[0].strip("`") for row in _table_rows(text, "| variable | meaning |")}
    assert table == configured - {"BUREAU_SETTLE_INTERVAL"}


def test_readme_test_command_is_what_ci_runs() -> None:
    root = DOCS.parent
    readme = (root / "README.md").read_text()
    assert re.search(r"^make test\b", readme, re.M)
    assert "make test" in (root / ".ci" / "run").read_text()


_DOC_FILES = [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md",
              DOCS.parent / "THREAT_MODEL.md", DOCS.parent / "reporters" / "README.md"]
_PATH_RE = re.compile(r"(?<![\w./])((?:bureau|reporters|tests|bench|ops|migrations)/[\w/.-]*\w)")
_DOTTED_RE = re.compile(r"`((?:bureau|reporters)(?:\.\w+)+)")


def _resolves(dotted: str) -> bool:
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_code_path_the_docs_name_exists() -> None:
    """Files (``bureau/views/derive.py``) and dotted names (``bureau.views.derive.feed``)
    that the docs mention are there: moving code without its docs fails here."""
    root = DOCS.parent
    missing = []
    for doc in _DOC_FILES:
        text = doc.read_text()
        for path in _PATH_RE.findall(text):
            target = path.split("::")[0]
            if not (root / target).exists() and not target.endswith("NNNN_name.sql"):
                missing.append(f"{doc.name}: {path}")
        for dotted in _DOTTED_RE.findall(text):
            if not _resolves(dotted):
                missing.append(f"{doc.name}: {dotted}")
    assert missing == []
