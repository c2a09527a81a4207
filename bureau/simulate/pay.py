"""The evaluators' pool in the simulations (SPEC §8.2): open a pool before the traffic,
and after the last seal read every settled epoch as the public and each evaluator would —
the signed document, then each evaluator's own row and proof with its own key — checked
with the client library (:func:`reporters.verify_settlement`, :func:`reporters.verify_share`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import nacl.signing

from reporters import Admin, Agent, Rejected, verify_settlement, verify_share, wire


async def open_pool(admin: Admin, units: int, epoch_seconds: int) -> int:
    """A pool of ``units`` from the bureau's current epoch on; returns that epoch."""
    epoch = int(time.time() // epoch_seconds)
    for attempt in range(3):
        try:
            await admin.set_pool(units, epoch + attempt)
            return epoch + attempt
        except Rejected as err:  # the epoch turned over between the clock and the bureau
            if err.code != "STALE_UPDATE" or err.path != "/from_epoch":
                raise
    raise RuntimeError("the bureau refused a pool from its current epoch three times")


@dataclass
class Payroll:
    """What the settled epochs paid: the documents, and units per evaluator key."""

    documents: list[dict[str, Any]] = field(default_factory=list)
    units: dict[str, int] = field(default_factory=dict)
    #: key -> its scores (g·J) summed over the epochs: what units are proportional to
    #: within one epoch, and comparable across epochs, whoever else was paid
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def pool(self) -> int:
        return sum(d["pool"] for d in self.documents)

    @property
    def paid(self) -> int:
        return sum(d["paid"] for d in self.documents)

    @property
    def unpaid(self) -> int:
        return sum(d["unpaid"] for d in self.documents)

    def share(self, keys: Iterable[str]) -> float:
        """The share of everything paid that went to ``keys``."""
        return sum(self.units.get(k, 0) for k in keys) / self.paid if self.paid else 0.0


async def payroll(http: aiohttp.ClientSession, url: str, bureau_kid: str,
                  epochs: Iterable[int], keys: Iterable[nacl.signing.SigningKey]) -> Payroll:
    """Every settled epoch among ``epochs``, and what each of ``keys`` was paid."""
    out = Payroll()
    keys = list(keys)
    for epoch in epochs:
        async with http.get(f"{url}/v1/settlements/{epoch}") as resp:
            if resp.status == 404:
                continue
            resp.raise_for_status()
            doc = verify_settlement(json.loads(await resp.read()), bureau_kid, epoch)
        out.documents.append(doc)
        for key in keys:
            kid = wire.signing_key_id(key)
            async with Agent(key, url, session=http) as me:
                answer = await me.settlement(epoch)
            units = verify_share(answer, doc, kid)
            out.units[kid] = out.units.get(kid, 0) + units
            if units:
                out.scores[kid] = out.scores.get(kid, 0.0) + answer["row"]["score"]
    return out
