"""One sequencer per ``serve``: the process that commits every worker's submissions.

``bureau serve --workers N`` runs N processes on one port (SO_REUSEPORT). Each verifies
and decodes what it receives (stages 1–3, where the CPU goes), then hands the admitted-
stage units over a Unix socket in the serve's private run directory to one dedicated
sequencer process, whose :class:`~bureau.intake.committer.Committer` judges and appends
them (stages 4–6). With one committer per node instead of one per process, everything
pending from every worker joins one group: a group grows with the load, and the head
lock is taken once per group instead of once per process and group.

The head row lock stays the arbiter between nodes: the sequencer judges under it, from
state loaded under it, exactly like every other committer — several ``serve`` on one
database (or this node's workers committing themselves, below) stay one chain.

**When the sequencer is unreachable** (not started yet, killed, restarting — the serve
starts it again), a worker commits the unit itself through its own ``Committer``, under
the same head lock. That can never duplicate: a unit whose answer was lost with the
sequencer is judged again under the lock, and if it did commit, its envelopes are
recognised by content key and answered ``duplicate`` with the id and seq they were
given. Nothing is acknowledged before its COMMIT returned, on either path.

The frames are pickles: the socket's directory is made 0700 by the serve, and every
connection's peer must run as the same user (``SO_PEERCRED``), so only the serve's own
processes reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import socket
import struct
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bureau.errors import BureauError, Code, Pushback
from bureau.intake.committer import Committer
from bureau.intake.judging import Result
from bureau.intake.state import Submission

log = logging.getLogger(__name__)

#: the environment variable naming the socket, set by ``serve --workers N`` for every
#: process of that serve
SOCKET_ENV = "BUREAU_SEQUENCER_SOCKET"

#: a frame's header: the length of its pickle and the request id it answers
_HEADER = struct.Struct(">IQ")
_PEERCRED = struct.Struct("3i")  # pid, uid, gid
#: after a failed connect, how long a worker commits by itself before trying again (a
#: restart of the sequencer takes about a second; retrying each request would add a
#: connect to every one)
_RETRY_AFTER_SECONDS = 0.5

#: how long a worker waits for the sequencer's answer before it commits the unit itself
#: (a sequencer stopped or wedged; a group is milliseconds, a slow database seconds)
ANSWER_TIMEOUT_SECONDS = 30.0

#: the answers a frame carries: results, the BureauError the sequencer's committer raised,
#: or "unknown" — the sequencer cannot say whether the unit committed (a bug, a frame it
#: could not read), so the worker commits it itself
_OK, _ERROR, _UNKNOWN = "ok", "error", "unknown"


def _frame(request_id: int, body: Any) -> bytes:
    data = pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data), request_id) + data


async def _read_raw_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """A whole frame, not yet unpickled: one that cannot be read still leaves the stream
    at the next frame, so the connection's other requests go on."""
    size, request_id = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    return request_id, await reader.readexactly(size)


class SequencerServer:
    """The sequencer's side: answers each unit a worker sends with its committer's results
    (or the BureauError its committer raised: queue full, database away)."""

    def __init__(self, committer: Committer, path: Path) -> None:
        self.committer = committer
        self.path = path
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):  # the socket of a killed sequencer
            self.path.unlink()
        self._server = await asyncio.start_unix_server(self._connection, path=str(self.path))
        self.path.chmod(0o600)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        # the workers' connections too, before the committer stops: what they send from now
        # on they commit themselves, instead of being refused as "shutting down"
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        sock: socket.socket = writer.get_extra_info("socket")
        _, uid, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                     _PEERCRED.size))
        if uid != os.getuid():
            log.warning("refused a sequencer connection from uid %d", uid)
            writer.close()
            return
        self._writers.add(writer)
        try:
            while True:
                request_id, data = await _read_raw_frame(reader)
                task = asyncio.create_task(self._answer(writer, request_id, data))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the worker went away; what it sent still commits, unanswered
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, request_id: int,
                      data: bytes) -> None:
        """Always answers (or the worker would wait for the unit until its timeout)."""
        body: Any
        try:
            subs: list[Submission] = pickle.loads(data)
            results = await self.committer.submit(subs)
            body = (_OK, [(r.status, r.id, r.seq, r.error) for r in results])
        except BureauError as err:
            # Stopping: the worker commits it itself rather than refuse the client.
            body = (_UNKNOWN, None) if err.pushback is Pushback.SHUTTING_DOWN else (_ERROR, err)
        except Exception:
            log.exception("sequencer: a unit could not be judged here; its worker commits it")
            body = (_UNKNOWN, None)
        if writer.is_closing():
            return
        writer.write(_frame(request_id, body))
        with contextlib.suppress(ConnectionError):
            await writer.drain()


class SequencerUnreachable(BureauError):
    """The unit may or may not have committed; the caller commits it itself (dedupe by
    content key makes that safe), so this never reaches a client. Were it to, it is
    what it means: nothing is known to be written, retry (``shutting_down``: the
    sequencer stopped)."""

    def __init__(self, detail: str) -> None:
        super().__init__(Code.UNAVAILABLE, "", detail, pushback=Pushback.SHUTTING_DOWN)


class SequencerLink:
    """A worker's side: one connection to the sequencer, shared by every request of
    the process, each request a frame with an id of its own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._connecting: asyncio.Lock | None = None
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0
        self._down_until = 0.0
        self._listener: asyncio.Task[None] | None = None

    async def submit(self, subs: Sequence[Submission]) -> list[Result]:
        """The sequencer's results for ``subs``; raises :class:`SequencerUnreachable`
        when it cannot say, or the BureauError the sequencer's committer raised."""
        writer = await self._connected()
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            writer.write(_frame(request_id, list(subs)))
        except (ConnectionError, RuntimeError, pickle.PicklingError) as exc:
            self._waiting.pop(request_id, None)
            raise SequencerUnreachable(str(exc)) from exc
        # shield: a client that hangs up does not abandon a unit others share a group with
        try:
            outcome, payload = await asyncio.wait_for(asyncio.shield(future),
                                                      ANSWER_TIMEOUT_SECONDS)
        except TimeoutError as exc:
            self._waiting.pop(request_id, None)
            raise SequencerUnreachable("the sequencer did not answer in time") from exc
        if outcome == _UNKNOWN:
            raise SequencerUnreachable("the sequencer could not say")
        if outcome == _ERROR:
            raise payload
        return [Result(status, entry_id, seq, error) for status, entry_id, seq, error in payload]

    async def _connected(self) -> asyncio.StreamWriter:
        if self._writer is not None and not self._writer.is_closing():
            return self._writer
        if time.monotonic() < self._down_until:
            raise SequencerUnreachable("the sequencer was unreachable moments ago")
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._writer is not None and not self._writer.is_closing():
                return self._writer
            try:
                reader, writer = await asyncio.open_unix_connection(str(self.path))
            except OSError as exc:
                self._down_until = time.monotonic() + _RETRY_AFTER_SECONDS
                raise SequencerUnreachable(str(exc)) from exc
            self._reader, self._writer = reader, writer
            self._listener = asyncio.create_task(self._listen(reader))
            return writer

    async def _listen(self, reader: asyncio.StreamReader) -> None:
        lost = SequencerUnreachable("the sequencer connection was closed")
        try:
            while True:
                request_id, data = await _read_raw_frame(reader)
                future = self._waiting.pop(request_id, None)
                if future is None or future.done():
                    continue
                try:
                    future.set_result(pickle.loads(data))
                except Exception as exc:  # an answer that cannot be read: commit it here
                    future.set_exception(SequencerUnreachable(f"unreadable answer: {exc!r}"))
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            lost = SequencerUnreachable(f"the sequencer connection was lost: {exc!r}")
        finally:
            # only this connection's state: a reconnect may already have replaced it
            if self._reader is reader:
                if self._writer is not None:
                    self._writer.close()
                self._reader = self._writer = None
                waiting, self._waiting = self._waiting, {}
                for future in waiting.values():
                    if not future.done():
                        future.set_exception(lost)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)


async def run_sequencer(committer: Committer, path: Path, stop: asyncio.Event) -> None:
    """Serve ``path`` with ``committer`` (started here, and stopped) until ``stop``."""
    await committer.start(own_thread=False)
    server = SequencerServer(committer, path)
    try:
        await server.start()
        await stop.wait()
    finally:
        await server.stop()
        await committer.stop()
