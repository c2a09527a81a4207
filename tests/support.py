"""Test support, written once: the bureau and small servers on loopback ports, payload
builders, signed requests, waiting on progress and reading metrics. Tests import what
they share from here, never from bureau.simulate (tests/structure/test_test_imports.py).

Beside it: tests/processes.py, real ``bureau`` processes (ServeProcess, run_cli,
ProgressKiller, post_batch) for the tests that kill or restart them; tests/databases.py,
the test PostgreSQL (a migrated template, a fresh database per test)."""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import json
import os
import secrets
import ssl
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import nacl.signing
import pytest
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from http_message_signatures import HTTPMessageSigner, MappingKeyResolver, algorithms
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from bureau.config import Config
from bureau.http.app import create_app, create_ops_app
from bureau.http.keys import LOG_KEY
from bureau.transparency.heads import LogKey
from reporters import wire
from reporters._internal.payloads import issued_timestamp
from reporters.httpsig import REQUIRED_COMPONENTS
from tests.databases import fresh_database


@asynccontextmanager
async def serving(app: web.Application | web.AppRunner, *, access_log: bool = True,
                  ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """``app`` (or a runner made for it) on 127.0.0.1 at a port the OS chooses, for as
    long as the block runs; yields its base URL (``http://127.0.0.1:PORT``, ``https``
    with ``ssl_context``)."""
    if isinstance(app, web.AppRunner):
        runner = app
    else:
        runner = web.AppRunner(app) if access_log else web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context).start()
        port = runner.addresses[0][1]
        yield f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def missing(what: str) -> None:
    """Skip, saying what is missing — or fail, where it must be there (CI sets
    ``BUREAU_REQUIRE_OPS_TOOLS`` once it has installed every tool: tests/ops's, and
    pg_auto_failover for tests/scaling/test_failover.py)."""
    if os.environ.get("BUREAU_REQUIRE_OPS_TOOLS"):
        pytest.fail(f"{what}, and BUREAU_REQUIRE_OPS_TOOLS is set")
    pytest.skip(what)


class TestClock:
    """The bureau's clock in tests: real time, plus an offset a test may move forward."""

    __test__ = False

    def __init__(self) -> None:
        self.offset = dt.timedelta(0)

    def __call__(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += dt.timedelta(seconds=seconds)


def now_text(delta_seconds: float = 0) -> str:
    t = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=delta_seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def issued() -> str:
    """An ``issued_at`` for an update (reporter registration, amendment, policy): now, to
    the microsecond, later than any issued before in this process (SPEC §3)."""
    return issued_timestamp()


def fact_payload(interaction: str, subject: str, caller: str | None = None,
                 **fields: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "interaction": interaction, "subject": subject, "caller": caller,
        "observed_at": now_text(), "answered": True, "latency_ms": 120, "well_formed": True,
        "promises": [], "claimed": None, "check": None, "derived": None, "engagement": None,
    }
    payload.update(fields)
    return payload


def registration(reporter: nacl.signing.SigningKey | str, roles: Sequence[str] = ("facts",),
                 *, name: str = "gw", operator: str = "Gateway Co", issued_at: str | None = None,
                 **fields: Any) -> dict[str, Any]:
    """A reporter registration's payload, for an admin to sign: ``reporter`` a key or its
    id, issued now unless ``issued_at`` says; ``fields`` more of it (``distrusted_from``)."""
    return {"reporter": reporter if isinstance(reporter, str) else wire.signing_key_id(reporter),
            "name": name, "operator": operator, "roles": list(roles),
            "issued_at": issued_at or issued(), **fields}


def enrollment(name: str | None = None, *, operator: str | None = None,
               anchor: tuple[str, str] | None = None,
               promises: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """An enrollment's payload: by default named ``agent TAG``, with an operator and a
    domain anchor no one else shares (TAG is new each call), and no promises."""
    tag = secrets.token_hex(4)
    kind, value = anchor if anchor is not None else ("domain", f"{tag}.example")
    return {"name": name if name is not None else f"agent {tag}",
            "anchor": {"kind": kind, "value": value},
            "operator": operator if operator is not None else f"operator {tag}",
            "promises": [dict(p) for p in promises]}


async def enroll(bureau: BureauUnderTest, payload: dict[str, Any] | None = None
                 ) -> nacl.signing.SigningKey:
    """A new key, enrolled as an agent with ``payload`` (by default ``enrollment()``)."""
    key = wire.generate_key()
    await bureau.accepted(key, "enrollment", payload if payload is not None else enrollment())
    return key


def interaction_id() -> str:
    return "ia-" + secrets.token_hex(6)


def attestation(reporter: nacl.signing.SigningKey, interaction: str,
                subject: nacl.signing.SigningKey, outcome: str = "ACCEPTED",
                corrections: int = 0) -> dict[str, Any]:
    return {"reporter": kid(reporter), "interaction": interaction, "subject": kid(subject),
            "outcome": outcome, "corrections": corrections}


async def until(what: str, check: Callable[[], Any], *, timeout: float = 30,
                every: float = 0.01) -> Any:
    """Poll ``check()`` (awaited, when it returns an awaitable) until it is truthy, and
    return what it returned: a wait on progress, never a fixed sleep; ``timeout`` bounds
    a hang only."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if inspect.isawaitable(found):
            found = await found
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {what}"
        await asyncio.sleep(every)


@dataclass
class BureauUnderTest:
    url: str
    session: aiohttp.ClientSession
    admin: nacl.signing.SigningKey
    signing_key: nacl.signing.SigningKey
    clock: TestClock
    app: web.Application
    config: Config
    database_url: str
    #: the operator listener (/metrics, /healthz, /readyz)
    ops_url: str = ""
    _reporters: dict[str, nacl.signing.SigningKey] = field(default_factory=dict)

    @property
    def log_key(self) -> LogKey:
        """The bureau's key as the transparency log's (origin, note signer, vkey)."""
        return self.app[LOG_KEY]

    async def post(self, envelope: dict[str, Any] | bytes,
                   content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
        body = envelope if isinstance(envelope, bytes) else json.dumps(envelope).encode()
        async with self.session.post(self.url + "/v1/evidence", data=body,
                                     headers={"Content-Type": content_type}) as resp:
            return resp.status, await resp.json()

    async def submit(self, key: nacl.signing.SigningKey, name: str,
                     payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return await self.post(wire.sign_payload(key, name, payload))

    async def accepted(self, key: nacl.signing.SigningKey, name: str,
                       payload: dict[str, Any]) -> dict[str, Any]:
        status, body = await self.submit(key, name, payload)
        assert status == 201, body
        return body

    async def batch(self, lines: Sequence[dict[str, Any] | bytes]) -> list[dict[str, Any]]:
        body = b"".join(
            (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
            for line in lines)
        async with self.session.post(self.url + "/v1/evidence/batch", data=body,
                                     headers={"Content-Type": "application/x-ndjson"}) as resp:
            assert resp.status == 200, await resp.text()
            text = await resp.text()
        return [json.loads(line) for line in text.splitlines()]

    async def verify(self) -> None:
        """``bureau verify`` of the ledger and everything signed over it: after a test
        that writes (issue 35)."""
        from bureau.verify import verify_database

        conn = await asyncpg.connect(self.database_url)
        try:
            await verify_database(conn)
        finally:
            await conn.close()

    async def reporter(self, roles: Sequence[str] = ("facts", "probes"),
                       operator: str = "Gateway Co") -> nacl.signing.SigningKey:
        """Register a new reporter key with ``roles``."""
        key = wire.generate_key()
        kid = wire.signing_key_id(key)
        await self.accepted(self.admin, "reporter", registration(
            kid, roles, name=f"gw-{kid[8:14]}", operator=operator))
        return key


def kid(key: nacl.signing.SigningKey) -> str:
    return wire.signing_key_id(key)


@dataclass
class SignedRequest:
    """The request shape http_message_signatures reads and writes headers into."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)


def lib_signed_headers(key: nacl.signing.SigningKey, url: str, *, method: str = "GET",
                       keyid: str | None = None, created: int, nonce: str | None,
                       components: tuple[str, ...] = REQUIRED_COMPONENTS,
                       label: str | None = None) -> dict[str, str]:
    """The headers of a request signed by http_message_signatures' own signer (RFC 9421),
    not the project's wrapper: a second implementation to check the wrapper and the
    bureau against."""
    keyid = keyid or kid(key)
    resolver = MappingKeyResolver(
        public_keys={}, private_keys={keyid: Ed25519PrivateKey.from_private_bytes(bytes(key))})
    req = SignedRequest(method, url)
    HTTPMessageSigner(signature_algorithm=algorithms.ED25519, key_resolver=resolver).sign(
        req, key_id=keyid, created=dt.datetime.fromtimestamp(created, tz=dt.UTC),
        nonce=nonce, label=label, covered_component_ids=components)
    return req.headers


#: an ops listener's /metrics as data: (sample name, its labels sorted) -> value
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(session: aiohttp.ClientSession, ops_url: str) -> Samples:
    """Every sample of the /metrics of the ops listener at ``ops_url``."""
    async with session.get(ops_url + "/metrics") as resp:
        assert resp.status == 200, await resp.text()
        text = await resp.text()
    return {(s.name, tuple(sorted(s.labels.items()))): float(s.value)
            for family in text_string_to_metric_families(text) for s in family.samples}


def sample(samples: Samples, name: str, **labels: str) -> float:
    """One sample of a scrape (0 when it is not exported yet)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def registry_sample(name: str, **labels: str) -> float:
    """One sample of this process's own metrics (a bureau started in the test's process
    counts there); 0 when it is not exported yet."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def current_epoch(bureau: BureauUnderTest) -> int:
    """The epoch the bureau records into now (its clock)."""
    return int(bureau.clock().timestamp()) // bureau.config.epoch_seconds


async def get(bureau: BureauUnderTest, path: str) -> tuple[int, bytes]:
    """GET ``path``: (status, the body as bytes)."""
    async with bureau.session.get(bureau.url + path) as resp:
        return resp.status, await resp.read()


async def get_json(bureau: BureauUnderTest, path: str, *,
                   content_type: str | None = "application/json") -> tuple[int, Any]:
    """GET ``path``: (status, the JSON body); ``content_type=None`` takes any type."""
    async with bureau.session.get(bureau.url + path) as resp:
        return resp.status, await resp.json(content_type=content_type)


#: database URL -> (admin key, signing key) of the ledger made there (see start_bureau)
_LEDGER_KEYS: dict[str, tuple[nacl.signing.SigningKey, nacl.signing.SigningKey]] = {}


@asynccontextmanager
async def start_bureau(database_url: str, home: Path, *, epoch_seconds: int = 21600,
                       signing_key: nacl.signing.SigningKey | None = None,
                       admin_key: nacl.signing.SigningKey | None = None,
                       listener: Callable[[web.Application], web.AppRunner] | None = None,
                       **overrides: Any) -> AsyncIterator[BureauUnderTest]:
    """A bureau on ``database_url`` (``overrides``: its Config's fields) on a port of its
    own; ``listener`` makes the runner of that port (default aiohttp's plain one; the
    one ``bureau serve`` runs is ``bureau.http.listener.service_runner``)."""
    # One ledger, one key (SPEC §3 r3): a bureau started again on the same database is
    # given the keys the ledger was made with, as an operator gives a node its key file.
    admin, made_with = _LEDGER_KEYS.setdefault(
        database_url, (admin_key or wire.generate_key(), signing_key or wire.generate_key()))
    admin = admin_key or admin
    signing = signing_key or made_with
    clock = TestClock()
    config = Config(home=home, database_url=database_url,
                    admin_keys=overrides.pop("admin_keys",
                                             frozenset({wire.signing_key_id(admin)})),
                    epoch_seconds=epoch_seconds, **overrides)
    app = create_app(config, database_url, signing, clock=clock)
    async with serving(app if listener is None else listener(app)) as url, \
            serving(create_ops_app(app)) as ops_url, \
            aiohttp.ClientSession() as session:
        yield BureauUnderTest(url, session, admin, signing, clock, app, config, database_url,
                              ops_url)


def module_bureau(prefix: str, name: str = "bureau") -> Any:
    """A ``bureau`` fixture (or one called ``name``) one test module shares: one bureau
    on one fresh database whose name starts with ``prefix`` (a conftest or module says
    ``bureau = module_bureau("bureau_agents_")``). Starting a bureau costs tens of
    milliseconds on top of its database; the tests sharing it use keys of their own, so
    they cannot see each other's entries."""

    @pytest.fixture(scope="module", name=name)
    async def bureau(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory
                     ) -> AsyncIterator[BureauUnderTest]:
        async with fresh_database(pg_server_url, prefix) as url, \
                start_bureau(url, tmp_path_factory.mktemp("bureau-home")) as b:
            yield b

    return bureau
