"""Packaging: the license is declared the way current setuptools wants it (no
deprecation warning on install) and the installed metadata says what the LICENSE file
is; a wheel carries the SQL migrations, and the service finds them installed."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from bureau.storage.db import migration_files, migrations_dir

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


def test_a_wheel_carries_every_migration() -> None:
    """pyproject's data-files put every migration into the wheel (installed under
    <prefix>/share/bureau/migrations): a non-editable install can create its database."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["data-files"]["share/bureau/migrations"]
    shipped = {p.name for pattern in patterns for p in ROOT.glob(pattern)}
    assert shipped == {p.name for p in (ROOT / "migrations").iterdir() if p.is_file()}
    assert shipped >= {p.name for p in migration_files()}


def test_migrations_are_found_in_a_checkout_and_in_an_installation(tmp_path: Path) -> None:
    checkout, prefix = tmp_path / "checkout", tmp_path / "venv"
    (checkout / "migrations").mkdir(parents=True)
    assert migrations_dir(checkout, prefix) == checkout / "migrations"
    installed = tmp_path / "site-packages"  # no migrations/ beside an installed package
    assert migrations_dir(installed, prefix) == prefix / "share" / "bureau" / "migrations"
