"""The docs are checked: the README's example is the package docstring's example, it
runs against a real bureau, and the README names every public name and client code."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

import reporters
from reporters._internal.errors import CLIENT_CODES
from tests.support import BureauUnderTest

README = Path(reporters.__file__).with_name("README.md")


def readme_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) == 1
    return str(blocks[0])


def docstring_example() -> str:
    doc = reporters.__doc__ or ""
    return textwrap.dedent(doc[doc.index("::\n") + 3:]).strip("\n") + "\n"


def test_readme_and_docstring_show_the_same_example() -> None:
    assert readme_example() == docstring_example()


async def test_the_example_runs_against_a_real_bureau(
        bureau: BureauUnderTest, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    admin_key_file = tmp_path / "admin.key"
    reporters.save_key(bureau.admin, admin_key_file)
    namespace: dict[str, Any] = {"__name__": "example"}
    exec(compile(readme_example(), str(README), "exec"), namespace)
    await namespace["example"](bureau.url, str(admin_key_file), str(tmp_path / "spool"))
    lines = capsys.readouterr().out.split("\n")
    assert lines[0].startswith("accepted ") and lines[1] == "DUPLICATE_VERDICT /interaction"


def test_public_surface_is_small_and_documented() -> None:
    assert sorted(reporters.__all__) == sorted([
        "Admin", "Agent", "BureauClientError", "Receipt", "Rejected", "Rejection",
        "Reporter", "Unavailable", "VerificationError", "generate_key", "key_id",
        "load_key", "models", "save_key", "verify_chain", "verify_report",
        "VerifiedCheckpoint", "evidence_root", "verify_consistency", "verify_inclusion",
        "verify_note"])
    text = README.read_text()
    for name in reporters.__all__:
        assert f"`{name}" in text, name
    for code in CLIENT_CODES:
        assert f"`{code}`" in text, code
