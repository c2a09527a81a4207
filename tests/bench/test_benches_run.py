"""The benchmarks still run: each one, at a tiny size, exits 0 and prints its figures.

They are how the speed targets are measured (docs/benchmarks.md), by hand and by the
make targets, never timed here; a bench that no longer matches the code it measures (a
column added to an index table, a metric renamed) should fail the suite, not the next
person who runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scaling.autofailover import Unavailable, find_tools
from tests.support import missing

ROOT = Path(__file__).resolve().parent.parent.parent

RUNS = {
    "seal_bench.py": (["--entries", "3000", "--new", "500", "--agents", "50",
                       "--evaluators", "10", "--report-workers", "2"],
                      ["first seal of", "seal + ", "report worker",
                       "settlement of the pool"]),
    "intake_bench.py": (["--facts", "1000", "--single", "200", "--rate", "200"],
                        ["batch intake", "single POST, paced", "commit section under the "
                         "head lock"]),
    "head_lock_bench.py": (["--facts", "2000"], ["lock held", "ceiling"]),
    "proof_bench.py": (["--entries", "2000", "--requests", "50"],
                       ["inclusion    8 conn at", "consistency  1 conn", "within 5 ms"]),
    "judge_bench.py": (["--n", "200", "--rounds", "1"], ["judge_one, fact"]),
    "tiles_bench.py": (["--entries", "3000", "--reads", "50", "--proofs", "20"],
                       ["GET /checkpoint (the anchor", "level-0 tile, first read",
                        "entry bundle, first read", "bureau mirror: tree size",
                        "inclusion from", "consistency from", "PostgreSQL committed"]),
    "mirror_bench.py": (["--agents", "50", "--new", "500"],
                        ["the first mirror", "the mirror after the seal", "=> current"]),
    "portable_bench.py": (["--seeds", "1", "--agents", "8", "--calls", "6",
                           "--coverages", "0,0.5",
                           "--probe-share", "0.2"],
                          ["reports of the population", "card size: max",
                           "bundle verified offline", "card verified offline"]),
    "tlog_bench.py": (["--entries", "2000", "--proofs", "50"], ["evidence root over"]),
    "proxy_bench.py": (["--calls", "100", "--rounds", "1", "--concurrent-calls", "200",
                        "--spans", "1600"],
                       ["the disk in these rounds: a held record's commit alone",
                        "plain HTTP, signed caller",
                        "A2A SendMessage", "A2A stream, time to first event", "MCP tools/call",
                        "unsigned, straight", "share", "facts on disk", "at the end: load",
                        "the caller's RFC 9421 signature checked",
                        "through a bare aiohttp forwarder",
                        "OTLP receiver, 512 spans a request"]),
    "ranking_bench.py": (["200"], ["200 reports  epoch read", "name search"]),
    "servers_bench.py": (["--agents", "3", "12", "--requests", "5"],
                         ["?limit=1", "?limit=100", "squatted name", "fact POST, reader on",
                          "target: within 10 ms"]),
    "bounds_bench.py": (["--requests", "20", "--bombers", "1", "--bomb-spans", "200000",
                         "--stream-mib", "4"],
                        ["export alone", "during bombs", "p99 during / p99 alone",
                         "answered 413", "peak RSS", "proxy, honest call during endless",
                         "proxy, peak RSS"]),
    # through HTTP on a live bureau, as the full run; the bench exits 1 if the bureau's
    # published reports differ from the policy computed over the same entries
    "accuracy_bench.py": (["--seeds", "1", "--agents", "8", "--calls", "6",
                           "--coverages", "0,0.5", "--probe-share", "0.2"],
                          ["mix: attacks", "mix: honest", "plain mean", "truth only",
                           "ceiling", "= published"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(RUNS))
def test_the_bench_runs_and_prints_its_figures(script: str, tmp_path: Path) -> None:
    _runs_and_prints(script, *RUNS[script], tmp_path)


@pytest.mark.slow
def test_the_failover_bench_runs_and_prints_its_figures(tmp_path: Path) -> None:
    """One failover (it needs pg_auto_failover, as tests/scaling/test_failover.py)."""
    try:
        find_tools()
    except Unavailable as why:
        missing(str(why))
    _runs_and_prints("failover_bench.py", ["--runs", "1", "--posts", "10"],
                     ["run 1: first envelope accepted", "kill -9 -> first accepted envelope",
                      "synchronous replication: a single POST takes"], tmp_path)


@pytest.mark.slow
def test_the_wrk_bench_runs_and_prints_its_figures(tmp_path: Path) -> None:
    """Single POSTs driven by wrk beside the bare handler (it needs Debian's wrk)."""
    if shutil.which("wrk") is None:
        missing("wrk is not installed (Debian's wrk; .ci/run installs it)")
    _runs_and_prints("wrk_bench.py", ["--seconds", "1", "--envelopes", "3000"],
                     ["bare aiohttp handler (the HTTP-layer limit)",
                      "bureau single POST, flat out", "ratio to the bare handler",
                      "groups the sequencer formed", "bureau single POST, paced"], tmp_path)


@pytest.mark.slow
@pytest.mark.thirdparty
def test_the_litellm_bench_runs_and_prints_its_figures(tmp_path: Path) -> None:
    """Three real LiteLLM proxies and a bureau (it needs litellm[proxy], the test extra)."""
    from tests.integrations.litellm_proxy import NoLiteLLM, litellm_command

    try:
        litellm_command()
    except NoLiteLLM as why:
        missing(str(why))
    _runs_and_prints("litellm_bench.py", ["--calls", "2", "--cycles", "1", "--fill", "3",
                                          "--warmup", "1"],
                     ["answered:", "fallback fails too:", "stopped, full - up: p50", "beside the",
                      "every fact kept is in the bureau's ledger"], tmp_path)


def _runs_and_prints(script: str, args: list[str], expected: list[str],
                     tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                               "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    for line in expected:
        assert line in done.stdout, (line, done.stdout[-2000:])
