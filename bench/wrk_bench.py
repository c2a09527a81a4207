"""Single POSTs driven by ``wrk`` (a C load generator), beside a bare aiohttp handler.

The Python client tops out near 700 requests/s even against a handler that does
nothing, so it cannot measure how far the bureau's single POST is from the HTTP layer.
This bench measures both with the same ``wrk`` in one run:

1. **bare**: an aiohttp handler that reads the body and answers 201, in as many
   processes as ``bureau serve`` runs (sharing the port as serve's workers do): the
   HTTP-layer limit of this machine;
2. **bureau, flat out**: ``POST /v1/evidence``, each request the next pre-signed
   envelope (a Lua script hands them out; no envelope is sent twice);
3. **bureau, paced** at half the flat-out rate (each connection waits between requests).

It prints each rate with its anchor (the ratio to the bare handler; issue target ≥ 0.25),
p50/p99 from wrk's own latency distribution, and the group sizes formed (from the
operator listener: ``bureau_sequencer_group_envelopes``, the node's one sequencer, and
``bureau_commit_group_envelopes``, every committer, a worker's own fallback included).

    python bench/wrk_bench.py [--seconds 10] [--connections 8] [--workers N]

Needs Debian's ``wrk``; ``.ci/run`` installs it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from intake_bench import bench_bureau, presign  # noqa: E402

from bureau.config import default_serve_workers  # noqa: E402
from reporters import wire  # noqa: E402
from tests.processes import free_port  # noqa: E402

# Each wrk thread has its own Lua state: setup() numbers the threads, init() keeps the
# envelopes whose line number falls to that thread, request() sends the next one. Against
# the bureau a thread that runs out sends a GET of /v1/bureau instead (never a duplicate;
# the bench sizes the file so that it does not happen); the bare handler wraps around.
LUA = r"""
local threads = {}
local counter = 0
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end
function init(args)
  lines = {}
  local n, k = 0, tonumber(args[2])
  for line in io.lines(args[1]) do
    if n % k == id then lines[#lines + 1] = line end
    n = n + 1
  end
  next_line = 1
  pause = tonumber(args[3])
  wrap = args[4] == "wrap"
  headers = {["Content-Type"] = "application/json"}
end
function delay()
  return pause
end
function request()
  local body = lines[next_line]
  next_line = next_line + 1
  if body == nil and wrap then
    next_line = 2
    body = lines[1]
  end
  if body == nil then
    return wrk.format("GET", "/v1/bureau")
  end
  return wrk.format("POST", "/v1/evidence", headers, body)
end
"""


def serve_bare(port: int) -> None:
    """One process of the bare handler: read the body, answer 201."""
    from aiohttp import web

    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=201, body=b'{"status":"accepted"}',
                            content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/evidence", handler)
    web.run_app(app, host="127.0.0.1", port=port, reuse_port=True, print=None,
                access_log=None)


def wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port} after {timeout:.0f} s")


class WrkRun:
    """One wrk run's figures, parsed from its ``--latency`` output."""

    def __init__(self, out: str) -> None:
        self.out = out
        rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
        if rate is None:
            raise SystemExit("wrk printed no rate:\n" + out)
        self.rate = float(rate.group(1))
        self.p50 = self._percentile("50")
        self.p99 = self._percentile("99")
        bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
        self.non_2xx = int(bad.group(1)) if bad else 0
        errors = re.search(r"Socket errors:(.*)", out)
        self.socket_errors = errors.group(1).strip() if errors else ""

    def _percentile(self, p: str) -> float:
        m = re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s)\s*$", self.out, re.MULTILINE)
        if m is None:
            raise SystemExit(f"wrk printed no {p}th percentile:\n" + self.out)
        scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
        return float(m.group(1)) * scale

    def line(self) -> str:
        text = f"{self.rate:9,.0f} req/s   p50 {self.p50:6.2f} ms  p99 {self.p99:6.2f} ms"
        if self.non_2xx:
            text += f"   ({self.non_2xx} non-2xx)"
        if self.socket_errors:
            text += f"   (socket errors: {self.socket_errors})"
        return text


def run_wrk(url: str, script: Path, seconds: float, connections: int, envelopes: Path,
            pause_ms: int, wrap: bool = False) -> WrkRun:
    threads = min(2, connections)
    done = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", "--latency",
         "-s", str(script), url, "--", str(envelopes), str(threads), str(pause_ms),
         "wrap" if wrap else "once"],
        capture_output=True, text=True, timeout=seconds + 60)
    if done.returncode != 0:
        raise SystemExit(f"wrk failed ({done.returncode}): {done.stderr}")
    return WrkRun(done.stdout)


#: the histograms whose (count, sum) the bench reads: every committer's groups, and
#: those the node's sequencer formed (the rest a worker committed by itself)
HISTOGRAMS = ("bureau_commit_group_envelopes", "bureau_sequencer_group_envelopes")


async def group_sizes(ops_url: str) -> dict[str, tuple[float, float]]:
    """(groups, envelopes) committed so far, by histogram (:data:`HISTOGRAMS`)."""
    async with aiohttp.ClientSession() as session, session.get(ops_url + "/metrics") as r:
        text = await r.text()
    found = {name: [0.0, 0.0] for name in HISTOGRAMS}
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        for histogram in HISTOGRAMS:
            if name == histogram + "_count":
                found[histogram][0] = float(value)
            elif name == histogram + "_sum":
                found[histogram][1] = float(value)
    return {name: (groups, envelopes) for name, (groups, envelopes) in found.items()}


def print_groups(before: dict[str, tuple[float, float]],
                 after: dict[str, tuple[float, float]]) -> None:
    """The groups formed between two scrapes: by the sequencer, and by every committer."""
    for name, who in zip(HISTOGRAMS, ("every committer", "the sequencer"), strict=True):
        groups, envelopes = (a - b for a, b in zip(after[name], before[name], strict=True))
        if groups:
            print(f"  groups {who} formed: {groups:,.0f}, "
                  f"{envelopes / groups:.2f} envelopes a group on average")


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of one process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.extend(int(c) for c in (task / "children").read_text().split())
    return found


async def serve_pids(server_pid: int, database_url: str) -> dict[str, list[int]]:
    """The processes whose CPU a single POST costs, by part: the serve's HTTP workers,
    its sequencer, and the PostgreSQL backends serving its database."""
    import asyncpg

    workers, sequencer = [server_pid], []
    for pid in _children(server_pid):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        (sequencer if b"--sequence" in cmdline else workers).append(pid)
    conn = await asyncpg.connect(database_url)
    try:
        backends = [r["pid"] for r in await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()")]
    finally:
        await conn.close()
    return {"HTTP workers (parse, verify, decode, answer)": workers,
            "sequencer (judge, chain, encode, asyncpg)": sequencer,
            "PostgreSQL backends": backends}


def cpu_by_part(pids: dict[str, list[int]]) -> dict[str, float]:
    return {part: sum(_cpu_seconds(p) for p in group) for part, group in pids.items()}


def print_cpu(before: dict[str, float], after: dict[str, float], requests: float) -> None:
    """CPU per request, by part: what bounds a single POST when a target is missed."""
    if requests <= 0:
        return
    for part, seconds in after.items():
        print(f"  CPU per request, {part}: {1e6 * (seconds - before[part]) / requests:7,.0f} µs")


def bare_phase(processes: int, script: Path, args: argparse.Namespace,
               envelopes: Path) -> WrkRun:
    port = free_port()
    procs = [subprocess.Popen([sys.executable, __file__, "--serve-bare", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(processes)]
    try:
        wait_port(port)
        return run_wrk(f"http://127.0.0.1:{port}", script, args.seconds, args.connections,
                       envelopes, 0, wrap=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each wrk run")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--envelopes", type=int, default=None,
                    help="pre-signed envelopes per bureau run (default: 3,000 a second "
                    "of run; a thread that runs out sends GETs, reported apart)")
    ap.add_argument("--workers", type=int, default=None,
                    help="bureau serve --workers, and the bare handler's processes "
                    "(default: serve's own, one per core)")
    ap.add_argument("--serve-bare", type=int, default=None, help=argparse.SUPPRESS)
    return ap.parse_args()


async def main(args: argparse.Namespace) -> None:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")

    processes = args.workers or default_serve_workers()
    count = args.envelopes or int(3000 * args.seconds)
    print(f"{processes} processes each side, {args.connections} connections, "
          f"{args.seconds:g} s per run")
    rep = wire.generate_key()
    with tempfile.TemporaryDirectory(prefix="wrk-bench-") as tmp:
        script = Path(tmp) / "envelopes.lua"
        script.write_text(LUA)
        files = {}
        for tag, n in (("bare", 1000), ("warm", 3000), ("flat", count), ("paced", count)):
            files[tag] = Path(tmp) / f"{tag}.ndjson"
            files[tag].write_bytes(b"\n".join(presign(rep, n, tag)) + b"\n")

        bare = bare_phase(processes, script, args, files["bare"])
        print(f"bare aiohttp handler (the HTTP-layer limit): {bare.line()}")
        async with bench_bureau(rep, workers=args.workers) as (server, url):
            assert server.proc is not None
            # Measured once every process has started (the sequencer included, which
            # the first requests find still importing: they commit by themselves).
            while (await group_sizes(server.ops_url))[HISTOGRAMS[1]][0] < 1:
                run_wrk(server.url, script, 1, args.connections, files["warm"], 0)
            pids = await serve_pids(server.proc.pid, url)
            before, cpu_before = await group_sizes(server.ops_url), cpu_by_part(pids)
            flat = run_wrk(server.url, script, args.seconds, args.connections,
                           files["flat"], 0)
            after, cpu_after = await group_sizes(server.ops_url), cpu_by_part(pids)
            print(f"bureau single POST, flat out:               {flat.line()}")
            print(f"  ratio to the bare handler: {flat.rate / bare.rate:.3f}  (target >= 0.25);"
                  f" p99 target < 20 ms")
            print_groups(before, after)
            print_cpu(cpu_before, cpu_after, flat.rate * args.seconds)
            half = flat.rate / 2
            pause_ms = max(1, round(1000 * args.connections / half))
            paced = run_wrk(server.url, script, args.seconds, args.connections,
                            files["paced"], pause_ms)
            print(f"bureau single POST, paced near {half:,.0f}/s:     {paced.line()}")
            print_groups(after, await group_sizes(server.ops_url))
    if os.environ.get("WRK_BENCH_SHOW"):
        print(flat.out)


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.serve_bare is not None:  # one process of the bare handler, run by the bench
        serve_bare(arguments.serve_bare)
    else:
        asyncio.run(main(arguments))
