"""Exponential backoff with jitter, honouring the bureau's ``Retry-After``."""

from __future__ import annotations

import random
from collections.abc import Callable


class Backoff:
    """Delays for consecutive failed attempts: "equal jitter" exponential backoff.

    Attempt ``n`` (from 0) waits ``d/2 + uniform(0, d/2)`` with ``d = min(cap, base·2ⁿ)``:
    never less than half the exponential step (so a fleet of gateways cannot hammer a
    recovering bureau), never in lock-step (the jitter spreads them). When the bureau
    said ``Retry-After``, the delay is at least that. :meth:`reset` after a success.
    """

    def __init__(self, base: float = 0.1, cap: float = 30.0,
                 rng: Callable[[], float] = random.random) -> None:
        if base <= 0 or cap < base:
            raise ValueError("backoff needs 0 < base <= cap")
        self.base = base
        self.cap = cap
        self._rng = rng
        self.attempt = 0

    def next_delay(self, retry_after: float | None = None) -> float:
        """The delay before the next attempt; counts one more failure."""
        step = min(self.cap, self.base * 2.0 ** min(self.attempt, 62))
        self.attempt += 1
        delay = step / 2 + self._rng() * step / 2
        if retry_after is not None and retry_after > delay:
            delay = retry_after
        return delay

    def reset(self) -> None:
        self.attempt = 0
