"""Where a static mirror keeps each public read (SPEC §9.1 r4; docs/operations.md, "A
static mirror"): the file paths ``bureau mirror DIR`` writes and ``bureau-check`` asks a
static web server for.

Every read without a query is kept at its own path (``/checkpoint`` at ``checkpoint``,
``/v1/agents/{agent}/report`` at ``v1/agents/{agent}/report``, the tiles at theirs).
Two kinds of read cannot be a file at their path, and are kept beside it:

* a read of one epoch, ``?epoch=E`` (a static server ignores the query): the report,
  proof bundle and card of epoch ``E`` at ``v1/agents/{agent}/epochs/{E}/{report,proof,
  card}``;
* ``/v1/checkpoints/{E}/note``, since ``v1/checkpoints/{E}`` is a file (the epoch's JSON
  checkpoint): at ``v1/checkpoints/{E}.note``.

The reads of the latest epoch at their own paths (``v1/agents/{agent}/report``, …,
``agents/{agent}``) are symbolic links to the files of that epoch.

A web server in front of the mirror can map the bureau's own URLs onto these
(ops/nginx/mirror.conf does); ``bureau-check`` asks for the files as they are. Pure.
"""

from __future__ import annotations

import posixpath

CHECKPOINT = "checkpoint"
BUREAU = "v1/bureau"
POLICY = "v1/policy"
LATEST_CHECKPOINT = "v1/checkpoints/latest"
HOME = "index.html"
#: what an agent's reads are called, as the last part of their paths
AGENT_READS = ("report", "proof", "card")


def agent_read(agent: str, name: str, epoch: int | None = None) -> str:
    """An agent's ``report``, ``proof`` or ``card``: the latest, or of ``epoch``."""
    if name not in AGENT_READS:
        raise ValueError(f"no mirrored read {name!r} of an agent")
    if epoch is None:
        return f"v1/agents/{agent}/{name}"
    return f"v1/agents/{agent}/epochs/{epoch}/{name}"


def checkpoint(epoch: int | None) -> str:
    """An epoch's signed JSON checkpoint (``None``: the latest)."""
    return LATEST_CHECKPOINT if epoch is None else f"v1/checkpoints/{epoch}"


def epoch_note(epoch: int) -> str:
    """An epoch's checkpoint as a signed note."""
    return f"v1/checkpoints/{epoch}.note"


def settlement(epoch: int) -> str:
    return f"v1/settlements/{epoch}"


def policy(digest: str) -> str:
    return f"v1/policies/{digest}"


def agent_page(agent: str) -> str:
    """The HTML page of an agent's latest report (``/agents/{agent}``)."""
    return f"agents/{agent}"


def agent_page_of(agent: str, epoch: int) -> str:
    """Where the mirror keeps the page of an agent's report of ``epoch``: the latest
    reads are links to the files of their epoch (``bureau.mirror.files``)."""
    return f"v1/agents/{agent}/epochs/{epoch}/page.html"


def latest_link(rel: str, target: str) -> str:
    """What a link at ``rel`` holds to point at ``target`` (both paths from the root):
    the path from ``rel``'s directory, so the mirror can be moved or copied whole."""
    return posixpath.relpath(target, posixpath.dirname(rel) or ".")
