"""A mirror directory and how files get into it.

Every file is written under a temporary name beside it (``.<name>.<pid>-<n>.tmp``: a
rename within one directory costs a third of one across directories, measured), then
renamed over its path: a reader, and a process killed at any instant, sees the old file
or the new one, never part of one. A process marks itself as writing
(``.mirror/writing/<pid>``) and unmarks itself when its pass is done; the next one to
find the mark of a process that is gone sweeps the temporary files it left (one walk of
the directory, only after a kill), so a killed run leaves nothing behind.

The writes are done off the event loop (``bureau serve --mirror`` writes from a serving
process), gathered in a :class:`Writes` and spread over :data:`THREADS` threads: the
kernel's file operations release the GIL, and a disk overlaps them.

A full tile is written once: :meth:`MirrorDir.write_new` leaves a file that is already
there at its full length as it is. Before the files that say "this is current" (the
``checkpoint``, ``v1/checkpoints/latest``) move, :meth:`MirrorDir.barrier` asks the
kernel to make everything written so far durable (``syncfs`` on Linux), so that after a
power cut no checkpoint names a tile that was lost.

A file that cannot be written (a full disk, a directory not writable) ends the pass
with :class:`CannotWrite`, its temporary file removed: the mirror stays as it was,
whole, and the next pass starts again from its own files.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import itertools
import os
import re
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bureau.errors import InternalError

#: the mirror's own files (the state, who is writing); a web server serves no path
#: starting with a dot (ops/nginx/mirror.conf), and so no temporary file either
OWN = ".mirror"
_TEMPORARY = re.compile(r"\..+\.[0-9]+-[0-9]+\.tmp")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class CannotWrite(InternalError):
    """A file of the mirror could not be written (``str()``: which, and why)."""

    def __init__(self, path: Path, exc: OSError) -> None:
        #: why, without the file: the same for every file of a full disk
        self.reason = exc.strerror or str(exc)
        super().__init__(f"cannot write {path}: {self.reason}")


#: threads that write the files of a batch
THREADS = 4
#: no batch is split into parts smaller than this (a thread's turn costs ~20 µs)
_PART = 64


class MirrorDir:
    """The directory ``root`` and the files written into it by this process."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.own = root / OWN
        self.marks = self.own / "writing"
        self.written = 0
        self._dirs: set[Path] = set()
        self._names = itertools.count()
        self._suffix = f".{os.getpid()}-"
        self._threads: ThreadPoolExecutor | None = None

    def batch(self) -> Writes:
        return Writes(self)

    async def run(self, ops: list[Op]) -> None:
        """Do ``ops`` on the writer threads, in parts; return once all are done."""
        if not ops:
            return
        if self._threads is None:
            self._threads = ThreadPoolExecutor(THREADS, thread_name_prefix="mirror")
        size = max(_PART, -(-len(ops) // THREADS))
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._threads, _apply, ops[at:at + size])
                               for at in range(0, len(ops), size)))
        self.written += len(ops)

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None

    def prepare(self) -> None:
        """Make the directory, sweep what killed runs left, mark this process writing."""
        try:
            self.marks.mkdir(parents=True, exist_ok=True)
            gone = [m for m in self.marks.iterdir() if m.name.isdigit()
                    and int(m.name) != os.getpid() and not _alive(int(m.name))]
            if gone:
                self.sweep()
                for mark in gone:
                    mark.unlink(missing_ok=True)
            (self.marks / str(os.getpid())).touch()
        except OSError as exc:
            raise CannotWrite(self.marks, exc) from None

    def done(self) -> None:
        """This process's pass ended: nothing of it is left to sweep."""
        (self.marks / str(os.getpid())).unlink(missing_ok=True)

    def sweep(self) -> int:
        """Remove every temporary file of this module's in the directory; how many."""
        removed = 0
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != OWN]
            for name in names:
                if _TEMPORARY.fullmatch(name):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(os.path.join(folder, name))
                        removed += 1
        return removed

    def _temporary(self, target: Path) -> Path:
        parent = target.parent
        if parent not in self._dirs:
            os.makedirs(parent, exist_ok=True)
            self._dirs.add(parent)
        return parent / f".{target.name}{self._suffix}{next(self._names)}.tmp"

    def path(self, rel: str) -> Path:
        return self.root / rel

    def read(self, rel: str) -> bytes | None:
        try:
            return self.path(rel).read_bytes()
        except FileNotFoundError:
            return None

    def _put(self, target: Path, make: Callable[[Path], object]) -> None:
        """``make`` a file at a temporary name beside ``target``, then rename it over
        ``target``; when either fails, the temporary file goes (:class:`CannotWrite`)."""
        tmp = None
        try:
            tmp = self._temporary(target)
            make(tmp)
            os.replace(tmp, target)
        except OSError as exc:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise CannotWrite(target, exc) from None

    def write(self, rel: str, data: bytes) -> None:
        """``data`` at ``rel``, replacing what was there in one rename."""
        self._put(self.path(rel), lambda tmp: tmp.write_bytes(data))

    def link(self, rel: str, target: str) -> None:
        """A symbolic link at ``rel`` to ``target`` (relative to ``rel``'s directory),
        replacing what was there in one rename. Replacing a regular file makes ext4
        write the new file's data out at the rename (``auto_da_alloc``): measured 1.3 ms
        a file on a loaded machine against 0.1–0.3 ms for a new file, so what is
        re-pointed each epoch (the latest reads) is a link to that epoch's file."""
        self._put(self.path(rel), lambda tmp: os.symlink(target, tmp))

    def write_new(self, rel: str, data: bytes) -> bool:
        """``data`` at ``rel`` unless a file of its length is there already (a full
        tile, written once); whether it was written."""
        try:
            if self.path(rel).stat().st_size == len(data):
                return False
        except OSError:
            pass  # not there (or not reachable: the write says why)
        self.write(rel, data)
        return True

    def remove_tree(self, rel: str) -> None:
        shutil.rmtree(self.path(rel), ignore_errors=True)

    def barrier(self) -> None:
        """Everything written so far is durable before anything written after it."""
        fd = os.open(self.root, os.O_RDONLY)
        try:
            if _SYNCFS is None or _SYNCFS(fd) != 0:
                os.sync()
        finally:
            os.close(fd)


#: one file operation: a bound method of MirrorDir and its arguments
Op = tuple[Callable[[str, Any], object], str, Any]


def _apply(ops: list[Op]) -> None:
    for method, rel, arg in ops:
        method(rel, arg)


class Writes:
    """File operations gathered to be done together, off the event loop
    (:meth:`MirrorDir.run`): ``await writes.done()``."""

    def __init__(self, mirror: MirrorDir) -> None:
        self.mirror = mirror
        self.ops: list[Op] = []

    def write(self, rel: str, data: bytes) -> None:
        self.ops.append((self.mirror.write, rel, data))

    def write_new(self, rel: str, data: bytes) -> None:
        self.ops.append((self.mirror.write_new, rel, data))

    def link(self, rel: str, target: str) -> None:
        self.ops.append((self.mirror.link, rel, target))

    async def done(self) -> None:
        ops, self.ops = self.ops, []
        await self.mirror.run(ops)


def _syncfs() -> Callable[[int], int] | None:
    """``syncfs(2)``: the mirror's file system alone (Linux); None elsewhere."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        found: Callable[[int], int] = libc.syncfs
        return found
    return None


_SYNCFS = _syncfs()
