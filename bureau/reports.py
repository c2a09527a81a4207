"""Bureau-signed reports and checkpoints (SPEC §8): build, sign, store, read.

For each sealed epoch, in order, :class:`ReportBuilder` brings its
:class:`~bureau.derive.Deriver` up to the seal's ``seq``, signs every agent's report
and the epoch's checkpoint with the bureau key, and stores them in one transaction
(the checkpoint row therefore also says "this epoch's reports are complete").

Every byte is a function of the entries: payloads are canonical JSON, Ed25519 is
deterministic, so any process (or ``bureau rebuild``) signing the same epoch writes the
same bytes, and ``ON CONFLICT DO NOTHING`` makes a second writer harmless.
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import gc
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import asyncpg
import nacl.signing

from bureau import metrics
from bureau.derive import Deriver
from bureau.derive_shards import ShardPool
from bureau.evidence import Item, decode_entry, load_evidence, read_items, seq_ref
from bureau.report_view import encode as encode_payload
from bureau.scoring import (
    EMPTY_EVIDENCE,
    build_report_payload,
    evaluator_table,
    policy_hash,
    policy_v1,
    split_by_agent,
)
from bureau.scoring.inputs import Exclusion
from reporters import wire

log = logging.getLogger(__name__)

REPORT_TYPE = wire.payload_type("report")
CHECKPOINT_TYPE = wire.payload_type("checkpoint")


# --------------------------------------------------------------------------- bytes


def _b64(data: bytes) -> bytes:
    return binascii.b2a_base64(data, newline=False)


def sign_payload_bytes(key: nacl.signing.SigningKey, kid: bytes, ptype: str,
                       body: bytes) -> bytes:
    """Canonical JSON of the DSSE envelope over ``body`` — the stored, served bytes.
    Equal to ``wire.canonical_json(wire.sign_envelope(key, ptype, body))`` (tested):
    every field is ASCII and the keys are already in sorted order."""
    sig = key.sign(wire.pae(ptype, body)).signature
    return (b'{"payload":"' + _b64(body) + b'","payloadType":"' + ptype.encode()
            + b'","signatures":[{"keyid":"' + kid + b'","sig":"' + _b64(sig) + b'"}]}')


def sign_many(key: nacl.signing.SigningKey, ptype: str, bodies: Sequence[bytes],
              pool: ThreadPoolExecutor | None = None) -> list[bytes]:
    """Sign ``bodies`` in order; libsodium releases the GIL, so threads use every core."""
    kid = wire.signing_key_id(key).encode()
    if pool is None or len(bodies) < 2000:
        return [sign_payload_bytes(key, kid, ptype, b) for b in bodies]
    step = -(-len(bodies) // 4)
    parts = pool.map(lambda i: [sign_payload_bytes(key, kid, ptype, b)
                                for b in bodies[i:i + step]], range(0, len(bodies), step))
    return [env for part in parts for env in part]


def checkpoint_payload(epoch: int, seq: int, head: str) -> dict[str, Any]:
    """SPEC §8. Seqs count from 1 with no gap, so ``entries`` (how many entries there
    are up to and including ``seq``) is ``seq`` itself."""
    return {"epoch": epoch, "seq": seq, "head": head, "entries": seq}


# --------------------------------------------------------------------------- deriving


@dataclass(frozen=True, slots=True)
class Seal:
    """A ``seal`` entry: epoch ``epoch`` covers every entry up to ``last_seq``."""

    epoch: int
    seq: int
    last_seq: int
    head: str


async def seals(conn: asyncpg.Connection, *, pending_only: bool = False) -> list[Seal]:
    rows = await conn.fetch(
        "SELECT s.epoch, s.seq, s.last_seq, s.head FROM seals s"
        + (" WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.epoch = s.epoch)"
           if pending_only else "") + " ORDER BY s.epoch")
    return [Seal(r["epoch"], r["seq"], r["last_seq"], r["head"]) for r in rows]


async def _targets(conn: asyncpg.Connection,
                   items: Iterable[tuple[int, Item]]) -> dict[str, tuple[int, Item | None]]:
    """The entries the exclusions in ``items`` name (by :func:`seq_ref`), decoded.
    Exclusions are rare; a target that is not an entry of this ledger names nothing."""
    seqs = sorted({int(i.target[1:]) for _, i in items
                   if isinstance(i, Exclusion) and i.target.startswith("#")})
    if not seqs:
        return {}
    rows = await conn.fetch("SELECT seq, kind, signer, entry FROM entries"
                            " WHERE seq = ANY($1::bigint[])", seqs)
    return {seq_ref(r["seq"]): (r["seq"], decode_entry(
        r["seq"], seq_ref(r["seq"]), r["kind"], r["signer"], r["entry"])) for r in rows}


async def _with_targets(conn: asyncpg.Connection, after: int, upto: int,
                        shard: tuple[int, int] | None,
                        ) -> AsyncIterator[tuple[list[tuple[int, Item]],
                                                 dict[str, tuple[int, Item | None]]]]:
    async for chunk in read_items(conn, after, upto, short_ids=True, shard=shard):
        yield chunk, await _targets(conn, chunk)


@contextlib.contextmanager
def long_lived_objects() -> Iterator[None]:
    """The deriver holds millions of long-lived objects: keep the cyclic collector from
    walking them over and over while they are made (it makes nothing cyclic), then
    freeze them out of every later collection."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        gc.freeze()


async def feed(conn: asyncpg.Connection, deriver: Deriver, upto: int, *,
               shard: tuple[int, int] | None = None) -> int:
    """Apply every entry after the deriver's seq up to ``upto`` (only those of one
    shard of the agents, with ``shard=(i, n)``); return how many evidence items that
    was. The caller settles.

    The next chunk is fetched (PostgreSQL decodes its payloads, in its own process)
    while this one is applied in a worker thread, and the event loop keeps serving."""
    count = 0
    with long_lived_objects():
        chunks = _with_targets(conn, deriver.seq, upto, shard)
        assert isinstance(chunks, AsyncGenerator)
        pending = asyncio.ensure_future(anext(chunks, None))
        try:
            while (got := await pending) is not None:
                pending = asyncio.ensure_future(anext(chunks, None))
                await asyncio.to_thread(deriver.apply, *got)
                count += len(got[0])
            deriver.seq = upto
        finally:
            if not pending.done():
                pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)
            await chunks.aclose()
    return count


async def advance(conn: asyncpg.Connection, deriver: Deriver, upto: int) -> int:
    """Feed the deriver everything up to ``upto`` and settle it."""
    count = await feed(conn, deriver, upto)
    with long_lived_objects():
        await asyncio.to_thread(deriver.settle)
    return count


def reference_payloads(ev_items: Any, epoch: int, seq: int,
                       head: str) -> list[tuple[str, dict[str, Any]]]:
    """The definition of an epoch's reports: the scoring library over the whole ledger
    up to the seal, as ``bureau.scoring`` documents. The deriver must equal it."""
    policy, phash = policy_v1(), policy_hash()
    evidence = ev_items.evidence()
    evaluators = evaluator_table(evidence, policy)
    split = split_by_agent(evidence)
    return [(agent, build_report_payload(
        agent, ev_items.names.get(agent), epoch, seq, head, policy, phash,
        split.get(agent, EMPTY_EVIDENCE), evaluators)) for agent in ev_items.agents()]


async def reference_reports(conn: asyncpg.Connection, seal: Seal) -> list[tuple[str, bytes]]:
    ev = await load_evidence(conn, seal.last_seq)
    return [(a, encode_payload(p))
            for a, p in reference_payloads(ev, seal.epoch, seal.last_seq, seal.head)]


# --------------------------------------------------------------------------- building


class ReportBuilder:
    """Builds and stores the reports of sealed epochs, in order, incrementally.

    With ``workers`` > 1 the deriving and signing happen in that many worker processes
    (:mod:`bureau.derive_shards`), which read the entries themselves from ``dsn``;
    otherwise in this process."""

    def __init__(self, signing_key: nacl.signing.SigningKey, *, workers: int = 1,
                 dsn: str | None = None) -> None:
        self.key = signing_key
        self.deriver = Deriver(policy_v1(), policy_hash())
        self._threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sign")
        self._shards: ShardPool | None = None
        if workers > 1:
            if dsn is None:
                raise ValueError("report workers read the entries themselves: give a dsn")
            self._shards = ShardPool(dsn, workers, signing_key)

    def worker_pids(self) -> list[int]:
        """The report worker processes, if any are running."""
        return [] if self._shards is None else self._shards.pids()

    def close(self) -> None:
        self._threads.shutdown(wait=False)
        if self._shards is not None:
            self._shards.close()

    def reset(self) -> None:
        self.deriver = Deriver(policy_v1(), policy_hash())
        if self._shards is not None:
            self._shards.reset()

    def _checkpoint(self, seal: Seal) -> bytes:
        cp = encode_payload(checkpoint_payload(seal.epoch, seal.last_seq, seal.head))
        return sign_many(self.key, CHECKPOINT_TYPE, [cp])[0]

    async def sign_epoch(self, conn: asyncpg.Connection,
                         seal: Seal) -> tuple[list[str], list[bytes], bytes]:
        """Agents, their signed report envelopes, and the checkpoint envelope."""
        checkpoint = self._checkpoint(seal)
        t0 = time.perf_counter()
        if self._shards is not None:
            agents, envelopes = await self._shards.sign_epoch(seal.last_seq, seal.epoch,
                                                              seal.head)
            log.info("epoch %d: derived and signed in %d processes in %.2f s", seal.epoch,
                     self._shards.shards, time.perf_counter() - t0)
            return agents, envelopes, checkpoint
        if self.deriver.seq > seal.last_seq:
            self.reset()  # epochs are only ever built in order; start again from 0
        await advance(conn, self.deriver, seal.last_seq)
        t1 = time.perf_counter()

        def sign() -> tuple[list[str], list[bytes], bytes]:
            agents, bodies = [], []
            for agent, body in self.deriver.payloads(seal.epoch, seal.last_seq, seal.head):
                agents.append(agent)
                bodies.append(body)
            t2 = time.perf_counter()
            envelopes = sign_many(self.key, REPORT_TYPE, bodies, self._threads)
            log.info("epoch %d: derive %.2f s, payloads %.2f s, sign %.2f s", seal.epoch,
                     t1 - t0, t2 - t1, time.perf_counter() - t2)
            return agents, envelopes, checkpoint

        return await asyncio.to_thread(sign)

    async def build(self, conn: asyncpg.Connection, seal: Seal) -> int:
        """Build and store one sealed epoch; return the number of reports."""
        start = time.perf_counter()
        if self._shards is not None:
            # The workers insert the reports; the checkpoint, last, makes them visible.
            count = await self._shards.store_epoch(seal.last_seq, seal.epoch, seal.head)
            await conn.execute("INSERT INTO checkpoints (epoch, envelope) VALUES ($1, $2)"
                               " ON CONFLICT DO NOTHING", seal.epoch, self._checkpoint(seal))
        else:
            agents, envelopes, checkpoint = await self.sign_epoch(conn, seal)
            count = len(agents)
            try:
                async with conn.transaction():
                    await store_epoch(conn, seal.epoch, agents, envelopes, checkpoint)
            except asyncpg.UniqueViolationError:
                log.info("epoch %d: already stored by another writer", seal.epoch)
        elapsed = time.perf_counter() - start
        metrics.REPORT_BUILD_SECONDS.observe(elapsed)
        log.info("epoch %d: %d reports signed and stored in %.2f s", seal.epoch, count,
                 elapsed)
        return count

    async def build_pending(self, conn: asyncpg.Connection) -> list[int]:
        """Build every sealed epoch that has no checkpoint yet, oldest first."""
        built = []
        for seal in await seals(conn, pending_only=True):
            await self.build(conn, seal)
            built.append(seal.epoch)
        return built


async def store_epoch(conn: asyncpg.Connection, epoch: int, agents: list[str],
                      envelopes: list[bytes], checkpoint: bytes) -> None:
    """Write one epoch's reports (COPY: the fastest way in) and then its checkpoint.
    If another writer stored this epoch first, COPY fails on the primary key and the
    caller's transaction rolls back: that writer's bytes are the same bytes."""
    await conn.copy_records_to_table(
        "reports", records=[(a, epoch, e) for a, e in zip(agents, envelopes, strict=True)],
        columns=("agent", "epoch", "envelope"))
    await conn.execute("INSERT INTO checkpoints (epoch, envelope) VALUES ($1, $2)"
                       " ON CONFLICT DO NOTHING", epoch, checkpoint)


async def insert_reports(conn: asyncpg.Connection, epoch: int, agents: list[str],
                         envelopes: list[bytes]) -> None:
    """Write some of one epoch's reports, in a transaction of their own, by a report
    worker (bureau.derive_shards). A report already there (a build that died before
    its checkpoint, or another writer) is the same bytes: it is left as it is."""
    await conn.execute(
        "INSERT INTO reports (agent, epoch, envelope) SELECT a, $2, e"
        " FROM unnest($1::text[], $3::bytea[]) AS t(a, e) ON CONFLICT DO NOTHING",
        agents, epoch, envelopes)


# --------------------------------------------------------------------------- reading


async def latest_epoch(conn: asyncpg.Connection) -> int | None:
    """The latest epoch whose reports are complete (it has a checkpoint)."""
    value: int | None = await conn.fetchval("SELECT max(epoch) FROM checkpoints")
    return value


async def report_envelope(conn: asyncpg.Connection, agent: str,
                          epoch: int | None) -> bytes | None:
    if epoch is None:
        row = await conn.fetchrow(
            "SELECT r.envelope FROM reports r WHERE r.agent = $1"
            " AND r.epoch = (SELECT max(epoch) FROM checkpoints)", agent)
    else:
        row = await conn.fetchrow(
            "SELECT r.envelope FROM reports r JOIN checkpoints c USING (epoch)"
            " WHERE r.agent = $1 AND r.epoch = $2", agent, epoch)
    return None if row is None else bytes(row["envelope"])


async def checkpoint_envelope(conn: asyncpg.Connection, epoch: int | None) -> bytes | None:
    if epoch is None:
        row = await conn.fetchrow(
            "SELECT envelope FROM checkpoints ORDER BY epoch DESC LIMIT 1")
    else:
        row = await conn.fetchrow("SELECT envelope FROM checkpoints WHERE epoch = $1", epoch)
    return None if row is None else bytes(row["envelope"])


def render_report(envelope: bytes) -> str:
    """A report envelope, for people (``bureau report``)."""
    env = json.loads(envelope)
    p = json.loads(binascii.a2b_base64(env["payload"]))
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    def counts(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items() if v) or "none"

    lines = [f"agent      {p['agent']}" + (f"  ({p['name']})" if p["name"] else ""),
             f"epoch      {p['epoch']}   ledger seq {p['ledger']['seq']}  head "
             f"{p['ledger']['head']}",
             f"signed by  {env['signatures'][0]['keyid']}   policy {p['policy']}"]
    s = p["score"]
    if s is None:
        why = "nothing scored yet" if not any(p["outcomes"].values()) else \
            "every scored outcome came from an evaluator of weight 0"
        lines.append(f"score      none ({why})")
    else:
        lines.append(f"score      {s['value']:.6f}  (95% interval {s['low']:.6f} .. "
                     f"{s['high']:.6f}; weight {s['weight']} over {s['interactions']} "
                     f"interactions; {pct(p['value_judgment_share'])} from value judgments)")
    r = p["reliability"]
    lines += [f"outcomes   {counts(p['outcomes'])}",
              f"unscored   {counts(p['unscored'])}",
              f"reliability observed {r['observed']}, answered {pct(r['answer_rate'])}, "
              f"well-formed {pct(r['well_formed_rate'])}, latency p50 "
              f"{r['latency_ms']['p50']} ms, p95 {r['latency_ms']['p95']} ms"]
    for promise, kb in r["promises"].items():
        lines.append(f"promise    {promise}: kept {kb['kept']}, broken {kb['broken']}")
    lines += [f"probes     passed {p['probes']['passed']}, failed {p['probes']['failed']}",
              f"excluded   self-dealing {p['excluded']['self_dealing']}, disputed "
              f"{p['excluded']['disputed']}"]
    return "\n".join(lines)
