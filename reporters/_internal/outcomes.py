"""What became of what a :class:`~reporters.Reporter` sent: a refused envelope
(:class:`Rejection`), one attempt to deliver a batch (:class:`Delivery`), and the
sender's own note that some envelopes must go again (:class:`Retry`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reporters._internal.errors import BureauClientError


@dataclass(frozen=True)
class Retry:
    """Some envelopes were not answered: back off (at least ``retry_after`` s) and
    send them again."""

    retry_after: float | None


def exc_result(exc: BureauClientError) -> dict[str, Any]:
    """A refusal of the whole request, as the per-line result it stands for."""
    return {"status": "rejected", "code": exc.code, "path": exc.path, "detail": exc.detail}


@dataclass(frozen=True)
class Delivery:
    """What one attempt to deliver a batch came to (passed to ``on_delivery``).

    When the bureau answered, ``failure`` is ``None`` and the counts say what became of
    the ``lines`` sent; ``first_seq``/``last_seq`` are the lowest and highest ledger seq
    among the accepted and duplicate lines (``None`` when there were none). When the
    whole attempt failed, ``failure`` is its code (``UNAVAILABLE``, ``PROTOCOL``,
    ``TOO_LARGE`` — the batch is halved —, the bureau's code for a whole-batch ``4xx``,
    ``SPOOL_ERROR``, or ``INTERNAL``), the counts are 0, and the lines are sent again.
    """

    lines: int
    accepted: int = 0
    duplicate: int = 0
    rejected: int = 0
    #: lines the bureau answered ``UNAVAILABLE`` for: kept and sent again
    unavailable: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    failure: str | None = None


@dataclass(frozen=True)
class Rejection:
    """An envelope the bureau refused. Final: it is not sent again."""

    #: the §6 reason code, e.g. ``CONFLICTING_FACT``
    code: str
    #: JSON Pointer into the envelope or payload
    path: str
    detail: str
    #: ``fact`` or ``probe``
    payload_type: str
    #: the payload as it was signed
    payload: dict[str, Any]
    #: the signed envelope as it was sent
    envelope: dict[str, Any]
