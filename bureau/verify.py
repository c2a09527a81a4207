"""``bureau verify``: recompute every entry id, link and signature of the ledger, and
check every indexed column of ``entries`` against the entry's bytes, and
recompute the Merkle tree over it.

:class:`ChainVerifier` is pure: feed it stored rows in seq order and it says what, if
anything, is wrong with the first bad one. :func:`verify_database` drives it over a
database with a cursor, so memory stays flat however long the ledger is, and recomputes
the tree's nodes from the entry ids as it goes (:class:`~bureau.transparency.tree.TreeCheck`):
every stored node must be the one the entries give, and every tree head the bureau
signed must have the root the entries give at its size, and say so in its note.

The indexed columns (``seq``, ``id``, ``prev``, ``kind``, ``recorded_at``, ``epoch``,
``signer``, ``subject``, ``content_key``) are what reads, sealing and admission look
entries up by; a column that disagrees with the bytes would make them answer for an
entry that says otherwise. Each is recomputed the way intake wrote it — ``subject`` by
the kinds table's own rule (:func:`bureau.kinds.subject_of_document`), an exclusion's by
the entry it excludes — and a disagreement names the column and the seq.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bureau.errors import InternalError
from bureau.kinds import EXCLUSION, GENESIS, KEYS, SUBMITTED, subject_of_document
from bureau.settlement.check import settlement_problems
from bureau.storage import audit, db
from bureau.storage.audit import StoredRow
from bureau.transparency.tree import TreeCheck
from reporters import wire
from reporters.models import parse_timestamp
from reporters.tlog.checkpoint import Checkpoint, log_verifier, open_checkpoint
from reporters.tlog.errors import TlogError
from reporters.tlog.note import parse_note

_BATCH = 5000


class BadEntry(InternalError):
    """The first entry of the ledger that does not verify, and why."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"entry {seq}: {reason}")
        self.seq = seq
        self.reason = reason


class BadSettlement(InternalError):
    """A stored settlement whose numbers do not add up (bureau.settlement.check)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BadTree(InternalError):
    """The stored Merkle tree, or a signed tree head, disagrees with the entries."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _disagrees(column: str, stored: object, says: object) -> str:
    return f"column {column} disagrees with the entry (stored {stored!r}, the entry says {says!r})"


def _check_envelope(row: StoredRow, envelope: dict[str, Any]) -> str | None:
    """The signature, and the columns only the envelope can tell: signer, content_key,
    and subject (by the kinds table's rule); what is wrong, or None."""
    try:
        sigs = envelope["signatures"]
        assert isinstance(sigs, list) and len(sigs) == 1
        ptype, payload, keyid = envelope["payloadType"], envelope["payload"], sigs[0]["keyid"]
        assert isinstance(ptype, str) and isinstance(payload, str) and isinstance(keyid, str)
        key = wire.public_key_from_key_id(keyid)
        body = wire.b64decode_canonical(payload)
        sig = wire.b64decode_canonical(sigs[0]["sig"])
    except (AssertionError, KeyError, TypeError, wire.WireError) as exc:
        return f"envelope is malformed ({exc})"
    if not wire.verify_signature(key, ptype, body, sig):
        return "signature does not verify"
    name = ptype.removeprefix(wire.PAYLOAD_TYPE_PREFIX).removesuffix(wire.PAYLOAD_TYPE_SUFFIX)
    kind = SUBMITTED.get(name)
    if kind is None or kind.name != row.kind:
        return _disagrees("kind", row.kind, ptype)
    if row.signer != keyid:
        return _disagrees("signer", row.signer, keyid)
    content_key = wire.content_key(keyid, ptype, body)
    if row.content_key != content_key:
        return _disagrees("content_key", row.content_key, content_key)
    try:
        doc = json.loads(body)
        subject = subject_of_document(kind, doc, keyid)
    except (ValueError, TypeError, AttributeError) as exc:
        return f"the payload does not name what its kind is about ({exc!r})"
    if row.subject != subject:
        return _disagrees("subject", row.subject, subject)
    return None


def _is_genesis_body(body: object) -> bool:
    return (isinstance(body, dict)
            and set(body) == {"policy", "epoch_seconds", "origin", "key", "admins"}
            and isinstance(body["policy"], str) and isinstance(body["origin"], str)
            and type(body["epoch_seconds"]) is int and body["epoch_seconds"] >= 1
            and isinstance(body["key"], str) and isinstance(body["admins"], list)
            and body["admins"] == sorted(set(body["admins"])) and len(body["admins"]) >= 1)


class KeyHistory:
    """The bureau keys in force, as the entries themselves say (the genesis entry's
    ``key``, each ``keys`` entry's ``bureau`` from the next entry on; SPEC §3 r3):
    what every report, checkpoint and note is checked against."""

    def __init__(self) -> None:
        self.origin = ""
        #: (from_seq, key id), in seq order
        self.periods: list[tuple[int, str]] = []

    def take(self, row: StoredRow, doc: dict[str, Any]) -> None:
        """Note the key an entry sets, if it sets one."""
        if row.kind == GENESIS.name:
            self.origin = doc["body"]["origin"]
            self.periods.append((1, doc["body"]["key"]))
        elif row.kind == KEYS.name:
            payload = json.loads(wire.b64decode_canonical(doc["envelope"]["payload"]))
            self.periods.append((row.seq + 1, payload["bureau"]))

    def key_at(self, seq: int) -> str | None:
        found = None
        for from_seq, key in self.periods:
            if from_seq > max(seq, 1):
                break
            found = key
        return found

    def check_envelope(self, what: str, raw: bytes, seq: int) -> str | None:
        """What is wrong with a signed report or checkpoint envelope covering entry
        ``seq``, if anything: it must be signed by the key in force there."""
        key = self.key_at(seq)
        try:
            env = json.loads(raw)
            (sig,) = env["signatures"]
            body = wire.b64decode_canonical(env["payload"])
            ok = sig["keyid"] == key and wire.verify_signature(
                wire.public_key_from_key_id(key or ""), env["payloadType"], body,
                wire.b64decode_canonical(sig["sig"]))
        except (ValueError, KeyError, TypeError) as exc:
            return f"{what}: its envelope is malformed ({exc})"
        if not ok:
            return (f"{what}: not signed by {key}, the bureau key in force at entry {seq} "
                    f"(it names {sig.get('keyid')!r})")
        return None

    def check_note(self, size: int, note: str) -> str | None:
        """What is wrong with the signature of the tree head of ``size``, if anything."""
        key = self.key_at(size)
        if key is None:
            return f"tree head of size {size}: the ledger names no key"
        verifier = log_verifier(self.origin, wire.public_key_from_key_id(key))
        try:
            open_checkpoint(note, verifier)
        except TlogError as exc:
            return (f"tree head of size {size}: not signed by {key}, the bureau key in force "
                    f"at that size ({exc.detail})")
        return None


class ChainVerifier:
    """Checks, entry by entry: seq contiguous from 1; stored bytes are canonical JSON of
    the entry; id = BLAKE3 of those bytes; prev = the previous id; recorded_at and epoch
    never go back; the columns seq, id, prev, kind, recorded_at and epoch say what the
    bytes say (the envelope's columns and signature are checked by
    :func:`_check_envelope`, off the event loop)."""

    def __init__(self) -> None:
        self.seq = 0
        self.head = wire.ZERO_ID
        self.recorded_at = ""
        self.epoch = -1

    def check_links(self, row: StoredRow) -> dict[str, Any]:
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
        if entry.get("seq") != row.seq:
            raise BadEntry(row.seq, _disagrees("seq", row.seq, entry.get("seq")))
        if entry.get("kind") != row.kind:
            raise BadEntry(row.seq, _disagrees("kind", row.kind, entry.get("kind")))
        if entry.get("prev") != self.head:
            raise BadEntry(row.seq, "prev does not link to the previous entry")
        if row.prev != self.head:
            raise BadEntry(row.seq, _disagrees("prev", row.prev, entry.get("prev")))
        recorded_at, epoch = entry.get("recorded_at"), entry.get("epoch")
        if not isinstance(recorded_at, str) or recorded_at < self.recorded_at:
            raise BadEntry(row.seq, "recorded_at goes back in time")
        if not isinstance(epoch, int) or epoch < self.epoch:
            raise BadEntry(row.seq, "epoch goes back")
        self._check_columns(row, entry, recorded_at, epoch)
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

    @staticmethod
    def _check_columns(row: StoredRow, entry: dict[str, object], recorded_at: str,
                       epoch: int) -> None:
        """recorded_at and epoch; for what the bureau wrote, signer and content_key are
        empty and subject too (an exclusion's is checked against its target, later)."""
        try:
            when = parse_timestamp(recorded_at)
        except ValueError:
            raise BadEntry(row.seq, f"recorded_at {recorded_at!r} is not a timestamp") from None
        if row.recorded_at is not None and row.recorded_at != when:
            raise BadEntry(row.seq, _disagrees("recorded_at", row.recorded_at, recorded_at))
        if row.epoch is not None and row.epoch != epoch:
            raise BadEntry(row.seq, _disagrees("epoch", row.epoch, epoch))
        if "body" in entry:
            for column in ("signer", "content_key"):
                if getattr(row, column) is not None:
                    raise BadEntry(row.seq, _disagrees(column, getattr(row, column), None))
            if row.kind != EXCLUSION.name and row.subject is not None:
                raise BadEntry(row.seq, _disagrees("subject", row.subject, None))


def _envelope_failures(rows: list[tuple[StoredRow, dict[str, Any]]]) -> list[tuple[int, str]]:
    out = []
    for row, entry in rows:
        env = entry.get("envelope")
        if isinstance(env, dict):
            problem = _check_envelope(row, env)
            if problem:
                out.append((row.seq, problem))
    return out


async def _exclusion_failures(conn: db.Connection,
                              rows: list[tuple[StoredRow, dict[str, Any]]]
                              ) -> list[tuple[int, str]]:
    """An exclusion is about the subject of the entry it excludes, an earlier one (as
    bureau.intake.committer writes it); that entry's own subject was checked already."""
    exclusions = [(row, entry["body"].get("entry")) for row, entry in rows
                  if row.kind == EXCLUSION.name and isinstance(entry.get("body"), dict)]
    if not exclusions:
        return []
    targets = await audit.seq_and_subject(
        conn, {t for _, t in exclusions if isinstance(t, str)})
    out = []
    for row, target in exclusions:
        found = targets.get(target) if isinstance(target, str) else None
        if found is None or found[0] >= row.seq:
            out.append((row.seq, f"the exclusion's entry {target!r} is not an earlier entry"))
        elif row.subject != found[1]:
            out.append((row.seq, _disagrees("subject", row.subject, found[1])))
    return out


#: called with (entries verified, entries in all)
OnProgress = Callable[[int, int], None]


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


async def verify_database(conn: db.Connection, progress: OnProgress | None = None) -> int:
    """Verify the whole ledger and its tree; return the number of entries. Raises
    :class:`BadEntry` for the first bad entry, :class:`BadTree` for a tree that
    disagrees with good entries."""
    total = await audit.entry_count(conn)
    checker = ChainVerifier()
    keys = KeyHistory()
    signed: list[tuple[str, bytes, int]] = []
    tree: TreeCheck | None = None
    head_rows: list[tuple[int, bytes, str]] = []
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="verify")
    try:
        async with db.transaction(conn, "verify_ledger", isolation="repeatable_read",
                                  readonly=True):
            head_row = await audit.ledger_head(conn)
            head_rows = await audit.tree_heads(conn)
            tree = TreeCheck(frozenset(size for size, _, _ in head_rows))
            async for rows in audit.entries(conn, _BATCH):
                for row, doc in await _checked(conn, rows, checker, pool):
                    keys.take(row, doc)
                await tree.compare(conn, [r.id for r in rows])
                if progress:
                    progress(checker.seq, total)
            await tree.finish(conn)
            signed = await _signed_documents(conn)
    finally:
        pool.shutdown()
    if head_row is not None and head_row != (checker.seq, checker.head):
        raise BadEntry(checker.seq, "ledger head does not point at the last entry")
    assert tree is not None
    if tree.difference is not None:
        raise BadTree(tree.difference + " (bureau rebuild recomputes the tree)")
    _check_signed(keys, tree, head_rows, signed)
    settlements = await settlement_problems(conn)
    if settlements:
        raise BadSettlement(settlements[0] + " (bureau rebuild derives it again)")
    return checker.seq


async def _checked(conn: db.Connection, rows: list[StoredRow], checker: ChainVerifier,
                   pool: ThreadPoolExecutor) -> list[tuple[StoredRow, dict[str, Any]]]:
    """One batch of entries, in seq order: each one's links, then (on two threads) their
    envelopes and their exclusions. Raises :class:`BadEntry` for the first bad entry;
    otherwise each row with its document."""
    checked: list[tuple[StoredRow, dict[str, Any]]] = []
    link_failure: BadEntry | None = None
    for row in rows:
        try:
            checked.append((row, checker.check_links(row)))
        except BadEntry as exc:
            link_failure = exc
            break
    half = len(checked) // 2
    failures = [f for part in pool.map(
        _envelope_failures, [checked[:half], checked[half:]]) for f in part]
    failures += await _exclusion_failures(conn, checked)
    if failures:  # an earlier entry's failure is the first bad entry
        seq, reason = min(failures)
        raise BadEntry(seq, reason)
    if link_failure is not None:
        raise link_failure
    return checked


async def _signed_documents(conn: db.Connection) -> list[tuple[str, bytes, int]]:
    """(what, envelope, the seq whose key in force signs it) of every document the views
    signed: the checkpoints, the reports and the settlements."""
    signed = [(f"the checkpoint of epoch {epoch}", envelope,
               json.loads(wire.b64decode_canonical(json.loads(envelope)["payload"]))["seq"])
              for epoch, envelope in await audit.checkpoints(conn)]
    # a report names its ledger position; every report of an epoch the same
    signed += [(f"the report of {r.agent} at epoch {r.epoch}", r.envelope, r.last_seq)
               for r in await audit.reports(conn)]
    # a settlement is signed, like its epoch's reports, by the key at the seal
    signed += [(f"the settlement of epoch {t.epoch}", t.envelope, t.last_seq)
               for t in await audit.settlements(conn)]
    return signed


def _check_signed(keys: KeyHistory, tree: TreeCheck, head_rows: list[tuple[int, bytes, str]],
                  signed: list[tuple[str, bytes, int]]) -> None:
    """Every tree head against the recomputed tree and the key in force at its size,
    every signed document against the key in force at its seq (:class:`BadTree`)."""
    for size, root, note in head_rows:
        problem = (_check_head(size, root, note, tree.roots.get(size))
                   or keys.check_note(size, note))
        if problem is not None:
            raise BadTree(problem)
    for what, raw, seq in signed:
        problem = keys.check_envelope(what, raw, seq)
        if problem is not None:
            raise BadTree(problem)
