"""The real LiteLLM proxy on loopback, started by its own command line (``litellm
--config config.yaml --num_workers N``) with the plugin loaded from its config, as an
operator runs it: for tests/integrations/test_litellm_proxy*.py and
bench/litellm_bench.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import openai

from tests.integrations.support import MESSAGES
from tests.processes import free_port

#: how long a LiteLLM proxy may take to start: its imports alone are seconds, and a
#: loaded machine with several workers has been measured at 54 s
START_TIMEOUT = 240.0
MASTER_KEY = "sk-bureau-master-0001"
PLUGIN = "reporters.integrations.litellm.handler"
#: LiteLLM's backoff between a request's retries (its own settings, read from the
#: environment): from 0.5 s, doubling, plus up to 0.75 s of jitter, cut to 0.1 s and
#: 0.1 s — the providers here are on loopback, and the plugin's settle_seconds must
#: outlast a request's retries
RETRY_BACKOFF = {"INITIAL_RETRY_DELAY": "0.1", "JITTER": "0.1"}


class NoLiteLLM(Exception):
    """The LiteLLM proxy cannot run here; the message says why."""


def litellm_command() -> Path:
    """The ``litellm`` command of this interpreter's environment."""
    command = Path(sys.executable).parent / "litellm"
    if not command.exists():
        raise NoLiteLLM("the litellm command is not installed (litellm[proxy], the test "
                        "extra; .ci/run installs it)")
    try:
        with warnings.catch_warnings():  # LiteLLM's own deprecations are its business
            warnings.simplefilter("ignore")
            import litellm.proxy.proxy_server  # noqa: F401  (its [proxy] extra's imports)
    except ImportError as exc:
        raise NoLiteLLM(f"LiteLLM's proxy cannot be imported ({exc}): litellm[proxy]") from exc
    return command


def _yaml(doc: Any, indent: int = 0) -> str:
    """YAML of plain data (JSON is YAML: each scalar written as JSON)."""
    pad = " " * indent
    if isinstance(doc, Mapping):
        return "".join(f"{pad}{k}:\n{_yaml(v, indent + 2)}" if isinstance(v, Mapping | list)
                       and v else f"{pad}{k}: {json.dumps(v)}\n" for k, v in doc.items())
    return "".join(f"{pad}-\n{_yaml(item, indent + 2)}" if isinstance(item, Mapping | list)
                   else f"{pad}- {json.dumps(item)}\n" for item in doc)


@dataclass
class RunningLiteLLM:
    url: str  # the proxy's base URL (the OpenAI API is under /v1)
    spool_dir: Path
    proc: subprocess.Popen[bytes]
    log: Path

    async def metrics(self) -> str:
        async with aiohttp.ClientSession() as session, session.get(self.url + "/metrics/") as r:
            assert r.status == 200, await r.text()
            return await r.text()


async def ask(llm: openai.AsyncOpenAI, group: str) -> str:
    """One call; what it came to ("42", or the error's status)."""
    try:
        answer = await llm.chat.completions.create(model=group, messages=MESSAGES)
    except openai.APIStatusError as exc:
        return str(exc.status_code)
    return str(answer.choices[0].message.content)


def model(name: str, **params: Any) -> dict[str, Any]:
    """A ``model_list`` entry: model group ``name``, provider ``openai``."""
    return {"model_name": name, "litellm_params": {"model": f"openai/{name}",
                                                   "api_key": "x", **params}}


@asynccontextmanager
async def running_litellm(tmp: Path, models: list[dict[str, Any]],
                          plugin: Mapping[str, Any] | None, *, workers: int = 1,
                          router: Mapping[str, Any] | None = None,
                          callbacks: Sequence[str] = ()) -> AsyncIterator[RunningLiteLLM]:
    """A LiteLLM proxy with ``models``, the master key, the plugin configured by
    ``plugin`` (its TOML fields, as a mapping; written as JSON; None: no plugin) and
    ``workers`` worker processes; no retries unless ``router`` says; more ``callbacks``
    after the plugin, as config.yaml names them (``"prometheus"``: LiteLLM's /metrics,
    open to a scraper on loopback, as ``bureau status --spool`` reads it); stopped
    (SIGTERM, then SIGKILL) at the end."""
    command = litellm_command()
    settings: dict[str, Any] = {"callbacks": [*([PLUGIN] if plugin is not None else []),
                                              *callbacks]}
    prometheus = "prometheus" in callbacks
    if prometheus:
        settings["require_auth_for_metrics_endpoint"] = False
    config = {"model_list": models, "litellm_settings": settings,
              "router_settings": {"num_retries": 0, **(router or {})},
              "general_settings": {"master_key": MASTER_KEY}}
    (tmp / "config.yaml").write_text(_yaml(config))
    (tmp / "bureau.json").write_text(json.dumps(plugin or {}))
    port, log = free_port(), tmp / "litellm.log"
    env = {**os.environ, "BUREAU_LITELLM_CONFIG": str(tmp / "bureau.json"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_DOCS": "True", **RETRY_BACKOFF}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    if prometheus and workers > 1:  # LiteLLM adds up its workers' metrics from here
        (tmp / "prometheus").mkdir()
        env["PROMETHEUS_MULTIPROC_DIR"] = str(tmp / "prometheus")
    with log.open("ab") as fh:
        proc = subprocess.Popen(
            [str(command), "--config", str(tmp / "config.yaml"), "--host", "127.0.0.1",
             "--port", str(port), "--num_workers", str(workers),
             # uvicorn restarts a worker that does not answer its health check within 5 s,
             # and a LiteLLM worker starting on a loaded machine can take longer
             *(["--timeout_worker_healthcheck", "120"] if workers > 1 else [])],
            cwd=tmp, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    running = RunningLiteLLM(f"http://127.0.0.1:{port}",
                             tmp / str((plugin or {}).get("spool_dir", "spool")), proc, log)
    try:
        await _ready(running)
        yield running
    finally:
        _stop(proc)


async def _ready(running: RunningLiteLLM) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    async with aiohttp.ClientSession() as session:
        while True:
            if running.proc.poll() is not None:
                raise AssertionError("LiteLLM exited: " + running.log.read_text()[-3000:])
            try:
                async with session.get(running.url + "/health/liveliness") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("LiteLLM did not start: " + running.log.read_text()[-3000:])
            await asyncio.sleep(0.2)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the proxy's process group (its workers too), SIGKILL if it lingers."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
