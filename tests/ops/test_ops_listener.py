"""The operator listener (SPEC §9, §10 r2): ``/metrics`` is served there only, never on
the public port; ``/healthz`` and ``/readyz`` on both; ``serve --workers N`` still
starts every process. The ``Server`` header names no version (issue 12)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiohttp
import pytest

from reporters import wire
from tests.hardening.support import parse_response, raw_exchange
from tests.processes import ServeProcess, bureau_env
from tests.support import BureauUnderTest

ERROR_FIELDS = {"status", "code", "path", "detail"}


async def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, dict(resp.headers), await resp.read()


async def test_metrics_are_on_the_operator_listener_only(bureau: BureauUnderTest) -> None:
    status, _, body = await _get(bureau.url + "/metrics")
    doc = json.loads(body)
    assert (status, set(doc), doc["code"]) == (404, ERROR_FIELDS, "NOT_FOUND")
    status, headers, body = await _get(bureau.ops_url + "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert b"# HELP bureau_intake_total" in body
    for base in (bureau.url, bureau.ops_url):
        for path, word in (("/healthz", "ok"), ("/readyz", "ready")):
            status, _, body = await _get(base + path)
            assert (status, json.loads(body)) == (200, {"status": word}), (base, path)
    status, _, body = await _get(bureau.ops_url + "/v1/bureau")  # nothing else there
    assert (status, json.loads(body)["code"]) == (404, "NOT_FOUND")
    _, _, body = await _get(bureau.url + "/openapi.json")
    assert "/metrics" not in json.loads(body)["paths"]


async def test_the_server_header_names_no_version(bureau: BureauUnderTest) -> None:
    """On answers of the service, of the operator listener, on errors, and on aiohttp's
    own answer to a request that is not HTTP (which bypasses the application)."""
    for url in (bureau.url + "/v1/bureau", bureau.url + "/nowhere",
                bureau.ops_url + "/metrics"):
        _, headers, _ = await _get(url)
        assert headers["Server"] == "bureau", url
    raw = await raw_exchange(bureau, b"GET / HTTP/1.1\r\nHost: b\r\nContent-Length: x\r\n\r\n")
    status, headers, _ = parse_response(raw)
    assert status == 400 and headers["server"] == "bureau"
    assert b"aiohttp" not in raw and b"Python/" not in raw


@pytest.mark.slow
async def test_every_process_of_serve_workers_starts_with_its_operator_listener(
        database_url: str, tmp_path: Path) -> None:
    """``serve --workers 2``: both processes bind the public port and the operator port
    (SO_REUSEPORT on both), a scrape of the operator port gets metrics, the public port
    does not serve them."""
    admin = wire.generate_key()
    log = tmp_path / "serve.log"
    server = ServeProcess(bureau_env(database_url, tmp_path / "home",
                                     wire.signing_key_id(admin)), log,
                          workers=2, extra_args=("--report-workers", "1"))
    await server.start()
    try:
        deadline = time.monotonic() + 60
        while log.read_text().count("operator listener (/metrics) on") < 2:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            assert server.proc is not None and server.proc.poll() is None
            await asyncio.sleep(0.1)
        assert log.read_text().count(f"on http://127.0.0.1:{server.ops_port}") == 2
        for _ in range(5):
            status, _, body = await _get(server.ops_url + "/metrics")
            # (a labelled counter with no sample yet is not listed when the processes'
            # metrics are added up: tests/ops/test_prometheus.py counts them)
            assert status == 200 and b"bureau_build_info{" in body
            assert b"# HELP bureau_seal_lag_seconds" in body
            status, _, _ = await _get(server.url + "/metrics")
            assert status == 404
            status, _, _ = await _get(server.ops_url + "/readyz")
            assert status == 200
    finally:
        server.stop()
