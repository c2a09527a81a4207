"""The durable spool: a first-in-first-out store of signed envelopes on local disk.

Format: one SQLite database, ``spool.sqlite3``, in the directory the caller names, with
one table ``spool(seq INTEGER PRIMARY KEY AUTOINCREMENT, content_key TEXT UNIQUE,
line BLOB)``. ``line`` is the signed envelope exactly as it will be sent (one compact
JSON line); ``content_key`` is what the bureau dedupes on (:func:`reporters.wire.content_key`),
so the same envelope is never spooled twice. Rows leave only when the bureau has
answered for them.

A second table, ``held(name TEXT PRIMARY KEY, record BLOB)``, keeps records a caller is
not ready to sign yet (the reporting proxy's facts waiting for their ``derived``
outcome). An append may *release* a held record: the record's row is deleted in the
same transaction that spools the envelope made from it, so after a crash the record is
either still held or spooled, never both and never neither.

A third, ``delivered(content_key TEXT PRIMARY KEY, line BLOB, delivered_at REAL)``,
keeps envelopes the bureau accepted, for a retention the caller chooses, so that they
can be sent again if the bureau is restored from a backup that lost them
(:meth:`Spool.resend`); rows older than the retention are pruned as batches are answered.

Durability: the database runs in WAL mode with ``synchronous=FULL``, so every committed
transaction is fsynced before :meth:`Spool.append` returns. Appends that arrive together
share one transaction and one fsync (group commit), so many concurrent ``send`` calls cost
about one fsync between them, not one each.

Releases (:meth:`Spool.release`) have nobody waiting on their durability — the record
they release is on disk already — so they do not start a transaction of their own: they
ride with the next write that does (a hold, an append), or are written ``linger``
seconds after they came if none does. A caller holding facts one at a time so pays one
fsync per fact, not one for the hold and another, in its way, for the release before it.

One process at a time: the directory is locked with ``flock`` on ``spool.lock`` (released
by the kernel if the process dies), so two senders never drain the same spool.

All SQLite work runs on one dedicated thread; the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from reporters._internal.errors import BureauClientError

DB_FILE = "spool.sqlite3"
LOCK_FILE = "spool.lock"

T = TypeVar("T")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS spool (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    content_key  TEXT    NOT NULL UNIQUE,
    line         BLOB    NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS held (
    name    TEXT  PRIMARY KEY,
    record  BLOB  NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS delivered (
    content_key   TEXT  PRIMARY KEY,
    line          BLOB  NOT NULL,
    delivered_at  REAL  NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS delivered_at ON delivered (delivered_at)",
)


#: Seconds a release waits for a write to ride with before it is written on its own.
LINGER_SECONDS = 0.05


@dataclass
class _Write:
    """One caller's part of a group-committed transaction."""

    future: asyncio.Future[None]
    #: envelopes to spool: (content key, line) each
    appends: Sequence[tuple[str, bytes]] = ()
    #: the held records the appended envelopes were made from: deleted in the same
    #: transaction
    releases: Sequence[str] = ()
    #: records to hold (insert or replace)
    holds: Sequence[tuple[str, bytes]] = ()
    #: someone waits for it to be durable: the writer starts at once (a release does not)
    urgent: bool = True


def _closed() -> BureauClientError:
    return BureauClientError("CLOSED", "", "the spool has been closed")


class Spool:
    """A durable FIFO of envelope lines in ``directory``, holding at most ``max_items``
    (an :meth:`append` beyond that waits until the sender has drained some)."""

    def __init__(self, directory: str | os.PathLike[str], *, max_items: int) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self.directory = Path(directory)
        self.max_items = max_items
        #: set whenever rows are added; the sender clears it before it looks
        self.nonempty = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reporters-spool")
        self._db: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._count = 0  # rows committed
        self._reserved = 0  # appends admitted, not yet committed
        self._pending: list[_Write] = []
        self._urgent = False  # something pending has a caller waiting on it
        #: the timer that writes lingering releases
        self._lingering: asyncio.TimerHandle | None = None
        self.linger = LINGER_SECONDS
        self._writer: asyncio.Task[None] | None = None
        self._changed = asyncio.Condition()
        self._closed = False

    # ------------------------------------------------------------------ thread side

    def _open_sync(self) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise BureauClientError(
                "SPOOL_IN_USE", "", f"another Reporter holds the spool in {self.directory}"
            ) from None
        try:
            db = sqlite3.connect(self.directory / DB_FILE, isolation_level=None,
                                 check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            for statement in _SCHEMA:
                db.execute(statement)
            (count,) = db.execute("SELECT count(*) FROM spool").fetchone()
        except BaseException:
            os.close(fd)
            raise
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:  # the new files' directory entries are durable too
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._db, self._lock_fd = db, fd
        return int(count)

    def _tx(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        db = self._db
        if db is None:
            raise _closed()
        db.execute("BEGIN IMMEDIATE")
        try:
            result = fn(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return result

    def _write_sync(self, group: Sequence[_Write]) -> int:
        """One transaction for a group. A held record ends as the group's last word on
        its name says: held (with the last record given) or released. Returns the
        number of envelopes newly spooled."""
        last: dict[str, bytes | None] = {}  # name -> record, or None: released
        for w in group:
            for name, record in w.holds:
                last.pop(name, None)  # re-inserted: the dict keeps the order of the words
                last[name] = record
            for name in w.releases:
                last.pop(name, None)
                last[name] = None
        holds = [(name, record) for name, record in last.items() if record is not None]
        releases = [(name,) for name, record in last.items() if record is None]
        appends = [a for w in group for a in w.appends]

        def write(db: sqlite3.Connection) -> int:
            # Only the statements with rows: each one is a round trip into SQLite.
            if holds:
                db.executemany("INSERT OR REPLACE INTO held (name, record) VALUES (?, ?)",
                               holds)
            if releases:
                db.executemany("DELETE FROM held WHERE name = ?", releases)
            if not appends:
                return 0
            return int(db.executemany(
                "INSERT OR IGNORE INTO spool (content_key, line) VALUES (?, ?)",
                appends).rowcount)

        return self._tx(write)

    def _held_sync(self) -> list[tuple[str, bytes]]:
        if self._db is None:
            raise _closed()
        rows = self._db.execute("SELECT name, record FROM held ORDER BY rowid").fetchall()
        return [(str(name), bytes(record)) for name, record in rows]

    def _remove_sync(self, seqs: Sequence[int], keep: Sequence[int], now: float,
                     retention: float) -> int:
        def remove(db: sqlite3.Connection) -> int:
            db.executemany(
                "INSERT OR REPLACE INTO delivered (content_key, line, delivered_at)"
                " SELECT content_key, line, ? FROM spool WHERE seq = ?",
                [(now, seq) for seq in keep])
            removed = int(db.executemany("DELETE FROM spool WHERE seq = ?",
                                         [(seq,) for seq in seqs]).rowcount)
            db.execute("DELETE FROM delivered WHERE delivered_at < ?", (now - retention,))
            return removed

        return self._tx(remove)

    def _resend_sync(self, since: float) -> int:
        return self._tx(lambda db: int(db.execute(
            "INSERT OR IGNORE INTO spool (content_key, line) SELECT content_key, line"
            " FROM delivered WHERE delivered_at >= ? ORDER BY delivered_at, rowid",
            (since,)).rowcount))

    def _peek_sync(self, limit: int, max_bytes: int) -> list[tuple[int, bytes]]:
        if self._db is None:
            raise _closed()
        rows = self._db.execute(
            "SELECT seq, line FROM spool ORDER BY seq LIMIT ?", (limit,)).fetchall()
        out: list[tuple[int, bytes]] = []
        size = 0
        for seq, line in rows:
            size += len(line) + 1
            if out and size > max_bytes:
                break
            out.append((int(seq), bytes(line)))
        return out

    def _close_sync(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, fn, *args)
        except sqlite3.Error as exc:
            raise BureauClientError("SPOOL_ERROR", "", f"{type(exc).__name__}: {exc}") from exc

    # ------------------------------------------------------------------ loop side

    @property
    def size(self) -> int:
        """Envelopes spooled (or being spooled) and not yet answered for."""
        return self._count + self._reserved

    async def open(self) -> None:
        """Open (creating if needed) and lock the spool; rows from an earlier run stay."""
        self._count = await self._run(self._open_sync)
        if self._count:
            self.nonempty.set()

    async def append(self, content_key: str, line: bytes, *, release: str | None = None) -> None:
        """Spool one envelope line; returns once it is committed and fsynced. Waits while
        the spool is full. An envelope already spooled is not spooled again. ``release``
        names a held record to delete in the same transaction."""
        await self._admit(1)
        await self._submit(_Write(self._future(), ((content_key, line),),
                                  () if release is None else (release,)))

    async def append_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Spool several envelope lines, ``(content key, line)`` each, in one
        transaction and one fsync; returns once they are committed. Waits while the
        spool is full (then spools them all, even past ``max_items``: a request's lines
        are never split)."""
        if not items:
            return
        await self._admit(len(items))
        await self._submit(_Write(self._future(), items))

    async def release(self, items: Sequence[tuple[str, str, bytes]]) -> None:
        """Spool envelopes made from held records, ``(held name, content key, line)``
        each, deleting the records in the same transaction; returns once committed.
        Nobody waits on a release's durability (its record is on disk), so it does not
        start a transaction: it rides with the next write that does, or is written
        ``linger`` seconds later. Waits while the spool is full, like
        :meth:`append_many`."""
        if not items:
            return
        await self._admit(len(items))
        await self._submit(_Write(self._future(), [(key, line) for _, key, line in items],
                                  [name for name, _, _ in items], urgent=False))

    async def hold(self, records: Mapping[str, bytes]) -> None:
        """Hold ``records`` (name -> bytes; a name held already is replaced) in one
        transaction; returns once committed and fsynced. Held records do not count
        against ``max_items``: their number is the caller's to bound."""
        if self._closed:
            raise _closed()
        if records:
            await self._submit(_Write(self._future(), holds=list(records.items())))

    async def held(self) -> list[tuple[str, bytes]]:
        """Every held record, oldest first, as ``(name, record)``."""
        return await self._run(self._held_sync)

    async def _admit(self, n: int) -> None:
        """Wait while the spool is full, then reserve room for ``n`` envelopes (all of
        them, even past ``max_items``: a caller's envelopes are never split)."""
        async with self._changed:
            await self._changed.wait_for(
                lambda: self._closed or self._count + self._reserved < self.max_items)
            if self._closed:
                raise _closed()
            self._reserved += n

    @staticmethod
    def _future() -> asyncio.Future[None]:
        return asyncio.get_running_loop().create_future()

    async def _submit(self, write: _Write) -> None:
        self._pending.append(write)
        if write.urgent:
            self._urgent = True
            self._start_writer()
        elif self._lingering is None:
            self._lingering = asyncio.get_running_loop().call_later(self.linger, self._linger_over)
        await write.future

    def _linger_over(self) -> None:
        self._lingering = None
        self._urgent = True
        self._start_writer()

    def _start_writer(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_pending())

    async def _write_pending(self) -> None:
        """Group commit: everything pending goes in one transaction, once something
        urgent is among it (what is left lingering waits for its timer)."""
        while self._pending and self._urgent:
            group, self._pending, self._urgent = self._pending, [], False
            if self._lingering is not None:  # what lingered rides with this group
                self._lingering.cancel()
                self._lingering = None
            error: BaseException | None = None
            inserted = 0
            try:
                inserted = await self._run(self._write_sync, group)
            except Exception as exc:
                error = exc
            async with self._changed:
                self._reserved -= sum(len(w.appends) for w in group)
                self._count += inserted
                self._changed.notify_all()
            if inserted:
                self.nonempty.set()
            for w in group:
                future = w.future
                if future.done():  # the caller was cancelled; the write happened anyway
                    continue
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)

    async def peek(self, limit: int, max_bytes: int) -> list[tuple[int, bytes]]:
        """The oldest rows, at most ``limit`` of them and ``max_bytes`` in all (but at
        least one row when there is any), as ``(seq, line)``."""
        return await self._run(self._peek_sync, limit, max_bytes)

    async def remove(self, seqs: Sequence[int], *, keep: Sequence[int] = (), now: float = 0.0,
                     retention: float = 0.0) -> None:
        """Delete answered rows (one fsynced transaction). The rows in ``keep`` (the
        ones the bureau has) are kept as delivered at ``now``; kept rows delivered more
        than ``retention`` seconds before ``now`` are dropped."""
        if not seqs:
            return
        removed = await self._run(self._remove_sync, list(seqs), list(keep), now, retention)
        async with self._changed:
            self._count -= removed
            self._changed.notify_all()

    async def resend(self, since: float) -> int:
        """Spool again every kept envelope delivered at or after ``since``, oldest first
        (beyond ``max_items`` if need be); returns how many were spooled."""
        added = await self._run(self._resend_sync, since)
        async with self._changed:
            self._count += added
            self._changed.notify_all()
        if added:
            self.nonempty.set()
        return added

    async def wait_empty(self) -> None:
        """Return when nothing is spooled; raises ``CLOSED`` if the spool closes first."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._closed or self.size == 0)
            if self.size and self._closed:
                raise _closed()

    async def close(self) -> None:
        """Finish spooling what was admitted, then close the database and release the
        lock. Appends and waits still blocked are woken with ``CLOSED``."""
        if self._closed:
            return
        self._closed = True
        async with self._changed:
            self._changed.notify_all()
        if self._lingering is not None:  # what lingers is written now
            self._lingering.cancel()
            self._linger_over()
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close_sync)
        self._executor.shutdown(wait=True)
