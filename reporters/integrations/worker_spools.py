"""One spool per worker process, under one configured directory.

A gateway such as LiteLLM's proxy runs several worker processes from one config. A
spool belongs to one process (its ``flock``), so the directory is divided into slots,
``worker-0``, ``worker-1``, …: each process takes the first slot no live process holds,
and keeps it until it exits. A slot left by a process that died — with facts not yet
delivered, or attempts still held — is free again: the next process to start takes it
over as its own slot, and a running process adopts any other free slot it finds
(:meth:`WorkerSpools.orphans`), settles what it held and delivers it. So every worker's
facts reach the bureau, whatever the number of workers from one start to the next.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

from reporters import Reporter
from reporters._internal.errors import BureauClientError

SLOT_PREFIX = "worker-"
#: more slots than any gateway runs workers: past this, something is leaking processes
MAX_SLOTS = 1024


def _slot_number(path: Path) -> int | None:
    suffix = path.name.removeprefix(SLOT_PREFIX)
    return int(suffix) if path.name.startswith(SLOT_PREFIX) and suffix.isdigit() else None


class WorkerSpools:
    """The slots under ``base``; ``open_reporter(slot directory)`` makes the reporter of
    one (not yet started)."""

    def __init__(self, base: Path, open_reporter: Callable[[Path], Reporter]) -> None:
        self.base = base
        self._open_reporter = open_reporter
        #: this process's own slot, once claimed
        self.slot: Path | None = None

    async def _take(self, slot: Path) -> Reporter | None:
        """The slot's reporter, started (its spool open and locked), or None when a
        live process holds it."""
        reporter = self._open_reporter(slot)
        try:
            await reporter.start()
        except BureauClientError as exc:
            await reporter.close()
            if exc.code == "SPOOL_IN_USE":
                return None
            raise
        return reporter

    async def claim(self) -> Reporter:
        """This process's slot: the first one free (a dead process's slot is taken over
        with what it left). Raises ``SPOOL_IN_USE`` when all are held, ``SPOOL_ERROR``
        when the disk refuses."""
        for n in range(MAX_SLOTS):
            slot = self.base / f"{SLOT_PREFIX}{n}"
            reporter = await self._take(slot)
            if reporter is not None:
                self.slot = slot
                return reporter
        raise BureauClientError("SPOOL_IN_USE", "",
                                f"all {MAX_SLOTS} worker spools in {self.base} are in use")

    async def orphans(self) -> AsyncIterator[tuple[Path, Reporter]]:
        """Every other slot no live process holds, each taken (locked) and started, with
        its directory: the caller settles and delivers what it holds, then closes it."""
        if not self.base.is_dir():
            return
        slots = sorted((n, p) for p in self.base.iterdir()
                       if (n := _slot_number(p)) is not None and p != self.slot)
        for _, slot in slots:
            reporter = await self._take(slot)
            if reporter is not None:
                yield slot, reporter


__all__ = ["MAX_SLOTS", "SLOT_PREFIX", "WorkerSpools"]
