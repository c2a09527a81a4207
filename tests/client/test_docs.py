"""The docs are checked: the README's example is the package docstring's example, it
runs against a real bureau, and the README names every public name and client code."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

import reporters
from reporters import files
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
        "Admin", "Agent", "BureauClientError", "BureauKey", "Carried", "Delivery", "Entry",
        "FilePage",
        "KeyHistory", "Receipt", "Refusal", "Rejected", "Rejection", "Reporter", "TreeHead",
        "Unavailable", "VerificationError",
        "VerifiedCheckpoint", "evidence_root", "files", "generate_key", "identity_links",
        "key_id", "load_key",
        "models", "save_key", "verify_bundle", "verify_card", "verify_chain",
        "verify_checkpoint", "verify_consistency",
        "verify_inclusion", "verify_note", "verify_report", "verify_settlement",
        "verify_share"])
    text = README.read_text()
    for name in reporters.__all__:
        assert f"`{name}" in text, name
    for code in CLIENT_CODES:
        assert f"`{code}`" in text, code


def test_every_method_and_read_model_field_is_documented() -> None:
    """The README names every public method of the parties and every field of the
    models a caller gets back."""
    text = README.read_text()
    for party in (reporters.Agent, reporters.Admin, reporters.Reporter):
        for name, member in vars(party).items():
            if not name.startswith("_") and (callable(member) or isinstance(member, property)):
                assert f"`{name}" in text or f"{name}(" in text, f"{party.__name__}.{name}"
    for model in (files.FilePage, files.Entry, files.Refusal, files.Envelope,
                  files.GenesisBody, files.ExclusionBody, files.SealBody):
        assert f"`{model.__name__}`" in text, model.__name__
        for field in model.model_fields:
            assert f"`{field}`" in text, f"{model.__name__}.{field}"
    for field in dataclasses.fields(reporters.Delivery):
        assert f"`{field.name}`" in text, f"Delivery.{field.name}"


def test_every_bureau_check_command_and_flag_is_documented() -> None:
    from reporters.check.cli import build_parser

    text = (Path(__file__).resolve().parents[2] / "docs" / "transparency.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, command in sub.choices.items():  # type: ignore[union-attr]
        assert f"bureau-check {name}" in text, name
        for action in command._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert flag in text, f"{name} {flag}"
