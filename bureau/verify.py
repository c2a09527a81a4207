"""``bureau verify``: recompute every entry id, link and signature of the ledger, and
the Merkle tree over it.

:class:`ChainVerifier` is pure: feed it stored rows in seq order and it says what, if
anything, is wrong with the first bad one. :func:`verify_database` drives it over a
database with a cursor, so memory stays flat however long the ledger is, and recomputes
the tree's nodes from the entry ids as it goes (:class:`~bureau.transparency.tree.TreeCheck`):
every stored node must be the one the entries give, and every tree head the bureau
signed must have the root the entries give at its size, and say so in its note.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import asyncpg

from bureau import db
from bureau.errors import InternalError
from bureau.kinds import GENESIS
from bureau.transparency.tree import TreeCheck
from reporters import wire
from reporters.tlog.checkpoint import Checkpoint
from reporters.tlog.errors import TlogError
from reporters.tlog.note import parse_note

_BATCH = 5000


class BadEntry(InternalError):
    """The first entry of the ledger that does not verify, and why."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"entry {seq}: {reason}")
        self.seq = seq
        self.reason = reason


class BadTree(InternalError):
    """The stored Merkle tree, or a signed tree head, disagrees with the entries."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class StoredRow:
    seq: int
    id: str
    prev: str
    kind: str
    entry: bytes


def _check_signature(seq: int, envelope: dict[str, object]) -> str | None:
    try:
        sigs = envelope["signatures"]
        assert isinstance(sigs, list) and len(sigs) == 1
        ptype, payload = envelope["payloadType"], envelope["payload"]
        assert isinstance(ptype, str) and isinstance(payload, str)
        key = wire.public_key_from_key_id(sigs[0]["keyid"])
        body = wire.b64decode_canonical(payload)
        sig = wire.b64decode_canonical(sigs[0]["sig"])
    except (AssertionError, KeyError, TypeError, wire.WireError) as exc:
        return f"envelope is malformed ({exc})"
    if not wire.verify_signature(key, ptype, body, sig):
        return "signature does not verify"
    return None


def _is_genesis_body(body: object) -> bool:
    return (isinstance(body, dict) and set(body) == {"policy", "epoch_seconds", "origin"}
            and isinstance(body["policy"], str) and isinstance(body["origin"], str)
            and type(body["epoch_seconds"]) is int and body["epoch_seconds"] >= 1)


class ChainVerifier:
    """Checks, entry by entry: seq contiguous from 1; stored bytes are canonical JSON of
    the entry; id = BLAKE3 of those bytes; prev = the previous id; recorded_at and epoch
    never go back; every envelope's signature verifies."""

    def __init__(self) -> None:
        self.seq = 0
        self.head = wire.ZERO_ID
        self.recorded_at = ""
        self.epoch = -1

    def check_links(self, row: StoredRow) -> dict[str, object]:
        if row.seq != self.seq + 1:
            raise BadEntry(row.seq, f"seq should be {self.seq + 1}")
        try:
            entry = json.loads(row.entry)
        except ValueError:
            raise BadEntry(row.seq, "stored entry is not JSON") from None
        if not isinstance(entry, dict) or wire.canonical_json(entry) != row.entry:
            raise BadEntry(row.seq, "stored entry is not canonical JSON")
        if wire.blake3_hex(row.entry) != row.id:
            raise BadEntry(row.seq, "id is not the BLAKE3 of the entry")
        if entry.get("seq") != row.seq or entry.get("kind") != row.kind:
            raise BadEntry(row.seq, "indexed columns disagree with the entry")
        if entry.get("prev") != self.head or row.prev != self.head:
            raise BadEntry(row.seq, "prev does not link to the previous entry")
        recorded_at, epoch = entry.get("recorded_at"), entry.get("epoch")
        if not isinstance(recorded_at, str) or recorded_at < self.recorded_at:
            raise BadEntry(row.seq, "recorded_at goes back in time")
        if not isinstance(epoch, int) or epoch < self.epoch:
            raise BadEntry(row.seq, "epoch goes back")
        if ("envelope" in entry) == ("body" in entry):
            raise BadEntry(row.seq, "an entry has an envelope or a body, not both")
        if (row.seq == 1) != (entry.get("kind") == GENESIS.name):
            raise BadEntry(row.seq, "entry 1, and only entry 1, is the ledger's genesis entry"
                           " (SPEC §3)")
        if row.seq == 1 and not _is_genesis_body(entry.get("body")):
            raise BadEntry(row.seq, "the genesis entry's body is {policy, epoch_seconds, "
                           "origin}")
        self.seq, self.head = row.seq, row.id
        self.recorded_at, self.epoch = recorded_at, epoch
        return entry


def _signature_failures(entries: list[tuple[int, dict[str, object]]]) -> list[tuple[int, str]]:
    out = []
    for seq, entry in entries:
        env = entry.get("envelope")
        if isinstance(env, dict):
            problem = _check_signature(seq, env)
            if problem:
                out.append((seq, problem))
    return out


Progress = Callable[[int, int], None]


def terminal_progress(done: int, total: int) -> None:
    """A progress bar on stderr, drawn only when stderr is a terminal."""
    if not sys.stderr.isatty() or total == 0:
        return
    width = 40
    filled = width * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} entries")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _check_head(size: int, root: bytes, note: str, computed: bytes | None) -> str | None:
    """What is wrong with one signed tree head, if anything."""
    if computed is None:
        return f"tree head of size {size}: the ledger is shorter"
    if computed != root:
        return (f"tree head of size {size}: root {root.hex()}, the entries give "
                f"{computed.hex()}")
    try:
        checkpoint = Checkpoint.parse(parse_note(note).text)
    except TlogError as exc:
        return f"tree head of size {size}: its note is malformed ({exc.detail})"
    if (checkpoint.size, checkpoint.root) != (size, root):
        return f"tree head of size {size}: its note says size {checkpoint.size}"
    return None


async def verify_database(conn: asyncpg.Connection, progress: Progress | None = None) -> int:
    """Verify the whole ledger and its tree; return the number of entries. Raises
    :class:`BadEntry` for the first bad entry, :class:`BadTree` for a tree that
    disagrees with good entries."""
    total = await conn.fetchval("SELECT count(*) FROM entries")
    checker = ChainVerifier()
    tree: TreeCheck | None = None
    head_rows: list[asyncpg.Record] = []
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="verify")
    try:
        async with db.transaction(conn, "verify_ledger", isolation="repeatable_read",
                                  readonly=True):
            head_row = await conn.fetchrow("SELECT seq, head FROM ledger_head")
            head_rows = await conn.fetch("SELECT size, root, note FROM tree_heads ORDER BY size")
            tree = TreeCheck(frozenset(r["size"] for r in head_rows))
            cursor = await conn.cursor(
                "SELECT seq, id, prev, kind, entry FROM entries ORDER BY seq")
            while True:
                rows = await cursor.fetch(_BATCH)
                if not rows:
                    break
                checked: list[tuple[int, dict[str, object]]] = []
                link_failure: BadEntry | None = None
                for r in rows:
                    try:
                        checked.append((r["seq"], checker.check_links(StoredRow(
                            r["seq"], r["id"], r["prev"], r["kind"], bytes(r["entry"])))))
                    except BadEntry as exc:
                        link_failure = exc
                        break
                half = len(checked) // 2
                failures = [f for part in pool.map(
                    _signature_failures, [checked[:half], checked[half:]]) for f in part]
                if failures:  # an earlier entry's bad signature is the first bad entry
                    seq, reason = min(failures)
                    raise BadEntry(seq, reason)
                if link_failure is not None:
                    raise link_failure
                await tree.compare(conn, [r["id"] for r in rows])
                if progress:
                    progress(checker.seq, total)
            await tree.finish(conn)
    finally:
        pool.shutdown()
    if head_row is not None and (head_row["seq"], head_row["head"]) != (checker.seq,
                                                                         checker.head):
        raise BadEntry(checker.seq, "ledger head does not point at the last entry")
    assert tree is not None
    if tree.difference is not None:
        raise BadTree(tree.difference + " (bureau rebuild recomputes the tree)")
    for r in head_rows:
        problem = _check_head(r["size"], bytes(r["root"]), r["note"], tree.roots.get(r["size"]))
        if problem is not None:
            raise BadTree(problem)
    return checker.seq
