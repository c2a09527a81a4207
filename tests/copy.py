"""What the commands print, checked as a newcomer reads it (issue 24, row 8): no
reStructuredText a terminal shows raw, and no "1 entries"."""

from __future__ import annotations

import re

#: markup a terminal shows as it is
RST = re.compile(r"``|:(?:func|class|meth|mod|data|attr|exc):`")
#: "1" before a plural noun (not "1.5 entries", not "21 entries")
ONE_PLURAL = re.compile(
    r"(?<![\d.,])\b1 (entries|interactions|facts|reports|checkpoints|goals|envelopes|calls|"
    r"epochs|agents|probes|verdicts|standbys|seconds|processes|routes|keys)\b")


def copy_faults(text: str) -> list[str]:
    """Every fault of wording in ``text``: markup and bad plurals, with their context."""
    faults = [f"markup: {text[max(0, m.start() - 30):m.end() + 30]!r}"
              for m in RST.finditer(text)]
    faults += [f"plural: {text[max(0, m.start() - 30):m.end() + 10]!r}"
               for m in ONE_PLURAL.finditer(text)]
    return faults


def assert_plain(text: str) -> None:
    faults = copy_faults(text)
    assert not faults, "\n".join(faults)
