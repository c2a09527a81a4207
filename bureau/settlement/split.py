"""Largest remainder, in integers (SPEC §8.2).

Each evaluator gets ``floor(pool · score / Σscore)``; the units left over (fewer than
the number of evaluators) go one each to the largest remainders, ties broken by key id
in byte order. Scores are whole numbers (``score · 10^6``), so nothing here is a float
and every implementation gets the same units: conservation first, proportional to
within one unit.
"""

from __future__ import annotations

from collections.abc import Mapping


def largest_remainder(pool: int, scores: Mapping[str, int]) -> dict[str, int]:
    """Units per key. They sum to ``pool`` exactly when some score is above zero; when
    every score is zero (or there are none) every key gets 0 and the whole pool is
    unpaid — the caller says so."""
    if pool < 0 or any(s < 0 for s in scores.values()):
        raise ValueError("a pool and its scores are not negative")
    total = sum(scores.values())
    if total == 0:
        return dict.fromkeys(scores, 0)
    units: dict[str, int] = {}
    remainders: dict[str, int] = {}
    for key, score in scores.items():
        units[key], remainders[key] = divmod(pool * score, total)
    left = pool - sum(units.values())
    # largest remainder first; among equal remainders the smaller key id in byte order
    for key in sorted(scores, key=lambda k: (-remainders[k], k.encode()))[:left]:
        units[key] += 1
    return units
