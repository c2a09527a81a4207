"""One pass of the static mirror, and the task of ``bureau serve --mirror DIR``.

A pass (:meth:`Mirror.sync`), in the order that keeps what a reader sees whole:

1. the tiles the latest published head has that the mirror's ``checkpoint`` did not
   (full tiles once), then — after a durability barrier — the ``checkpoint`` itself,
   with its cosignatures, then the partial tiles of tiles now full are removed;
2. each published epoch after the mirror's ``v1/checkpoints/latest`` that the head of
   step 1 holds (one sealed since waits for the next pass), oldest first: the
   partial tiles of its tree (a reader proves the epoch's head in it), its checkpoint,
   note and settlement, every agent's report, proof bundle and card; for the newest,
   the paths of the latest and the agents' pages too;
3. for the last :data:`REFRESHED` epochs written before, the bundles and cards again
   when their log proof improved (a witness cosigned a head since);
4. ``/v1/bureau``, the policies and the home page, and the state (``.mirror/``: the
   log proof each recent epoch was written with); then, after a barrier,
   ``v1/checkpoints/latest``: a reader that finds epoch ``E`` there finds all of ``E``.

Where the mirror stands is read from its own files (the ``checkpoint``'s size and
``v1/checkpoints/latest``'s epoch), so a pass killed at any point is resumed by the
next, which writes again what the killed one had not got to saying was done. A mirror
of another log, or one ahead of the ledger (a restore that lost published entries), is
refused. Reads only, and never the ledger's lock.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bureau import metrics
from bureau.background import Leadership, cancelled, every
from bureau.errors import InternalError
from bureau.mirror.documents import (
    AgentWrites,
    Site,
    log_digest,
    write_agents,
    write_bureau,
    write_epoch_records,
)
from bureau.mirror.files import CannotWrite, MirrorDir
from bureau.mirror.tiles import prune_partials, sync_edge, sync_tiles
from bureau.reads.portable import epoch_proof
from bureau.storage import db
from bureau.storage import mirror as mirror_store
from bureau.storage.reports import checkpoint_envelope, published_seal
from bureau.transparency import heads
from bureau.transparency.heads import Head
from reporters import layout, strictjson, wire
from reporters.tlog.checkpoint import Checkpoint
from reporters.tlog.errors import TlogError
from reporters.tlog.note import parse_note

log = logging.getLogger(__name__)

#: the latest epochs whose bundles and cards are written again when their log proof
#: improves (a witness cosigned a later head)
REFRESHED = 3
STATE = ".mirror/state.json"
#: pg advisory lock held by the one process that writes the static mirror
MIRROR_LOCK = 0x6275726561750005


class MirrorRefused(InternalError):
    """The directory is not a mirror of this ledger as it is (``str()`` says why)."""


@dataclass
class PassResult:
    """What one pass wrote: the tree size and the epochs now mirrored, the files."""

    size: int
    epochs: list[int] = field(default_factory=list)
    refreshed: list[int] = field(default_factory=list)
    agents: int = 0
    files: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


class Mirror:
    """The mirror at ``root`` of the ledger behind the connections given to
    :meth:`sync`."""

    def __init__(self, root: Path, site: Site,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.dir = MirrorDir(root)
        self.site = site
        self.clock = clock

    def mirrored_size(self) -> int:
        """The size of the mirror's ``checkpoint`` (0: none yet), which must be of this
        log."""
        note = self.dir.read(layout.CHECKPOINT)
        if note is None:
            return 0
        try:
            checkpoint = Checkpoint.parse(parse_note(note).text)
        except TlogError as exc:
            raise MirrorRefused(f"{self.dir.root}/checkpoint is not a checkpoint note "
                                f"({exc.detail}): not a mirror") from None
        if checkpoint.origin != self.site.origin:
            raise MirrorRefused(f"{self.dir.root} mirrors the log {checkpoint.origin!r}, "
                                f"not this ledger's {self.site.origin!r}")
        return checkpoint.size

    def mirrored_epoch(self) -> int | None:
        """The epoch of the mirror's ``v1/checkpoints/latest`` (None: none yet)."""
        envelope = self.dir.read(layout.LATEST_CHECKPOINT)
        if envelope is None:
            return None
        try:
            payload = strictjson.loads(wire.b64decode_canonical(
                strictjson.loads(envelope)["payload"]))
            return int(payload["epoch"])
        except (strictjson.StrictJSONError, wire.WireError, KeyError, TypeError,
                ValueError):
            raise MirrorRefused(f"{self.dir.root}/{layout.LATEST_CHECKPOINT} is not a "
                                "signed checkpoint: not a mirror") from None

    def logs(self) -> dict[str, str]:
        """Epoch -> the log proof its bundles and cards were written with (the state the
        mirror keeps in ``.mirror/state.json``), for the latest epochs written; none when
        the state is missing or unreadable (it only saves rewriting what is current)."""
        try:
            raw = self.dir.read(STATE)
            logs = json.loads(raw)["logs"] if raw else {}
        except (OSError, ValueError, KeyError, TypeError):
            logs = {}
        return {str(k): str(v) for k, v in logs.items()} if isinstance(logs, dict) else {}

    async def _tiles(self, conn: db.Connection, head: Head) -> None:
        done = self.mirrored_size()
        if head.size < done:
            raise MirrorRefused(f"the mirror's checkpoint has size {done}, the ledger's "
                                f"latest published head {head.size}: heads only grow "
                                "(a restore that lost entries? docs/runbook.md)")
        if head.size == done and self.dir.read(layout.CHECKPOINT) == head.served.encode():
            return
        completed = await sync_tiles(conn, self.dir, done, head.size)
        await asyncio.to_thread(self.dir.barrier)
        await self.dir.run([(self.dir.write, layout.CHECKPOINT, head.served.encode())])
        await prune_partials(self.dir, completed)

    async def _epochs(self, conn: db.Connection, logs: dict[str, str], out: PassResult,
                      now: dt.datetime) -> None:
        # only epochs the tree just written holds: one sealed since the pass read its
        # head waits for the next pass, or a reader would find the latest epoch past
        # the mirror's checkpoint (a rewound tree, to bureau-check) and its tiles absent
        seals = [s for s in await mirror_store.seals_after(conn, self.mirrored_epoch())
                 if s.last_seq <= out.size]
        for seal in seals:
            await sync_edge(conn, self.dir, seal.last_seq, self.mirrored_size())
            await write_epoch_records(conn, self.dir, seal)
            shared = await epoch_proof(conn, seal, self.site.origin)
            assert shared is not None, "a published epoch"
            out.agents += await write_agents(conn, self.dir, shared, self.site, AgentWrites(
                reports=True, latest=seal is seals[-1], now=now))
            logs[str(seal.epoch)] = log_digest(shared)
            out.epochs.append(seal.epoch)

    async def _refresh(self, conn: db.Connection, logs: dict[str, str],
                       now: dt.datetime) -> list[int]:
        newest = self.mirrored_epoch()
        done = []
        for epoch in sorted((int(e) for e in logs), reverse=True)[:REFRESHED]:
            seal = await published_seal(conn, epoch)
            shared = None if seal is None else await epoch_proof(conn, seal, self.site.origin)
            if shared is None or log_digest(shared) == logs[str(epoch)]:
                continue
            await write_agents(conn, self.dir, shared, self.site,
                               AgentWrites(reports=False, latest=epoch == newest, now=now))
            logs[str(epoch)] = log_digest(shared)
            done.append(epoch)
        return done

    async def sync(self, conn: db.Connection) -> PassResult:
        """One pass (the module's docstring); what it wrote."""
        await asyncio.to_thread(self.dir.prepare)
        written, now = self.dir.written, self.clock()
        head = await heads.latest(conn)
        if head is None:
            raise MirrorRefused("the ledger has published no tree head yet")
        out = PassResult(head.size)
        t0 = time.perf_counter()
        await self._tiles(conn, head)
        t1 = time.perf_counter()
        logs = self.logs()
        out.refreshed = await self._refresh(conn, logs, now)
        await self._epochs(conn, logs, out, now)
        t2 = time.perf_counter()
        await write_bureau(conn, self.dir, self.site, now, home=bool(out.epochs))
        # the state before the latest: a pass that ends between them has an epoch to
        # refresh that it writes again anyway, never a mirrored one it will not refresh
        recent = sorted(logs, key=int)[-2 * REFRESHED:]
        await self.dir.run([(self.dir.write, STATE, json.dumps(
            {"logs": {e: logs[e] for e in recent}}).encode())])
        if out.epochs:
            await asyncio.to_thread(self.dir.barrier)
            envelope = await checkpoint_envelope(conn, out.epochs[-1])
            assert envelope is not None, "a published epoch"
            await self.dir.run([(self.dir.write, layout.LATEST_CHECKPOINT, envelope)])
        out.files = self.dir.written - written
        out.seconds = {"tiles": t1 - t0, "epochs": t2 - t1,
                       "bureau": time.perf_counter() - t2}
        metrics.MIRROR_FILES.inc(out.files)
        metrics.MIRROR_TREE_SIZE.set(head.size)
        if out.epochs:
            metrics.MIRROR_EPOCH.set(out.epochs[-1])
        await asyncio.to_thread(self.dir.done)
        return out

    def close(self) -> None:
        self.dir.close()


class MirrorTask:
    """``bureau serve --mirror DIR``: one elected process (an advisory lock, as the
    publisher's) looks every ``interval`` seconds whether a head, a cosignature or an
    epoch was published since its last pass, and if so runs one."""

    def __init__(self, pool: db.Pool, mirror: Mirror, interval: float = 0.5) -> None:
        self.pool = pool
        self.mirror = mirror
        self.interval = interval
        self._leader = Leadership(pool, MIRROR_LOCK, "writes the static mirror", "mirror")
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._seen: mirror_store.Published | None = None
        self._refused: str | None = None  # said once, not every tick
        self.passes = 0

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="static mirror")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancelled(task)
        await self._leader.resign()
        self.mirror.close()

    async def tick(self) -> PassResult | None:
        """A pass if this process leads and something was published since the last."""
        conn = await self._leader.connection()
        if conn is None:
            return None
        oldest = await _oldest_refreshed(conn, self.mirror)
        seen = await mirror_store.published(conn, oldest)
        if seen == self._seen:
            return None
        start = time.perf_counter()
        try:
            result = await self.mirror.sync(conn)
        except (MirrorRefused, CannotWrite) as exc:
            said = exc.reason if isinstance(exc, CannotWrite) else str(exc)
            if said != self._refused:  # a full disk fails on another file each tick
                log.error("NOT MIRRORING: %s", exc)
                self._refused = said
            return None
        self._refused = None
        metrics.MIRROR_PASS_SECONDS.observe(time.perf_counter() - start)
        self._seen = seen
        self.passes += 1
        if result.epochs or result.files > 2:
            log.info("mirror: size %d, epochs %s, %d agents, %d files in %.2f s",
                     result.size, result.epochs, result.agents, result.files,
                     time.perf_counter() - start)
        return result

    async def _run(self) -> None:
        await every(self.interval, self._wake, lambda _: self.tick(), "mirror")


async def _oldest_refreshed(conn: db.Connection, mirror: Mirror) -> int:
    """The tree size from which a new cosignature can change what the mirror holds: the
    seal of the oldest epoch it would refresh."""
    epochs = sorted((int(e) for e in mirror.logs()), reverse=True)[:REFRESHED]
    if not epochs:
        return 0
    seal = await published_seal(conn, min(epochs))
    return 0 if seal is None else seal.last_seq
