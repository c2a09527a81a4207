"""A real Prometheus (Debian's ``prometheus``) scrapes ``bureau serve --workers 2``.

Both processes answer requests and scrapes (the kernel picks one per connection), and
every scrape must show the figures of both: the counters Prometheus stores never go
backwards, and once the load stops they equal what was sent, whichever process
answers. Which processes answered is read from the JSON access log (its ``pid``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from reporters import wire
from tests.processes import ServeProcess, bureau_env, free_port
from tests.support import fact_payload, issued, kid, missing

pytestmark = [pytest.mark.slow, pytest.mark.thirdparty]

ROUNDS, PER_ROUND = 6, 20
WATCHED = ("bureau_http_request_seconds_count", "bureau_intake_total", "bureau_refusals_total")


class Prometheus:
    """``prometheus`` on a free loopback port, scraping one target every second."""

    def __init__(self, binary: str, target: str, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = workdir / "prometheus.yml"
        config.write_text(json.dumps({  # JSON is YAML
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [{"job_name": "bureau",
                                "static_configs": [{"targets": [target]}]}]}))
        self.log = workdir / "prometheus.log"
        with self.log.open("wb") as fh:
            self.proc = subprocess.Popen(
                [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdout=fh, stderr=subprocess.STDOUT)

    async def query(self, session: aiohttp.ClientSession, expr: str) -> list[dict[str, Any]]:
        async with session.get(self.url + "/api/v1/query", params={"query": expr}) as resp:
            doc = await resp.json()
        assert doc["status"] == "success", doc
        result: list[dict[str, Any]] = doc["data"]["result"]
        return result

    async def scalar(self, session: aiohttp.ClientSession, expr: str) -> float | None:
        try:
            rows = await self.query(session, expr)
        except aiohttp.ClientError:
            return None  # not listening yet
        return float(rows[0]["value"][1]) if rows else None

    async def wait_for(self, session: aiohttp.ClientSession, expr: str, want: float,
                       timeout: float = 90) -> None:
        """Until ``expr`` is at least ``want`` (progress, not a fixed sleep)."""
        deadline = time.monotonic() + timeout
        while (value := await self.scalar(session, expr)) is None or value < want:
            assert self.proc.poll() is None, self.log.read_text()[-2000:]
            assert time.monotonic() < deadline, (expr, value, want)
            await asyncio.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def _post(url: str, envelope: dict[str, Any]) -> int:
    # a connection per request: SO_REUSEPORT spreads connections over the processes
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s, \
            s.post(url + "/v1/evidence", json=envelope) as resp:
        await resp.read()
        return resp.status


async def test_prometheus_sees_counters_of_both_processes_never_go_back(
        database_url: str, tmp_path: Path) -> None:
    binary = shutil.which("prometheus")
    if binary is None:
        missing("prometheus is not installed (Debian package prometheus; .ci/run installs it)")
    assert binary is not None
    admin = wire.generate_key()
    log = tmp_path / "serve.log"
    server = ServeProcess(bureau_env(database_url, tmp_path / "home", kid(admin)), log,
                          extra_args=("--workers", "2", "--report-workers", "1",
                                      "--access-log", "json"))
    await server.start()
    prometheus = Prometheus(binary, f"127.0.0.1:{server.ops_port}", tmp_path)
    try:
        async with aiohttp.ClientSession() as session:
            scrapes = 'count_over_time(up{job="bureau"}[1h])'
            await prometheus.wait_for(session, scrapes, 1)
            gateway, agent = wire.generate_key(), wire.generate_key()
            assert await _post(server.url, wire.sign_payload(admin, "reporter", {
                "reporter": kid(gateway), "name": "gw", "operator": "Gateways",
                "roles": ["facts"], "issued_at": issued(), "distrusted_from": None})) == 201
            sent, refused = 1, 0
            for r in range(ROUNDS):
                for i in range(PER_ROUND):
                    if i % 4 == 3:  # a refusal: a fact signed by a key that is no reporter
                        envelope = wire.sign_payload(agent, "fact", fact_payload(
                            f"p-{r}-{i}", kid(gateway)))
                        assert 400 <= await _post(server.url, envelope) < 500
                        refused += 1
                    else:
                        envelope = wire.sign_payload(gateway, "fact", fact_payload(
                            f"p-{r}-{i}", kid(agent)))
                        assert await _post(server.url, envelope) == 201
                    sent += 1
                # let Prometheus scrape between rounds, whichever process it reaches
                seen = await prometheus.scalar(session, scrapes) or 0
                await prometheus.wait_for(session, scrapes, seen + 2)

            evidence = 'sum(bureau_http_request_seconds_count{route="/v1/evidence"})'
            await prometheus.wait_for(session, evidence, sent)
            await prometheus.wait_for(session, scrapes, (await prometheus.scalar(
                session, scrapes) or 0) + 3)  # and a few scrapes more, of either process
            assert await prometheus.scalar(session, evidence) == sent
            assert await prometheus.scalar(session, 'sum(bureau_refusals_total)') == refused
            assert await prometheus.scalar(
                session, 'sum(bureau_intake_total{result="accepted"})') == sent - refused

            for name in WATCHED:  # every stored sample of every series, in order
                series = await prometheus.query(session, f"{name}[1h]")
                assert series, name
                for one in series:
                    values = [float(v) for _, v in one["values"]]
                    assert values == sorted(values), (one["metric"], values)
            resets = await prometheus.scalar(
                session, "sum(resets(bureau_http_request_seconds_count[1h]))")
            assert resets == 0
    finally:
        prometheus.stop()
        server.stop()

    lines = [json.loads(line) for line in log.read_text().splitlines()
             if line.startswith("{")]
    evidence_pids = {line["pid"] for line in lines
                     if line["path"] == "/v1/evidence" and line["method"] == "POST"}
    assert len(evidence_pids) == 2, evidence_pids  # both processes took requests
    assert sum(1 for line in lines if line["path"] == "/v1/evidence") == sent
