"""The crash soak, shared by tests/hardening/test_crash.py (small) and ops/crash_soak.py
(10,000 facts, 20 kills).

One run: a real ``bureau serve`` on a database of its own; a client streams, in batches,
a reporter registration, the enrollments of every caller and subject, then facts each
followed by its caller's attestation; a killer sends ``kill -9`` at random moments and
restarts the server; the client re-sends every batch that got no answer, unchanged.
Epochs are short, so the settler seals and builds reports while all this happens.

Every envelope is derived from the seed (Ed25519 is deterministic, timestamps are fixed),
so a second run with no kills — the clean run — sees the very same bytes, and the two
can be compared: the same entry payloads, the same derived index rows, and the same
final report for every agent. Reports are compared without their ``epoch``, ``ledger``
``evidence`` and ``first_seen_epoch`` fields: those name the entry seq and id of the
seal, the Merkle root of the agent's file's entry ids and the epoch an agent's first
fact was recorded in, and entry ids and epochs follow the bureau's ``recorded_at``
clock reading, which no two runs share (the kills stretch the crash run over more,
short, epochs).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import nacl.signing

from bureau import keyfiles
from reporters import wire
from tests.processes import ProgressKiller, ServeProcess, bureau_env, post_batch, run_cli
from tests.support import registration

AGENTS = 20  # subjects, and as many callers
BATCH = 200
OBSERVED_AT = "2026-01-01T00:00:00Z"
OUTCOMES = ["ACCEPTED", "ACCEPTED", "FAILED_DISCOVERED", "FAILED_ADMITTED", "DECLINED"]


def _key(seed: int, name: str) -> nacl.signing.SigningKey:
    return wire.signing_key_from_seed(hashlib.sha256(f"{seed}:{name}".encode()).digest())


@dataclass
class Script:
    """Every envelope of a soak, in order, cut into batches."""

    admin: nacl.signing.SigningKey
    signing: nacl.signing.SigningKey
    agents: list[str]
    batches: list[list[bytes]]
    facts: int

    @classmethod
    def make(cls, seed: int, facts: int) -> Script:
        rnd = random.Random(seed)
        admin, rep, signing = _key(seed, "admin"), _key(seed, "reporter"), _key(seed, "bureau")
        subjects = [_key(seed, f"subject-{i}") for i in range(AGENTS)]
        callers = [_key(seed, f"caller-{i}") for i in range(AGENTS)]
        lines = [wire.sign_payload(admin, "reporter", registration(
            rep, ["facts", "probes"], name="soak gateway", operator="Soak Gateway Co",
            issued_at=OBSERVED_AT))]
        for role, keys in (("subject", subjects), ("caller", callers)):
            for i, key in enumerate(keys):
                lines.append(wire.sign_payload(key, "enrollment", {
                    "name": f"{role} {i}", "operator": f"{role} operator {i}",
                    "anchor": {"kind": "domain", "value": f"{role}-{i}.example"},
                    "promises": []}))
        for i in range(facts):
            subject, caller = subjects[i % AGENTS], callers[(i * 7 + i // AGENTS) % AGENTS]
            ia = f"soak:{i:06d}"
            check = rnd.choice(["PASS", "FAIL", None])
            lines.append(wire.sign_payload(rep, "fact", {
                "interaction": ia, "subject": wire.signing_key_id(subject),
                "caller": wire.signing_key_id(caller), "observed_at": OBSERVED_AT,
                "answered": True, "latency_ms": rnd.randrange(20, 4000), "well_formed": True,
                "promises": [], "claimed": "SUCCESS", "check": check, "derived": None,
                "engagement": None}))
            outcome = rnd.choice(OUTCOMES)
            lines.append(wire.sign_payload(caller, "attestation", {
                "reporter": wire.signing_key_id(rep), "interaction": ia,
                "subject": wire.signing_key_id(subject), "outcome": outcome,
                "corrections": 0}))
        raw = [json.dumps(env, separators=(",", ":")).encode() for env in lines]
        return cls(admin, signing, [wire.signing_key_id(k) for k in subjects + callers],
                   [raw[i:i + BATCH] for i in range(0, len(raw), BATCH)], facts)


@dataclass
class Outcome:
    kills: int = 0
    resent_batches: int = 0
    acknowledged: dict[str, int] = field(default_factory=dict)
    stored: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    distinct_content: int = 0
    contiguous: bool = False
    verify_ok: bool = False
    verify_output: str = ""
    payloads: set[bytes] = field(default_factory=set)
    tables: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    reports: dict[str, bytes] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def lost(self) -> int:
        """Acknowledged entries not in the ledger at the seq they were given."""
        return sum(1 for i, s in self.acknowledged.items() if self.stored.get(i) != s)


_TABLES = {
    "facts": "SELECT reporter, interaction, content_key, subject, caller, engagement FROM facts",
    "verdicts": "SELECT kind, evaluator, reporter, ref, subject, content_key FROM verdicts",
    "agents": "SELECT key, name, operator, anchor_kind, anchor_value, withdrawn FROM agents",
    "reporters": "SELECT key, name, operator, roles FROM reporters",
    "exclusions": "SELECT target, reason FROM exclusions",
    "refusals": "SELECT content_key, signer, kind, code, path FROM refusals",
}


async def _read_ledger(url: str, out: Outcome) -> int:
    """Fill ``out`` from the database; return the last seq that is not a seal."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT seq, id, kind, content_key, entry FROM entries"
                                " ORDER BY seq")
        out.stored = {r["id"]: r["seq"] for r in rows}
        kinds: dict[str, int] = {}
        for r in rows:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        out.kinds = kinds
        keyed = [r["content_key"] for r in rows if r["content_key"] is not None]
        out.distinct_content = len(set(keyed)) if len(set(keyed)) == len(keyed) else -1
        out.contiguous = [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
        out.payloads = {json.dumps(json.loads(r["entry"])["envelope"], sort_keys=True).encode()
                        for r in rows if r["content_key"] is not None}
        for name, query in _TABLES.items():
            out.tables[name] = sorted(tuple(r) for r in await conn.fetch(query))
        last = max((r["seq"] for r in rows if r["kind"] != "seal"), default=0)
    finally:
        await conn.close()
    return last


def _report_core(body: bytes) -> bytes:
    """The report's payload without what follows the clock (see the module doc)."""
    env = json.loads(body)
    payload = json.loads(base64.b64decode(env["payload"]))
    for clocked in ("epoch", "ledger", "evidence", "first_seen_epoch"):
        payload.pop(clocked, None)
    return wire.canonical_json(payload)


async def _final_reports(session: aiohttp.ClientSession, server: ServeProcess,
                         last_seq: int, agents: list[str], timeout: float) -> dict[str, bytes]:
    """Wait until a checkpoint covers every entry, then fetch every agent's report."""
    deadline = time.monotonic() + timeout
    while True:
        async with session.get(server.url + "/v1/checkpoints/latest") as resp:
            if resp.status == 200:
                env = json.loads(await resp.read())
                if json.loads(base64.b64decode(env["payload"]))["seq"] >= last_seq:
                    break
        if time.monotonic() > deadline:
            raise TimeoutError(f"no checkpoint covered seq {last_seq} in {timeout} s")
        await asyncio.sleep(0.5)
    reports = {}
    for agent in agents:
        async with session.get(server.url + f"/v1/agents/{agent}/report") as resp:
            assert resp.status == 200, (agent, resp.status, await resp.text())
            reports[agent] = _report_core(await resp.read())
    return reports


async def run(script: Script, database_url: str, home: Path, *, kills: int, seed: int,
              epoch_seconds: int = 3, log: Callable[[str], None] = lambda _: None) -> Outcome:
    """One soak run; ``kills=0`` is the clean run."""
    home.mkdir(parents=True, exist_ok=True)
    signing_path = home / "bureau-signing.key"
    if not signing_path.exists():
        keyfiles.write_key(signing_path, script.signing)
    env = bureau_env(database_url, home, wire.signing_key_id(script.admin),
                     BUREAU_SIGNING_KEY=str(signing_path),
                     BUREAU_EPOCH_SECONDS=str(epoch_seconds), BUREAU_SEAL_INTERVAL="0.5")
    server = ServeProcess(env, home / "serve.log")
    out = Outcome()
    rnd = random.Random(seed)
    started = time.monotonic()
    # Spread the kills over the whole stream: each strikes a random moment after the
    # client got a randomly chosen batch acknowledged (tests.processes.ProgressKiller).
    targets = rnd.sample(range(1, len(script.batches)), min(kills, len(script.batches) - 1))
    killer = ProgressKiller(server, targets, rnd, max_delay=0.3, log=log)
    await server.start(timeout=60)

    async def client() -> None:
        async with aiohttp.ClientSession() as session:
            for n, batch in enumerate(script.batches):
                while True:
                    try:
                        results = await post_batch(session, server.url, batch, timeout=60)
                    except (aiohttp.ClientError, ConnectionError, TimeoutError):
                        out.resent_batches += 1
                        await asyncio.sleep(0.05)
                        continue  # no answer: send the very same envelopes again
                    for r in results:
                        assert r["status"] in ("accepted", "duplicate"), r
                        assert out.acknowledged.setdefault(r["id"], r["seq"]) == r["seq"], r
                    break
                await killer.reached(n + 1)
                if n % 10 == 0:
                    log(f"batch {n + 1}/{len(script.batches)}")
            await killer.settled()
            out.kills = killer.kills

    try:
        await client()
        last_seq = await _read_ledger(database_url, out)
        async with aiohttp.ClientSession() as session:
            out.reports = await _final_reports(session, server, last_seq, script.agents,
                                               timeout=30 + 10 * epoch_seconds)
    finally:
        server.stop()
    await _read_ledger(database_url, out)  # again: the seals appended while waiting
    verified = run_cli(env, "verify")
    out.verify_ok = verified.returncode == 0
    out.verify_output = (verified.stdout + verified.stderr).strip()
    out.seconds = time.monotonic() - started
    return out


def compare(crashed: Outcome, clean: Outcome, facts: int) -> list[str]:
    """Everything that differs from the soak's promises; empty when all hold."""
    problems = []
    for name, o in (("crash run", crashed), ("clean run", clean)):
        if o.lost:
            problems.append(f"{name}: {o.lost} acknowledged entries lost")
        if o.kinds.get("fact") != facts or o.kinds.get("attestation") != facts:
            problems.append(f"{name}: entry kinds {o.kinds}, expected {facts} of each")
        if o.distinct_content < 0:
            problems.append(f"{name}: an envelope was admitted twice")
        if not o.contiguous:
            problems.append(f"{name}: seqs are not contiguous")
        if not o.verify_ok:
            problems.append(f"{name}: bureau verify failed: {o.verify_output}")
    if crashed.payloads != clean.payloads:
        problems.append(f"entry payloads differ: {len(crashed.payloads ^ clean.payloads)}")
    for table in _TABLES:
        if crashed.tables[table] != clean.tables[table]:
            problems.append(f"derived table {table} differs")
    if crashed.reports != clean.reports:
        differing = [a for a in clean.reports if crashed.reports.get(a) != clean.reports[a]]
        problems.append(f"final reports differ for {len(differing)} agents")
    return problems
