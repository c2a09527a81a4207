"""A progress bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total = 0
        self.done = 0
        self.text = ""

    def start(self, total: int) -> None:
        self.total, self.done = total, 0
        self._draw()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def label(self, text: str) -> None:
        self.text = text
        self._draw()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _draw(self) -> None:
        if not self.enabled or self.total == 0:
            return
        width = 30
        filled = width * min(self.done, self.total) // self.total
        self.stream.write(f"\r\033[K[{'#' * filled}{'.' * (width - filled)}] "
                          f"{self.done}/{self.total} {self.text}")
        self.stream.flush()
