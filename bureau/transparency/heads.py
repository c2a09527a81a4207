"""Signed tree heads (SPEC §8.1): the C2SP checkpoint notes the bureau publishes.

Every note the bureau signs — the ``GET /checkpoint`` notes and each epoch's note (the
same bytes for the same size) — is kept in ``tree_heads``, so "any size ever published"
is one query from any process, across restarts. Heads only grow: before signing a new
head the publisher checks that the tree still has, at the size of the latest head
published, the root that head has (:func:`publish`); a ledger restored from a backup
that lost published entries is refused, never signed over (docs/runbook.md).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import nacl.signing

from bureau import ledger_keys, metrics
from bureau.storage import db
from bureau.storage import heads as head_rows
from bureau.storage.heads import InconsistentHead as InconsistentHead  # its callers' name
from bureau.storage.tree import node_arrays
from bureau.transparency.tree import fetch_nodes
from reporters import wire
from reporters.tlog import proofs
from reporters.tlog.checkpoint import Checkpoint, log_signer, sign_checkpoint_note
from reporters.tlog.merkle import Node
from reporters.tlog.note import Signer


@dataclass(frozen=True)
class LogKey:
    """The bureau's key as a log's: its Ed25519 key under the key name = the origin, the
    ledger's origin line, which its genesis entry fixes (bureau.intake.genesis; SPEC §10:
    ``BUREAU_ORIGIN`` seeds it, by default ``bureau-`` and 16 hex digits of the BLAKE3 of
    the bureau's public key)."""

    signer: Signer

    @classmethod
    def of(cls, origin: str, key: nacl.signing.SigningKey) -> LogKey:
        return cls(log_signer(origin, key))

    @property
    def origin(self) -> str:
        return self.signer.name

    @property
    def vkey(self) -> str:
        """What ``/v1/bureau`` serves as ``vkey``."""
        return self.signer.verifier.vkey

    @property
    def key_id(self) -> str:
        """The bureau key's id: it signs only where it is the key in force."""
        return wire.signing_key_id(self.signer.key)

    def sign(self, size: int, root: bytes) -> str:
        return sign_checkpoint_note(Checkpoint(self.origin, size, root), self.signer)


@dataclass(frozen=True, slots=True)
class Head:
    """A published tree head: its size, root, the bureau's note, and the witnesses'
    cosignature lines for it (to be served after the note's own signature)."""

    size: int
    root: bytes
    note: str
    cosignatures: str = ""

    @property
    def served(self) -> str:
        """What ``GET /checkpoint`` serves: the note with every cosignature."""
        return self.note + self.cosignatures


async def latest(conn: db.Connection) -> Head | None:
    """The latest head published, with its cosignatures."""
    stored = await head_rows.latest(conn)
    return None if stored is None else Head(*stored)


async def latest_size(conn: db.Connection) -> int | None:
    return await head_rows.latest_size(conn)


async def published_and_nodes(conn: db.Connection, nodes: Collection[Node],
                              ) -> tuple[int | None, dict[Node, bytes]]:
    """The latest published size and the stored ``nodes`` that exist, in ONE query: a
    proof route answers in one round trip when its plan does not depend on the ledger
    (a consistency proof). The caller checks the size, then that every node came
    (:func:`bureau.transparency.tree.check_found`)."""
    return await head_rows.published_and_nodes(conn, *node_arrays(nodes))


async def epoch_note(conn: db.Connection, epoch: int) -> str | None:
    """The note of an epoch's checkpoint (its size is the seal's ``seq``), once the
    epoch's reports are complete."""
    return await head_rows.epoch_note(conn, epoch)


async def store(conn: db.Connection, log: LogKey, size: int, root: bytes) -> str:
    """Sign the head (size, root) and keep its note, in the caller's transaction; the
    note. Another process may have signed this size first: the same bytes, unless the
    tree changed under it — then :class:`InconsistentHead`, and nothing is kept. A key
    that is not the one in force at ``size`` signs nothing
    (:class:`~bureau.ledger_keys.NotInForce`)."""
    await ledger_keys.require_in_force(conn, log.key_id, size)
    note = log.sign(size, root)
    await head_rows.keep_consistent(conn, size, root, note)
    return note


async def publish(conn: db.Connection, log: LogKey) -> Head | None:
    """Sign and keep the tree head at the ledger's head, if it is new; the head, or None
    when the latest published one is already the ledger's size.

    Refuses (:class:`InconsistentHead`, counted in ``bureau_tree_head_refusals_total``)
    when the ledger is shorter than a published head or differs from it at its size."""
    async with db.transaction(conn, "publish_tree_head"):
        size, last_size, last_root = await head_rows.ledger_and_published(conn)
        if last_size is not None and last_size >= size:
            if last_size > size:
                metrics.TREE_HEAD_REFUSALS.inc()
                raise InconsistentHead(f"the ledger has {size} entries, but a head of "
                                       f"size {last_size} was published")
            return None
        new, old = proofs.root_plan(size), proofs.root_plan(last_size or 0)
        nodes = await fetch_nodes(conn, new.nodes | old.nodes)
        if last_size is not None and proofs.root_from_plan(old, nodes) != last_root:
            metrics.TREE_HEAD_REFUSALS.inc()
            raise InconsistentHead(f"the tree at size {last_size} is no longer the head "
                                   "published at that size")
        root = proofs.root_from_plan(new, nodes)
        note = await store(conn, log, size, root)
    metrics.TREE_HEADS.inc()
    metrics.TREE_HEAD_SIZE.set(size)
    return Head(size, root, note)
