"""The license is declared the way current setuptools wants it (no deprecation warning
on install), and the installed metadata says what the LICENSE file is."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_license_is_an_spdx_expression_with_its_file() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"  # a string, not the old table
    assert project["project"]["license-files"] == ["LICENSE"]
    # PEP 639's string form needs setuptools 77 or later; older ones reject it.
    assert any(req.replace(" ", "").startswith("setuptools>=77")
               for req in project["build-system"]["requires"])
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a pointer to it


def test_installed_metadata_carries_the_license() -> None:
    meta = importlib.metadata.metadata("agent-reputation-bureau")
    assert meta["License-Expression"] == "Apache-2.0"
    assert "LICENSE" in (meta.get_all("License-File") or [])
