"""A mirror directory and how files get into it.

Every file is written under a temporary name in the directory's own ``.mirror/tmp``
(the same file system), then renamed over its path: a reader, and a process killed at
any instant, sees the old file or the new one, never part of one. Each process keeps its
temporary files in a directory named after it and removes those of processes that are
gone, so a killed run leaves nothing behind once the next one starts.

A full tile is written once: :meth:`MirrorDir.write_new` leaves a file that is already
there at its full length as it is. Before the files that say "this is current" (the
``checkpoint``, ``v1/checkpoints/latest``) move, :meth:`MirrorDir.barrier` asks the
kernel to make everything written so far durable (``syncfs`` on Linux), so that after a
power cut no checkpoint names a tile that was lost.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import itertools
import os
import shutil
from collections.abc import Callable
from pathlib import Path

#: the mirror's own files: temporary files and the state; a web server serves no
#: path starting with a dot (ops/nginx/mirror.conf)
OWN = ".mirror"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class MirrorDir:
    """The directory ``root`` and the files written into it by this process."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.own = root / OWN
        self.tmp = self.own / "tmp" / str(os.getpid())
        self.written = 0
        self._dirs: set[Path] = set()
        self._names = itertools.count()

    def prepare(self) -> None:
        """Make the directory, and remove what killed runs left in ``.mirror/tmp``."""
        self.tmp.mkdir(parents=True, exist_ok=True)
        for other in self.tmp.parent.iterdir():
            if other.name.isdigit() and int(other.name) != os.getpid() \
                    and not _alive(int(other.name)):
                shutil.rmtree(other, ignore_errors=True)

    def path(self, rel: str) -> Path:
        return self.root / rel

    def read(self, rel: str) -> bytes | None:
        try:
            return self.path(rel).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, rel: str, data: bytes) -> None:
        """``data`` at ``rel``, replacing what was there in one rename."""
        target = self.path(rel)
        parent = target.parent
        if parent not in self._dirs:
            os.makedirs(parent, exist_ok=True)
            self._dirs.add(parent)
        tmp = self.tmp / str(next(self._names))
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
        self.written += 1

    def write_new(self, rel: str, data: bytes) -> bool:
        """``data`` at ``rel`` unless a file of its length is there already (a full
        tile, written once); whether it was written."""
        try:
            if self.path(rel).stat().st_size == len(data):
                return False
        except FileNotFoundError:
            pass
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


def _syncfs() -> Callable[[int], int] | None:
    """``syncfs(2)``: the mirror's file system alone (Linux); None elsewhere."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        found: Callable[[int], int] = libc.syncfs
        return found
    return None


_SYNCFS = _syncfs()
