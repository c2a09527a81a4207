"""Interaction ids ``<proxy-id>:<n>`` (the prober's ``<prober-id>:<n>``), unique per
daemon across restarts.

The counter is leased in blocks: ``ids.json`` in the spool directory records the first
number *not yet leased*, written (fsynced, atomically renamed) before any number of a
new block is used. A restart resumes after the last lease, so numbers are never reused;
a crash skips at most one block's unused numbers, which costs nothing (ids are names,
not a sequence anyone counts on). One fsync per block, not per call.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE = "ids.json"


class InteractionIds:
    def __init__(self, spool_dir: Path, proxy_id: str, block: int = 1000) -> None:
        self._path = spool_dir / FILE
        self._proxy_id = proxy_id
        self._block = block
        self._next = 0
        self._leased = 0
        if self._path.exists():
            doc = json.loads(self._path.read_text())
            if doc.get("proxy_id") != proxy_id:
                # Another proxy id on this spool: its ids live in another namespace,
                # but say so rather than mixing two proxies' bookkeeping silently.
                raise ValueError(f"{self._path} belongs to proxy id {doc.get('proxy_id')!r}")
            self._next = self._leased = int(doc["next"])

    def next(self) -> str:
        if self._next >= self._leased:
            self._lease(self._next + self._block)
        n = self._next
        self._next += 1
        return f"{self._proxy_id}:{n:06d}"

    def _lease(self, upto: int) -> None:
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump({"proxy_id": self._proxy_id, "next": upto}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)
        dir_fd = os.open(self._path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._leased = upto
