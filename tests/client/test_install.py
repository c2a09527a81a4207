"""The client installs on its own (client/pyproject.toml): nothing in reporters/ needs the
service or a package the client does not declare, and a fresh virtual environment with
only the client signs, submits and reads its own file from a real bureau, verifies its
signed tree heads, an inclusion proof of its own entry and a consistency proof between
two heads, and runs ``bureau-check``."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import venv
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import reporters
from reporters import wire
from tests.processes import ServeProcess, bureau_env

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(reporters.__file__).parent
SERVICE_ONLY = {"bureau", "asyncpg", "pgserver"}


def _project(path: Path) -> dict[str, Any]:
    """The ``[project]`` table of a pyproject.toml."""
    with path.open("rb") as fh:
        project: dict[str, Any] = tomllib.load(fh)["project"]
    return project


CLIENT = _project(ROOT / "client" / "pyproject.toml")
WHOLE = _project(ROOT / "pyproject.toml")


def _requirement_names(specs: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(s).name) for s in specs}


def _with_their_dependencies(names: set[str]) -> set[str]:
    """Distributions and everything they require (installed metadata; extras left out)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for spec in importlib.metadata.requires(name) or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return seen


def _imports(path: Path) -> set[str]:
    """Top-level modules a source file imports (absolute imports only)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_client_declares_what_reporters_imports_and_nothing_of_the_service() -> None:
    """Every third-party module reporters/ imports comes with a client dependency (the
    proxy and the daemon kit, reporters/daemon, may also use the ``proxy`` extra, the
    prober the ``proxy`` and ``a2a`` extras, the proxy's protocol readers,
    reporters/protocols, the ``a2a`` and ``mcp`` extras); none of them is the service's."""
    extras = CLIENT["optional-dependencies"]
    base = _with_their_dependencies(_requirement_names(CLIENT["dependencies"]))
    proxy = base | _with_their_dependencies(_requirement_names(extras["proxy"]))
    prober = proxy | _with_their_dependencies(_requirement_names(extras["a2a"]))
    protocols = prober | _with_their_dependencies(_requirement_names(extras["mcp"]))
    otlp = proxy | _with_their_dependencies(_requirement_names(extras["otlp"]))
    litellm = base | _with_their_dependencies(_requirement_names(extras["litellm"]))
    provided = importlib.metadata.packages_distributions()
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        allowed = prober if "prober" in parts else \
            protocols if parts[0] in ("proxy", "protocols") else \
            proxy if parts[0] == "daemon" else base
        allowed = otlp if "otlp" in parts else litellm if "integrations" in parts else allowed
        for module in _imports(path) - set(sys.stdlib_module_names) - {"reporters", "__future__"}:
            where = path.relative_to(ROOT)
            assert module not in SERVICE_ONLY, f"{where} imports {module}"
            dists = {canonicalize_name(d) for d in provided.get(module, [])}
            assert dists & allowed, f"{where} imports {module}, which the client does not declare"


def test_the_client_pyproject_is_the_projects_restricted_to_the_client() -> None:
    assert CLIENT["version"] == WHOLE["version"]
    assert CLIENT["requires-python"] == WHOLE["requires-python"]
    extras = CLIENT["optional-dependencies"]
    whole = {Requirement(s).name: str(Requirement(s)) for s in WHOLE["dependencies"]}
    for spec in [*CLIENT["dependencies"], *extras["proxy"]]:
        assert whole.get(Requirement(spec).name) == str(Requirement(spec)), spec
    # the client's a2a extra is the project's, and the tests install it
    assert sorted(map(str, map(Requirement, extras["a2a"]))) == sorted(
        map(str, map(Requirement, WHOLE["optional-dependencies"]["a2a"])))
    assert any(Requirement(s).name == WHOLE["name"] and "a2a" in Requirement(s).extras
               for s in WHOLE["optional-dependencies"]["test"])
    for extra in ("otlp", "litellm"):  # the same in both, and the tests install them
        assert sorted(map(str, map(Requirement, extras[extra]))) == sorted(
            map(str, map(Requirement, WHOLE["optional-dependencies"][extra])))
        assert any(Requirement(s).name == WHOLE["name"] and extra in Requirement(s).extras
                   for s in WHOLE["optional-dependencies"]["test"])
    assert CLIENT["scripts"].items() <= WHOLE["scripts"].items()
    assert not _requirement_names(CLIENT["dependencies"]) & SERVICE_ONLY


# --------------------------------------------------------------------------- a fresh venv

CLIENT_SCRIPT = textwrap.dedent("""
    import asyncio, importlib.util, json, sys, time

    import aiohttp

    import reporters


    async def published(session, url, vkey, size):
        # the bureau publishes a tree head every few seconds: wait for one this large
        deadline = time.monotonic() + 60
        while True:
            async with session.get(url + "/checkpoint") as resp:
                note = await resp.text()
            head = reporters.verify_note(note, vkey)
            if head.size >= size or time.monotonic() > deadline:
                return head


    async def main(url: str) -> None:
        key = reporters.generate_key()
        async with aiohttp.ClientSession() as session:
            async with session.get(url + "/v1/bureau") as resp:
                vkey = (await resp.json())["vkey"]
            async with reporters.Agent(key, url) as agent:
                receipt = await agent.enroll("solo", "solo.example", "Solo Ltd")
                first = await published(session, url, vkey, receipt.seq)
                async with reporters.Agent(reporters.generate_key(), url) as other:
                    later = await other.enroll("duo", "duo.example", "Duo Ltd")
                page = await agent.entries(0, 100)
            second = await published(session, url, vkey, later.seq)
            async with session.get(f"{url}/v1/proofs/inclusion?id={receipt.id}"
                                   f"&size={second.size}") as resp:
                inclusion = await resp.json()
            reporters.verify_inclusion(receipt.id, inclusion, second)
            async with session.get(f"{url}/v1/proofs/consistency?from={first.size}"
                                   f"&to={second.size}") as resp:
                consistency = await resp.json()
            reporters.verify_consistency(consistency, first, second)
        entries = page.raw_entries
        reporters.verify_chain(entries)
        print(json.dumps({
            "key_id": reporters.key_id(key),
            "receipt": [receipt.status, receipt.seq, receipt.id],
            "file": [[e["seq"], e["id"]] for e in entries],
            "evidence_root": reporters.evidence_root(entries, entries[-1]["seq"]),
            "heads": [first.size, second.size],
            "leaf_index": inclusion["leaf_index"],
            "reporters": reporters.__file__,
            "absent": sorted(m for m in ("asyncpg", "pgserver", "bureau", "prometheus_client")
                             if importlib.util.find_spec(m) is None),
        }))


    asyncio.run(main(sys.argv[1]))
""")


_NETWORK_TROUBLE = re.compile(r"Could not find a version|No matching distribution|"
                              r"Failed to establish a new connection|Temporary failure in name|"
                              r"Network is unreachable|ConnectTimeout|ReadTimeout")


def _client_venv(where: Path) -> Path:
    """A new virtual environment with only ``pip install <copy of client/>`` in it."""
    source = where / "src"
    shutil.copytree(ROOT / "client", source / "client")
    shutil.copytree(PACKAGE, source / "reporters",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env_dir = where / "venv"
    try:
        venv.create(env_dir, with_pip=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot create a virtual environment here: {exc}")
    python = env_dir / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         str(source / "client")], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        if _NETWORK_TROUBLE.search(done.stderr + done.stdout):
            pytest.skip(f"pip cannot reach the package index: {done.stderr.strip()[-300:]}")
        pytest.fail(f"pip install ./client failed:\n{done.stdout}\n{done.stderr}")
    return python


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_a_client_only_venv_signs_submits_and_reads_its_file(
        database_url: str, tmp_path: Path) -> None:
    python = _client_venv(tmp_path)
    admin = wire.generate_key()
    bureau = ServeProcess(bureau_env(database_url, tmp_path / "home",
                                     wire.signing_key_id(admin),
                                     BUREAU_CHECKPOINT_INTERVAL="0.2"), tmp_path / "serve.log")
    await bureau.start()
    try:
        script = tmp_path / "client_script.py"
        script.write_text(CLIENT_SCRIPT)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        done = subprocess.run([str(python), str(script), bureau.url], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        entry = json.loads(done.stdout)["receipt"][2]
        # the command-line checker installs with the client and runs from there
        checked = subprocess.run([str(python.parent / "bureau-check"), "inclusion", bureau.url,
                                  entry, "--json"], capture_output=True, text=True,
                                 timeout=120, cwd=tmp_path, env=env)
    finally:
        bureau.stop()
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["absent"] == ["asyncpg", "bureau", "pgserver", "prometheus_client"]
    assert result["reporters"].startswith(str(tmp_path / "venv"))
    status, seq, entry_id = result["receipt"]
    assert status == "accepted"
    assert [seq, entry_id] in result["file"]  # the enrollment is in the agent's own file
    assert re.fullmatch(r"[0-9a-f]{64}", result["evidence_root"])
    first, second = result["heads"]  # two published heads, one a prefix of the other
    assert seq <= first < second and result["leaf_index"] == seq - 1
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["leaf_index"] == seq - 1
