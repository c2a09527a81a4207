"""Helpers for the epochs-and-reports tests: a small world of agents, evaluators and a
reporter, moving between epochs with the test clock instead of sleeping."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import asyncpg
import nacl.signing

from bureau.http.keys import SEALER
from bureau.storage.reports import seals
from bureau.views.builder import ReportBuilder
from bureau.views.rebuild import rebuild
from reporters import wire
from tests import support
from tests.support import BureauUnderTest, attestation, fact_payload, kid
from tests.support import get as get  # re-exported for these tests

Key = nacl.signing.SigningKey
EPOCH_SECONDS = 3600


def enrollment(name: str) -> dict[str, Any]:
    return support.enrollment(name)


@dataclass
class World:
    """A bureau with one reporter (facts and probes) and helpers to fill it."""

    bureau: BureauUnderTest
    reporter: Key
    counter: int = 0
    names: dict[str, str] = field(default_factory=dict)

    @classmethod
    async def make(cls, bureau: BureauUnderTest) -> World:
        return cls(bureau, await bureau.reporter(("facts", "probes")))

    def interaction(self) -> str:
        self.counter += 1
        return f"ia-{self.counter:05d}"

    async def agent(self, name: str) -> Key:
        key = await support.enroll(self.bureau, enrollment(name))
        self.names[kid(key)] = name
        return key

    async def fact(self, subject: Key | str, caller: Key | None = None,
                   **fields: Any) -> str:
        ia = self.interaction()
        who = subject if isinstance(subject, str) else kid(subject)
        await self.bureau.accepted(self.reporter, "fact", fact_payload(
            ia, who, kid(caller) if caller is not None else None, **fields))
        return ia

    async def attest(self, evaluator: Key, ia: str, subject: Key, outcome: str,
                     corrections: int = 0) -> dict[str, Any]:
        return await self.bureau.accepted(evaluator, "attestation", attestation(
            self.reporter, ia, subject, outcome, corrections))

    async def probe(self, subject: Key | str, passed: bool, ia: str | None = None) -> str:
        ia = ia if ia is not None else self.interaction()
        who = subject if isinstance(subject, str) else kid(subject)
        await self.bureau.accepted(self.reporter, "probe", {
            "interaction": ia, "subject": who, "probe": "known-answer-1", "passed": passed,
            "observed_at": now_text()})
        return ia


def now_text(delta_seconds: float = 0) -> str:
    from tests.support import now_text as _now

    return _now(delta_seconds)


async def settle(bureau: BureauUnderTest) -> list[int]:
    """Run one sealer pass now (seal what elapsed, build reports) and return the epochs
    whose reports it built."""
    return await bureau.app[SEALER].seal_once()


async def next_epoch(bureau: BureauUnderTest) -> list[int]:
    """Move the bureau's clock one epoch on, then settle."""
    bureau.clock.advance(EPOCH_SECONDS)
    return await settle(bureau)


def open_envelope(body: bytes, bureau_key: str) -> dict[str, Any]:
    """Verify a bureau-signed envelope as any reader would, and return its payload."""
    env = json.loads(body)
    assert len(env["signatures"]) == 1
    sig = env["signatures"][0]
    assert sig["keyid"] == bureau_key
    payload = base64.b64decode(env["payload"])
    public = wire.public_key_from_key_id(sig["keyid"])
    assert wire.verify_signature(public, env["payloadType"], payload,
                                 base64.b64decode(sig["sig"]))
    doc: dict[str, Any] = json.loads(payload)
    assert wire.canonical_json(doc) == payload  # the payload is canonical JSON
    return doc


async def bureau_key(bureau: BureauUnderTest) -> str:
    async with bureau.session.get(bureau.url + "/v1/bureau") as resp:
        assert resp.status == 200
        key: str = (await resp.json())["key"]
    return key


async def seal_counts(database_url: str) -> dict[int, int]:
    """How many seal entries there are for each epoch, read from the entries alone."""
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT entry FROM entries WHERE kind = 'seal' ORDER BY seq")
    finally:
        await conn.close()
    counts: dict[int, int] = {}
    for r in rows:
        epoch = json.loads(r["entry"])["body"]["epoch"]
        counts[epoch] = counts.get(epoch, 0) + 1
    return counts


__all__ = ["EPOCH_SECONDS", "Key", "World", "aiohttp", "bureau_key", "get", "next_epoch",
           "open_envelope", "seal_counts", "settle"]


async def assert_workers_and_rebuild_agree(conn: asyncpg.Connection, bureau: BureauUnderTest,
                                           stored: dict[tuple[int, str], bytes]) -> None:
    """Report workers signing every sealed epoch afresh, and ``bureau rebuild``, give
    exactly the ``stored`` reports ((epoch, agent) -> envelope bytes)."""
    many = ReportBuilder(bureau.signing_key, bureau.log_key, workers=2,
                         dsn=bureau.database_url)
    try:
        for seal in await seals(conn):
            agents, envelopes, _ = await many.sign_epoch(conn, seal)
            assert dict(zip(agents, envelopes, strict=True)) == {
                agent: env for (epoch, agent), env in stored.items() if epoch == seal.epoch}
    finally:
        many.close()
    result = await rebuild(conn, bureau.signing_key, bureau.log_key)
    assert result.identical, result.differences
