"""``bureau-reporter probe`` as a real process, for tests that signal or kill it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.proxy.process import ReporterProcess


class ProberProcess(ReporterProcess):
    command = "probe"
    started = re.compile(rb"ops on (http://\S+), spool ")
    listeners = ("--ops-listen",)

    def __init__(self, log: Path, config: Path, *args: str) -> None:
        super().__init__(log, "--config", str(config), *args)

    @property
    def ops_url(self) -> str:
        return self.urls[0]
