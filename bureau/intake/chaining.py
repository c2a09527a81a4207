"""Chaining: one group commit in progress — the head it extends, the clock reading its
entries record, the admission state, the rows it will write."""

from __future__ import annotations

import datetime as dt
from typing import Any, NamedTuple

from bureau.intake.clock import epoch_of, format_timestamp
from bureau.intake.state import ChainTip, GroupState
from bureau.storage import db
from bureau.storage.chain import Writes
from reporters import wire


class Indexed(NamedTuple):
    """What the ``entries`` table finds an entry by, besides its seq and id: who signed
    it, whom it is about, its content key (none of them for most of what the bureau
    writes itself). A named tuple: one is made per appended entry."""

    signer: str | None = None
    subject: str | None = None
    content_key: str | None = None


UNINDEXED = Indexed()


class GroupTx:
    """One group commit in progress: the head, the clock reading, the state, the writes."""

    def __init__(self, conn: db.Connection, state: GroupState, after: ChainTip,
                 recorded_at: dt.datetime, epoch_seconds: int) -> None:
        """A group chaining its entries ``after`` the head it found, each recorded at
        ``recorded_at``, in the epoch that falls in by ``epoch_seconds``."""
        self.conn = conn
        self.state = state
        self.seq = after.seq
        self.head = after.head
        self.recorded_at = recorded_at
        self.recorded_text = format_timestamp(recorded_at)
        self.epoch = epoch_of(recorded_at, epoch_seconds)
        #: when the epoch the group records into began
        self.epoch_start = dt.datetime.fromtimestamp(self.epoch * epoch_seconds, dt.UTC)
        state.epoch = self.epoch  # the rules ask which epoch the group records into
        self.writes = Writes()
        #: an admin ``seal`` was admitted in this group (see ``Committer.seal_hook``)
        self.seal_requested = False

    def append(self, kind: str, *, envelope: bytes | None = None,
               body: dict[str, Any] | None = None,
               indexed: Indexed = UNINDEXED) -> tuple[str, int]:
        """Chain one entry after the head; returns its id and seq. ``envelope`` is the
        canonical JSON of the envelope as submitted; ``body`` what the bureau writes."""
        seq = self.seq + 1
        if envelope is not None:
            raw = wire.envelope_entry_bytes(wire.EntryHeader(
                seq, self.head, kind, self.recorded_text, self.epoch), envelope)
        else:
            assert body is not None
            raw = wire.canonical_json({"seq": seq, "prev": self.head, "kind": kind,
                                       "recorded_at": self.recorded_text, "epoch": self.epoch,
                                       "body": body})
        entry_id = wire.blake3_hex(raw)
        self.writes.entries.append((seq, entry_id, self.head, kind, self.recorded_at,
                                    self.epoch, *indexed, raw))
        self.seq, self.head = seq, entry_id
        return entry_id, seq
