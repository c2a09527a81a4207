"""Scoring policy v1, as data (SPEC §7).

The policy is one JSON document, ``policy_v1.json`` in this package, read through
:mod:`importlib.resources`. :data:`POLICY_V1_DOCUMENT` *is* that document; the
service serves :func:`policy_bytes` (its RFC 8785 canonical bytes) at ``GET /v1/policy``
and writes :func:`policy_hash` (BLAKE3 of exactly those bytes) into every report.

Scoring code never uses a literal constant: it reads every number from a frozen
:class:`Policy` parsed from the document, so a new policy version is a new document and
nothing else.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from reporters.wire import blake3_hex, canonical_json

POLICY_V1_RESOURCE: Final = "policy_v1.json"


def _load_document(resource: str) -> Mapping[str, Any]:
    text = importlib.resources.files(__package__).joinpath(resource).read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return MappingProxyType(document)


#: The v1 policy document as shipped in ``policy_v1.json`` (read-only at the top level;
#: use :func:`policy_document` for a copy you may change).
POLICY_V1_DOCUMENT: Final[Mapping[str, Any]] = _load_document(POLICY_V1_RESOURCE)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CorrectionsRule(_Frozen):
    """``ACCEPTED_AFTER_CORRECTIONS``: ``max(floor, base - step * (corrections - 1))``."""

    base: float
    step: float
    floor: float


class OutcomeRules(_Frozen):
    values: dict[str, float]
    accepted_after_corrections: CorrectionsRule
    unscored: tuple[str, ...]


class SpendFactor(_Frozen):
    """``s = clamp(log10(1 + spent / divisor) / scale, min, max)``."""

    divisor: int = Field(gt=0)
    scale: float = Field(gt=0)
    min: float
    max: float


class Weights(_Frozen):
    reporter: float
    value_judgment: float
    spend_factor: SpendFactor


class ConstantRater(_Frozen):
    min_attestations: int
    min_subjects: int


class EvaluatorRules(_Frozen):
    prior_samples: int = Field(ge=0)
    prior_weight: float
    default_weight: float
    polarity_threshold: float
    constant_rater: ConstantRater


class ScoreRules(_Frozen):
    prior_observations: float = Field(ge=0)
    prior_value: float
    wilson_z: float


class Rounding(_Frozen):
    decimals: int = Field(ge=0)


class Policy(_Frozen):
    """A scoring policy, parsed from its document. Immutable; safe to share."""

    version: str
    outcomes: OutcomeRules
    weights: Weights
    evaluators: EvaluatorRules
    score: ScoreRules
    rounding: Rounding

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Policy:
        return cls.model_validate(document)

    # ----------------------------------------------------------------- helpers

    def outcome_value(self, code: str, corrections: int = 0) -> float:
        """The value of a scored outcome code (``KeyError`` for an unscored one)."""
        if code == "ACCEPTED_AFTER_CORRECTIONS":
            rule = self.outcomes.accepted_after_corrections
            return max(rule.floor, rule.base - rule.step * (max(corrections, 1) - 1))
        return self.outcomes.values[code]

    def is_unscored(self, code: str) -> bool:
        return code in self.outcomes.unscored

    def spend_factor(self, spent: int) -> float:
        sf = self.weights.spend_factor
        raw = math.log10(1 + max(spent, 0) / sf.divisor) / sf.scale
        return min(sf.max, max(sf.min, raw))

    def round(self, value: float) -> float:
        return round(value, self.rounding.decimals)

    @property
    def scored_codes(self) -> tuple[str, ...]:
        """Every code that carries a value, sorted."""
        return tuple(sorted({*self.outcomes.values, "ACCEPTED_AFTER_CORRECTIONS"}))


def policy_bytes(document: Mapping[str, Any] = POLICY_V1_DOCUMENT) -> bytes:
    """The canonical JSON bytes of a policy document: what ``GET /v1/policy`` serves."""
    return canonical_json(document)


def policy_hash(document: Mapping[str, Any] = POLICY_V1_DOCUMENT) -> str:
    """BLAKE3 (lowercase hex) of :func:`policy_bytes`: the ``policy`` field of a report."""
    return blake3_hex(policy_bytes(document))


def policy_document() -> dict[str, Any]:
    """A fresh copy of the v1 document (callers may not mutate the shared one)."""
    parsed: dict[str, Any] = json.loads(policy_bytes())
    return parsed


@functools.cache
def policy_v1() -> Policy:
    """The v1 policy, parsed once."""
    return Policy.from_document(POLICY_V1_DOCUMENT)


# --------------------------------------------------------------------------- registry

#: Every policy this bureau knows, by the name ``BUREAU_POLICY`` gives it. A ledger names
#: its policies by hash (its ``genesis`` entry, ``policy`` entries, every report), so a
#: known policy is never removed: sealed epochs are rebuilt under their own (SPEC §7.1).
KNOWN_POLICIES: Final[Mapping[str, Mapping[str, Any]]] = MappingProxyType({
    "v1": POLICY_V1_DOCUMENT,
})
#: The policy a new ledger starts with when ``BUREAU_POLICY`` is unset.
DEFAULT_POLICY_NAME: Final = "v1"


@functools.cache
def known_policy_hashes() -> Mapping[str, str]:
    """Policy hash -> its name, for every known policy."""
    return MappingProxyType({policy_hash(doc): name for name, doc in KNOWN_POLICIES.items()})


def policy_name_of(digest: str) -> str | None:
    """The name of the known policy with this hash, or None when the bureau has none."""
    return known_policy_hashes().get(digest)
