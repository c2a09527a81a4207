"""Sealing and report building at scale (docs/epochs-and-reports.md, "Performance").

Seeds a ledger straight into PostgreSQL — real signed envelopes (``wire.sign_payload``),
chained by the ledger's own ``GroupTx.append`` and written by its own ``flush`` (COPY),
index rows and all — then measures, in this process:

1. the first seal of a ledger of N entries and every report of that epoch, from cold
   (target: <= 30 s at 1,000,000 entries over ~10,000 agents and ~2,000 evaluators);
2. M more entries in the next epoch, then its seal and every report, incrementally
   (target: <= 2 s for 10,000 entries);
3. peak RSS of this process and of each report worker process (target: < 1 GiB each).
   Seeding runs in child processes so that their memory is not counted.

    python bench/seal_bench.py [--entries 1000000] [--new 10000] [--agents 10000]
        [--evaluators 2000] [--workers 2] [--report-workers N] [--policy v1|v2]
        [--switch-policy] [--check] [--database-url URL]

``--policy`` is what the ledger's genesis entry names (default: the bureau's default);
``--switch-policy`` adds an admin ``policy`` entry so that the second epoch is scored by
the other policy, which the builder derives from entry 1 again.
A tenth of the probes are recorded after the caller's attestation, so that under v2
some evaluators are graded blind.

``--check`` re-derives the second epoch from cold and compares every report byte.

``--pool UNITS`` (default 1000; 0: none) writes an admin ``pool`` entry before the
evidence, so both epochs are settled (SPEC §8.2) by the report builder after their
reports; the settlement's own time (``bureau_settlement_seconds``) is printed beside the
seal's, with its share of the seal and build (target: at most 5 %).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import multiprocessing
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import blake3
import nacl.signing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import REGISTRY

from bureau.config import Config, default_report_workers
from bureau.intake.chaining import GroupTx, Indexed
from bureau.intake.clock import epoch_of
from bureau.intake.committer import Committer
from bureau.intake.flush import flush
from bureau.intake.links import is_favourable
from bureau.intake.state import FIRST, ChainTip, GroupState
from bureau.kinds import GENESIS
from bureau.scoring.policy import DEFAULT_POLICY_NAME, KNOWN_POLICIES, policy_hash
from bureau.storage import db
from bureau.storage.reports import seals
from bureau.transparency.heads import LogKey
from bureau.views.builder import ReportBuilder
from bureau.views.seal import seal_elapsed
from reporters import wire
from reporters.models import parse_timestamp

EPOCH_SECONDS = 21600
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)  # the start of the seeded epoch
REPORTERS = 20
CHUNK = 20_000  # entries a worker signs, and a GroupTx chains, at a time

Row = tuple[str, bytes, str, str | None, str, tuple[Any, ...]]  # kind, env, signer, ...


def key(kind: str, i: int) -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey(blake3.blake3(f"{kind}-{i}".encode()).digest())


class World:
    """Keys and per-evaluator habits, the same in every worker (derived from seeds)."""

    def __init__(self, agents: int, evaluators: int) -> None:
        self.reporters = [key("reporter", i) for i in range(REPORTERS)]
        self.rep_ids = [wire.signing_key_id(k) for k in self.reporters]
        self.evaluators = [key("evaluator", i) for i in range(evaluators)]
        self.eval_ids = [wire.signing_key_id(k) for k in self.evaluators]
        self.agent_ids = [wire.signing_key_id(key("agent", i)) for i in range(agents)]
        # accuracy per evaluator: some careful, some random, a few constant raters
        rnd = random.Random(7)
        self.accuracy = [rnd.choice([0.95, 0.9, 0.8, 0.6, 0.5, -1.0]) for _ in self.evaluators]


_world: World | None = None


def _init(agents: int, evaluators: int) -> None:
    global _world
    _world = World(agents, evaluators)


def _signed(k: nacl.signing.SigningKey, name: str, payload: dict[str, Any]) -> tuple[bytes, str]:
    env = wire.sign_payload(k, name, payload)
    kid = env["signatures"][0]["keyid"]
    ptype = wire.payload_type(name)
    canon = wire.envelope_canonical(ptype, env["payload"], kid, env["signatures"][0]["sig"])
    return canon, wire.content_key(kid, ptype, wire.canonical_json(payload))


def make_chunk(spec: tuple[int, int, str]) -> list[Row]:
    """``count`` evidence entries for chunk ``index``: facts, attestations by the caller,
    probes, over random agents. Deterministic in ``(index, tag)``."""
    index, count, tag = spec
    w = _world
    assert w is not None
    rnd = random.Random(f"{tag}-{index}")
    rows: list[Row] = []
    n = 0
    while len(rows) < count:
        n += 1
        r = rnd.randrange(REPORTERS)
        subject = rnd.choice(w.agent_ids)
        e = rnd.randrange(len(w.evaluators))
        ia = f"{tag}{index}-{n}"
        check = rnd.choice(["PASS", "PASS", "FAIL", None, None, None])
        fact = {"interaction": ia, "subject": subject, "caller": w.eval_ids[e],
                "observed_at": "2026-11-01T00:00:00Z", "answered": rnd.random() < 0.97,
                "latency_ms": rnd.randrange(20, 4000), "well_formed": rnd.random() < 0.95,
                "promises": [{"promise": "p95-under-2s", "kept": rnd.random() < 0.9}],
                "claimed": rnd.choice([None, "SUCCESS", "SUCCESS", "FAILURE"]),
                "check": check, "derived": None, "engagement": None}
        env, ck = _signed(w.reporters[r], "fact", fact)
        rows.append(("fact", env, w.rep_ids[r], subject, ck,
                     (w.rep_ids[r], ia, subject, w.eval_ids[e], None)))
        passed = rnd.random() < 0.7 if check is None else check == "PASS"
        probed = rnd.random() < 0.15
        probe_row: Row | None = None
        if probed:
            probe = {"interaction": ia, "subject": subject, "probe": "kat-1",
                     "passed": passed, "observed_at": "2026-11-01T00:00:00Z"}
            env, ck = _signed(w.reporters[r], "probe", probe)
            probe_row = ("probe", env, w.rep_ids[r], subject, ck, (w.rep_ids[r], ia, subject))
            blind = rnd.random() < 0.1  # recorded after the attestation, if any
            if not blind:
                rows.append(probe_row)
                probe_row = None
        if rnd.random() < 0.6:
            acc = w.accuracy[e]
            right = acc < 0 or rnd.random() < acc
            says_pass = True if acc < 0 else (passed if right else not passed)
            outcome = rnd.choice(["ACCEPTED", "ACCEPTED_AFTER_CORRECTIONS"]) if says_pass \
                else rnd.choice(["FAILED_ADMITTED", "FAILED_DISCOVERED"])
            att = {"reporter": w.rep_ids[r], "interaction": ia, "subject": subject,
                   "outcome": outcome,
                   "corrections": 1 if outcome == "ACCEPTED_AFTER_CORRECTIONS" else 0}
            env, ck = _signed(w.evaluators[e], "attestation", att)
            rows.append(("attestation", env, w.eval_ids[e], subject, ck,
                         (w.rep_ids[r], ia, subject, is_favourable("attestation", outcome))))
        if probe_row is not None:
            rows.append(probe_row)
    return rows[:count]


def parties(agents: int, evaluators: int, admin: nacl.signing.SigningKey) -> list[Row]:
    """Reporter registrations and every enrollment."""
    rows: list[Row] = []
    for i in range(REPORTERS):
        kid = wire.signing_key_id(key("reporter", i))
        body: dict[str, Any] = {"reporter": kid, "name": f"gw-{i}",
                                "operator": f"gateway {i}", "roles": ["facts", "probes"],
                                "issued_at": "2026-01-01T00:00:00Z", "distrusted_from": None}
        env, ck = _signed(admin, "reporter", body)
        rows.append(("reporter", env, wire.signing_key_id(admin), None, ck, (kid, body)))
    for kind, n in (("agent", agents), ("evaluator", evaluators)):
        for i in range(n):
            k = key(kind, i)
            body = {
                "name": f"{kind} {i}", "anchor": {"kind": "domain", "value": f"{kind}{i}.example"},
                "operator": f"{kind} operator {i}", "promises": []}
            env, ck = _signed(k, "enrollment", body)
            kid = wire.signing_key_id(k)
            rows.append(("enrollment", env, kid, kid, ck, (body,)))
    return rows


async def write_rows(conn: asyncpg.Connection, rows: list[Row], at: dt.datetime) -> None:
    """Chain ``rows`` after the head with the ledger's own GroupTx, index rows included,
    and flush them (COPY) in one transaction."""
    async with conn.transaction():
        head = await conn.fetchrow("SELECT seq, head FROM ledger_head FOR UPDATE")
        tx = GroupTx(conn, GroupState(frozenset()), ChainTip(head["seq"], head["head"], None),
                     at, EPOCH_SECONDS)
        w = tx.writes
        for kind, env, signer, subject, ck, extra in rows:
            entry_id, seq = tx.append(kind, envelope=env,
                                      indexed=Indexed(signer, subject, ck))
            if kind == "fact":
                rep, ia, subj, caller, eng = extra
                w.facts.append((rep, ia, seq, ck, subj, caller, eng))
            elif kind == "probe":
                w.probes.append((extra[0], extra[1], seq, ck, extra[2]))
            elif kind == "attestation":
                w.verdicts.append((seq, entry_id, kind, signer, extra[0], extra[1], extra[2],
                                   ck, extra[3]))
            elif kind == "reporter":
                kid, body = extra
                w.reporters.append((kid, body["name"], body["operator"], body["roles"],
                                    parse_timestamp(body["issued_at"]), None, seq))
            elif kind == "policy":
                body = extra[0]
                w.policies.append((seq, body["policy"], body["from_epoch"],
                                   parse_timestamp(body["issued_at"])))
            elif kind == "pool":
                body = extra[0]
                w.pools.append((seq, body["units"], body["from_epoch"],
                                parse_timestamp(body["issued_at"])))
            elif kind == "enrollment":
                body = extra[0]
                w.agents.append((signer, body["name"], body["operator"], "domain",
                                 body["anchor"]["value"], False, None, seq))
        await flush(tx)


async def write_genesis(conn: asyncpg.Connection, policy: str, at: dt.datetime) -> None:
    """Entry 1: the ledger's settings, as the bureau writes them (bureau.intake.genesis)."""
    async with conn.transaction():
        tx = GroupTx(conn, GroupState(frozenset()), FIRST, at, EPOCH_SECONDS)
        tx.append(GENESIS.name, body={"policy": policy_hash(KNOWN_POLICIES[policy]),
                                      "epoch_seconds": EPOCH_SECONDS, "origin": "seal-bench"})
        await flush(tx)


async def seed(url: str, total: int, agents: int, evaluators: int, workers: int,
               tag: str, at: dt.datetime, with_parties: bool, policy: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        if with_parties:
            await write_genesis(conn, policy, at)
            await write_rows(conn, parties(agents, evaluators, key("admin", 0)), at)
            total -= 1 + REPORTERS + agents + evaluators
        specs = [(i, min(CHUNK, total - i * CHUNK), tag) for i in range(-(-total // CHUNK))]
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers, initializer=_init, initargs=(agents, evaluators)) as pool:
            done = 0
            for rows in pool.imap(make_chunk, specs):
                await write_rows(conn, rows, at)
                done += len(rows)
                print(f"\r  seeded {done:,}/{total:,}", end="", flush=True)
        print()
    finally:
        await conn.close()


def seed_in_child(*args: Any) -> None:
    """Seed from a child process: its memory must not count against the measurement."""
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_seed_main, args=args)
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise SystemExit(f"seeding failed ({proc.exitcode})")


def _seed_main(*args: Any) -> None:
    asyncio.run(seed(*args))


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_mib(pid: int) -> float:
    """A live process's peak resident set (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """A live process's CPU time so far (user and system), in seconds: what the report
    workers spend, which the load of other work on a shared machine does not stretch."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def seal_and_build(url: str, builder: ReportBuilder, now: dt.datetime) -> tuple[float,
                                                                                     float, int]:
    pool = await db.create_pool(url, min_size=1, max_size=2)
    ledger = Committer(url, Config(epoch_seconds=EPOCH_SECONDS), clock=lambda: now)
    await ledger.start()
    try:
        start, cpu = time.perf_counter(), time.process_time()
        workers = {pid: cpu_seconds(pid) for pid in builder.worker_pids()}
        sealed = await ledger.run_locked(seal_elapsed)
        t_seal = time.perf_counter() - start
        async with pool.acquire() as conn:
            built = await builder.build_pending(conn)
            reports = await conn.fetchval("SELECT count(*) FROM reports WHERE epoch = ANY($1)",
                                          built)
        t_all = time.perf_counter() - start
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        used = sum(cpu_seconds(pid) - workers.get(pid, 0.0) for pid in builder.worker_pids())
        print(f"  sealed {sealed}, built {built}: {reports:,} reports; this process used "
              f"{time.process_time() - cpu:.2f} s of CPU, the report workers {used:.2f} s; "
              f"load average {load} on {os.cpu_count()} CPUs")
        return t_seal, t_all, reports
    finally:
        await ledger.stop()
        await pool.close()


async def check(url: str, builder: ReportBuilder) -> None:
    """Re-derive the latest epoch from cold and compare every report byte."""
    cold = ReportBuilder(builder.key, builder.log_key)
    conn = await asyncpg.connect(url)
    try:
        seal = (await seals(conn))[-1]
        agents, envelopes, _ = await cold.sign_epoch(conn, seal)
        stored = {r["agent"]: bytes(r["envelope"]) for r in await conn.fetch(
            "SELECT agent, envelope FROM reports WHERE epoch = $1", seal.epoch)}
        same = all(stored.get(a) == e for a, e in zip(agents, envelopes, strict=True))
        print(f"  check: cold re-derivation of epoch {seal.epoch}: "
              f"{'identical' if same and len(stored) == len(agents) else 'DIFFERENT'}")
    finally:
        cold.close()
        await conn.close()


def settlement_seconds() -> float:
    """Seconds this process has spent settling pools so far (the service's metric)."""
    return REGISTRY.get_sample_value("bureau_settlement_seconds_sum") or 0.0


def print_settlement(seconds: float, total: float, pool: int) -> None:
    if pool:
        print(f"   settlement of the pool {seconds:.3f} s = {seconds / total:.1%} of the seal "
              f"and build   (target <= 5 %)")


async def write_pool(url: str, units: int, epoch: int) -> None:
    """An admin ``pool`` entry: ``units`` for ``epoch`` and later."""
    admin = key("admin", 0)
    body = {"units": units, "from_epoch": epoch, "issued_at": "2026-11-01T00:00:00Z"}
    env, ck = _signed(admin, "pool", body)
    conn = await asyncpg.connect(url)
    try:
        await write_rows(conn, [("pool", env, wire.signing_key_id(admin), None, ck, (body,))],
                         T0 + dt.timedelta(seconds=1))
    finally:
        await conn.close()


async def measure(url: str, args: argparse.Namespace) -> None:
    signing = key("bureau", 0)
    builder = ReportBuilder(signing, LogKey.of("bureau-seal-bench", signing),
                            workers=args.report_workers, dsn=url)
    print(f"report workers: {args.report_workers}; policy {args.policy}")
    e0 = epoch_of(T0, EPOCH_SECONDS)
    print(f"1. first seal of {args.entries:,} entries and every report (cold)")
    settled = settlement_seconds()
    t_seal, t1, n1 = await seal_and_build(
        url, builder, T0 + dt.timedelta(seconds=EPOCH_SECONDS + 1))
    print(f"   seal {t_seal:.2f} s; seal + {n1:,} reports {t1:.2f} s   (target <= 30 s)")
    print_settlement(settlement_seconds() - settled, t1, args.pool)
    print(f"   peak RSS so far {rss_mib():.0f} MiB")
    if args.switch_policy:
        other = "v1" if args.policy == "v2" else "v2"
        body = {"policy": policy_hash(KNOWN_POLICIES[other]), "from_epoch": e0 + 1,
                "issued_at": "2026-11-01T06:00:01Z"}
        admin = key("admin", 0)
        env, ck = _signed(admin, "policy", body)
        conn = await asyncpg.connect(url)
        try:
            await write_rows(conn, [("policy", env, wire.signing_key_id(admin), None, ck,
                                     (body,))], T0 + dt.timedelta(seconds=EPOCH_SECONDS + 1))
        finally:
            await conn.close()
        print(f"   a policy entry: epoch {e0 + 1} on is scored by {other}")
    print(f"2. {args.new:,} new entries in epoch {e0 + 1}, seeded")
    seed_in_child(url, args.new, args.agents, args.evaluators, args.workers, "new",
                  T0 + dt.timedelta(seconds=EPOCH_SECONDS + 2), False, args.policy)
    settled = settlement_seconds()
    t_seal, t2, n2 = await seal_and_build(
        url, builder, T0 + dt.timedelta(seconds=2 * EPOCH_SECONDS + 1))
    print(f"   seal {t_seal:.2f} s; seal + {n2:,} reports {t2:.2f} s   (target <= 2 s)")
    print_settlement(settlement_seconds() - settled, t2, args.pool)
    ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"3. peak RSS (ru_maxrss) {ru:,} KiB = {ru / 1024:.0f} MiB   (target < 1024 MiB)")
    for pid in builder.worker_pids():
        print(f"   report worker {pid}: peak RSS {peak_mib(pid):.0f} MiB   (target < 1024 MiB)")
    if args.check:
        await check(url, builder)
    builder.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--new", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--evaluators", type=int, default=2_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--report-workers", type=int, default=default_report_workers(),
                        help="processes deriving and signing reports (as serve's flag)")
    parser.add_argument("--policy", choices=sorted(KNOWN_POLICIES), default=DEFAULT_POLICY_NAME,
                        help="the policy the ledger's genesis entry names")
    parser.add_argument("--pool", type=int, default=1000,
                        help="the evaluators' pool of both epochs, in units (0: none)")
    parser.add_argument("--switch-policy", action="store_true",
                        help="the second epoch is scored by the other policy (a cold "
                        "derivation: what a policy change costs)")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--database-url", default=os.environ.get("BUREAU_DATABASE_URL"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="seal-bench-") as tmp:
        server = None
        if args.database_url:
            url = args.database_url
        else:
            import pgserver

            pgdata = Path(tmp) / "pgdata"
            server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
            url = server.get_uri()

        async def prepare() -> None:
            conn = await asyncpg.connect(url)
            try:
                await db.migrate(conn)
                if await conn.fetchval("SELECT seq FROM ledger_head") != 0:
                    raise SystemExit("the database is not empty: give the bench a fresh one")
            finally:
                await conn.close()

        asyncio.run(prepare())
        start = time.perf_counter()
        print(f"seeding {args.entries:,} entries ({args.agents:,} agents, "
              f"{args.evaluators:,} evaluators, {args.workers} workers)")
        seed_in_child(url, args.entries, args.agents, args.evaluators, args.workers, "s",
                      T0 + dt.timedelta(seconds=1), True, args.policy)
        print(f"  seeded in {time.perf_counter() - start:.0f} s")
        if args.pool:
            asyncio.run(write_pool(url, args.pool, epoch_of(T0, EPOCH_SECONDS)))
        asyncio.run(measure(url, args))
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
