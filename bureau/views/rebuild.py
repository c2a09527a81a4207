"""``bureau rebuild``: throw away every derived view and re-derive it from the entries.

SPEC §1.4: views are pure functions of the ledger, so re-deriving them must give the
same bytes. In one transaction, holding the ledger head lock (intake and sealing wait):

1. copy every derived table aside (temporary tables, dropped at commit);
2. empty them all: the admission indexes (reporters, facts, probes, agents, verdicts,
   exclusions, disputes, resolutions), the Merkle tree's nodes, and seals, reports,
   checkpoints;
3. recompute the tree from the entry ids, and check that every tree head the bureau
   ever signed (``tree_heads``, which is not a view and is kept) has the root the
   entries give at its size;
4. replay the entries, in seq order, a chunk at a time, through the very function that
   wrote the admission indexes at intake (``bureau.intake.index.record_admitted``, flushed by
   ``bureau.intake.flush.flush``); ``exclusion`` and ``seal`` entries give back their rows;
5. derive and sign every sealed epoch's reports and checkpoint with a fresh
   :class:`~bureau.views.builder.ReportBuilder` (no state carried over);
6. compare old and new, table by table, and name the first difference — of the reports
   and checkpoints, only those of epochs the service had finished (whose checkpoint it
   had stored): on a live bureau an epoch still being built is no difference, and is
   named apart (``unfinished``).

The new views are committed either way: they are what the entries say.
``refusals`` is not a view (refused envelopes are not entries) and is left alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import nacl.signing

from bureau.intake.chaining import GroupTx
from bureau.intake.envelope import decode_payload, parse_envelope
from bureau.intake.flush import flush
from bureau.intake.index import Admitted, record_admitted, record_exclusion
from bureau.intake.state import ChainTip, GroupState, Submission
from bureau.kinds import EXCLUSION, GENESIS, SEAL, SUBMITTED, subject_of
from bureau.ledger_keys import NotInForce
from bureau.storage import chain, db, derived, entries, reports
from bureau.storage.derived import DERIVED_TABLES
from bureau.transparency.heads import InconsistentHead, LogKey
from bureau.transparency.tree import TreeCheck
from bureau.views.builder import ReportBuilder

_CHUNK = 5000


@dataclass
class RebuildResult:
    entries: int = 0
    epochs: int = 0
    reports: int = 0
    #: one line per table that differs, naming its first differing row
    differences: list[str] = field(default_factory=list)
    #: sealed epochs signed under an earlier bureau key (SPEC §3 r3): their reports and
    #: checkpoint are kept as they were, not re-signed (this run holds only its own key)
    kept: list[int] = field(default_factory=list)
    #: sealed epochs the service had not finished building (no checkpoint yet): their
    #: reports and checkpoint were derived and stored, but not compared
    unfinished: list[int] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


async def _recompute_tree(conn: db.Connection) -> list[str]:
    """Step 3: the tree's nodes from the entry ids; the signed heads it contradicts."""
    published = await derived.published_roots(conn)
    tree = TreeCheck(frozenset(published))
    after = 0
    while rows := await entries.ids_after(conn, after, _CHUNK):
        await derived.copy_tree_nodes(conn, tree.extend([r["id"] for r in rows]))
        after = rows[-1]["seq"]
    differences = []
    for size, root in sorted(published.items()):
        got = tree.roots.get(size)
        if got is None:
            differences.append(f"tree_heads: size {size} was published, the ledger has "
                               f"only {tree.frontier.size} entries")
        elif got != root:
            differences.append(f"tree_heads: size {size} was published with root "
                               f"{root.hex()}, the entries give {got.hex()}")
    return differences


async def _replay_indexes(conn: db.Connection, head: db.Row) -> int:
    """Step 4: admission indexes and seals, from the entries, in seq order."""
    after, total = 0, 0
    while True:
        rows = await entries.stored_after(conn, after, _CHUNK)
        if not rows:
            return total
        docs = [json.loads(r["entry"]) for r in rows]
        subs: dict[int, Submission] = {}
        for r, doc in zip(rows, docs, strict=True):
            if "envelope" in doc:
                env = parse_envelope(doc["envelope"])
                subs[r["seq"]] = Submission(env, decode_payload(env))
        state = await GroupState.load(conn, list(subs.values()))
        tx = GroupTx(conn, state, ChainTip(head["seq"], head["head"], head["recorded_at"]),
                     head["recorded_at"], 1)
        for r, doc in zip(rows, docs, strict=True):
            sub = subs.get(r["seq"])
            if sub is not None:
                kind, payload = SUBMITTED[sub.envelope.name], sub.payload
                assert payload is not None
                record_admitted(tx.state, tx.writes, Admitted(
                    kind=kind, payload=payload, signer=sub.signer,
                    key=sub.envelope.content_key,
                    subject=subject_of(kind, payload, sub.signer),
                    entry_id=r["id"], seq=r["seq"]))
            elif r["kind"] == EXCLUSION.name:
                body = doc["body"]
                record_exclusion(tx.state, tx.writes, body["entry"], r["seq"], body["reason"])
            elif r["kind"] == GENESIS.name:
                body = doc["body"]
                tx.writes.ledger_keys.append((1, 1, body["key"], body["admins"], None))
            elif r["kind"] == SEAL.name:
                body = doc["body"]
                await reports.insert_seal(conn, body["epoch"], r["seq"], body["seq"],
                                          body["head"])
        # No entry is written: flush() writes the index rows and rewrites the head row
        # with the values it already has.
        await flush(tx)
        after, total = rows[-1]["seq"], total + len(rows)


async def rebuild(conn: db.Connection, signing_key: nacl.signing.SigningKey,
                  log_key: LogKey, progress: Callable[[str], None] = lambda _: None,
                  ) -> RebuildResult:
    """Re-derive every view from the entries; commit; say what, if anything, changed."""
    result = RebuildResult()
    async with db.transaction(conn, "rebuild_views"):
        head = await chain.lock_head(conn)
        # A live service's report builder writes outside the ledger lock: the derived
        # tables are locked (a build in flight commits first), set aside and emptied, so
        # the copies are one consistent picture of what the service finished. An epoch
        # is finished once its checkpoint is stored (bureau.views.builder: the
        # checkpoint goes last). A sealed epoch without one is still being built by the
        # service: re-derived here, but there is nothing finished to compare it with.
        result.unfinished = await derived.set_aside(conn)
        progress("recomputing the Merkle tree from the entry ids")
        tree_differences = await _recompute_tree(conn)
        progress("replaying entries into the admission indexes")
        result.entries = await _replay_indexes(conn, head)
        builder = ReportBuilder(signing_key, log_key)
        try:
            for seal in await reports.seals(conn):
                progress(f"deriving and signing the reports of epoch {seal.epoch}")
                try:
                    result.reports += await builder.build(conn, seal)
                except InconsistentHead as exc:  # its note would contradict a published one
                    tree_differences.append(f"checkpoints: epoch {seal.epoch}: {exc.detail}")
                    continue
                except NotInForce:  # signed by an earlier key, which this run has not
                    await derived.keep_signed(conn, seal.epoch)
                    result.kept.append(seal.epoch)
                    continue
                result.epochs += 1
        finally:
            builder.close()
        result.differences.extend(tree_differences)
        for table in DERIVED_TABLES:
            diff = await derived.first_difference(conn, table, result.unfinished)
            if diff is not None:
                result.differences.append(diff)
    return result
