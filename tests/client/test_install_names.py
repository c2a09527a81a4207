"""Install names that work (issue 32): every ``pip install`` line of the README, the
client's README and docs/ names a directory of this repository and extras its
pyproject.toml declares (neither distribution is on a package index), or a third-party
package the project itself depends on; the client's extras table in code
(reporters/_internal/extras.py) is the client's pyproject; each ``bureau-reporter``
subcommand runs ``--help`` (and ``keygen``, ``keyid`` run) with no optional package, and
one whose extra is missing names it."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from reporters._internal import extras
from reporters.proxy.cli import COMMAND_EXTRAS, build_parser
from tests.client.test_install import CLIENT, ROOT, WHOLE

DOCS = [ROOT / "README.md", ROOT / "reporters" / "README.md",
        *sorted((ROOT / "docs").glob("*.md"))]
#: every optional package a command may lack, as the tests make it missing
OPTIONAL = ("jsonschema", "prometheus_client", "opentelemetry", "google", "a2a", "mcp",
            "httpx2", "litellm", "jwt")
#: a directory an install line may name -> the extras its pyproject declares
DIRECTORIES = {"./client": set(CLIENT["optional-dependencies"]),
               ".": set(WHOLE["optional-dependencies"]),
               "/opt/bureau/app": set(WHOLE["optional-dependencies"])}  # the runbook's checkout


def _third_party() -> set[str]:
    """Every package name the project's pyproject requires, in any section."""
    specs = [*WHOLE["dependencies"], *(s for group in WHOLE["optional-dependencies"].values()
                                       for s in group)]
    return {canonicalize_name(Requirement(s).name) for s in specs}


def install_targets(text: str) -> list[str]:
    """What each ``pip install`` in ``text`` installs: its arguments up to the end of
    the code span, a comment or the line, flags left out, quotes taken off."""
    out = []
    for match in re.finditer(r"pip install([^`#\n;&(]*)", text):
        for word in match.group(1).split():
            word = word.strip("'\"(),")
            if word and not word.startswith("-") and word not in ("or", "and"):
                out.append(word)
    return out


def refusal(target: str) -> str | None:
    """Why ``target`` cannot be installed as written, or None."""
    name, _, rest = target.partition("[")
    wanted = set(filter(None, rest.rstrip("]").split(","))) if rest else set()
    if name in DIRECTORIES:
        unknown = wanted - DIRECTORIES[name]
        return f"{target}: no extra {sorted(unknown)} in {name}" if unknown else None
    if canonicalize_name(name) in {canonicalize_name(CLIENT["name"]),
                                   canonicalize_name(WHOLE["name"])}:
        return f"{target}: {name} is not on a package index; name its directory"
    if canonicalize_name(name) not in _third_party():
        return f"{target}: {name} is neither a directory here nor a package the project uses"
    return None


def test_the_checker_refuses_the_names_issue_32_found() -> None:
    for bad in ("bureau-reporters[litellm]", "bureau-reporters[proxy,otlp]",
                "agent-reputation-bureau[a2a,mcp]", "./client[otel]", "left-pad"):
        assert refusal(bad) is not None, bad
    for good in ("./client", "./client[proxy,a2a]", ".[a2a,mcp]", "litellm[proxy]"):
        assert refusal(good) is None, good
    assert install_targets("run `pip install -e '.[dev]'` or `pip install './client[x]'`"
                           ) == [".[dev]", "./client[x]"]


def test_every_install_line_in_the_docs_names_what_exists() -> None:
    found = {(doc.relative_to(ROOT).as_posix(), t)
             for doc in DOCS for t in install_targets(doc.read_text())}
    assert len(found) >= 8  # the docs have install lines: the parser finds them
    bad = [f"{doc}: {why}" for doc, t in sorted(found) if (why := refusal(t)) is not None]
    assert bad == []


@pytest.mark.parametrize("extra", sorted(extras.EXTRA_MODULES))
def test_the_hints_in_code_name_what_exists(extra: str) -> None:
    hint = extras.install_hint("proxy", extra)
    assert [t for t in install_targets(hint) if refusal(t) is not None] == []


def test_the_extras_table_is_the_client_pyprojects() -> None:
    declared = CLIENT["optional-dependencies"]
    assert set(extras.EXTRA_MODULES) == set(declared)
    provided = importlib.metadata.packages_distributions()
    for extra, modules in extras.EXTRA_MODULES.items():
        names = {canonicalize_name(Requirement(s).name) for s in declared[extra]}
        for module in modules:
            top = module.split(".")[0]
            dists = {canonicalize_name(d) for d in provided.get(top, [])}
            assert dists & names, f"{module} does not come with the {extra} extra"
            assert extras.extra_of(module) == extra
    # the whole project has every client extra but proxy, whose packages it depends on
    assert set(WHOLE["optional-dependencies"]) >= extras.PROJECT_EXTRAS
    base = {canonicalize_name(Requirement(s).name) for s in WHOLE["dependencies"]}
    assert {canonicalize_name(Requirement(s).name) for s in declared["proxy"]} <= base


def test_every_subcommand_says_which_extras_it_needs() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(COMMAND_EXTRAS) == set(sub.choices)  # type: ignore[arg-type]
    assert all(set(e) <= set(extras.EXTRA_MODULES) for e in COMMAND_EXTRAS.values())


def _without_optional(tmp_path: Path) -> dict[str, str]:
    """An environment in which every optional package fails to import, as in an
    install of the client alone."""
    for name in OPTIONAL:
        shim = tmp_path / "shim" / name
        shim.mkdir(parents=True)
        (shim / "__init__.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{name}'\", name={name!r})\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path / "shim"), str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reporters.proxy.cli", *args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_with_the_client_alone_help_keygen_and_keyid_work(tmp_path: Path) -> None:
    env = _without_optional(tmp_path)
    for command in ["", *COMMAND_EXTRAS]:
        done = _run(env, tmp_path, *filter(None, [command]), "--help")
        assert done.returncode == 0, (command, done.stderr)
        assert "usage: bureau-reporter" in done.stdout
    made = _run(env, tmp_path, "keygen", "gw.key")
    assert made.returncode == 0, made.stderr
    again = _run(env, tmp_path, "keyid", "gw.key")
    assert (again.returncode, again.stdout) == (0, made.stdout)


def test_a_command_whose_extra_is_missing_names_it(tmp_path: Path) -> None:
    env = _without_optional(tmp_path)
    assert _run(env, tmp_path, "keygen", "gw.key").returncode == 0
    done = _run(env, tmp_path, "proxy", "--key", "gw.key", "--bureau", "http://127.0.0.1:9",
                "--spool", "spool")
    assert done.returncode == 2
    assert done.stderr.startswith("bureau-reporter proxy needs the proxy extra of the client")
    assert "pip install './client[proxy]'" in done.stderr
    (tmp_path / "o.json").write_text("{}")
    for command, extra in (("otlp", "'./client[proxy,otlp]'"), ("probe", "'./client[proxy]'")):
        done = _run(env, tmp_path, command, "--config", "o.json")
        assert done.returncode == 2, done.stderr
        assert f"pip install {extra}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
