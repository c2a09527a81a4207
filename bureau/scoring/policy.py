"""Scoring policies as data (SPEC §7, §7.1).

A policy is one JSON document in this package (``policy_v1.json``, ``policy_v2.json``,
``policy_v3.json``),
read through :mod:`importlib.resources`. The service serves a document's RFC 8785
canonical bytes (:func:`policy_bytes`) at ``GET /v1/policy`` and ``GET
/v1/policies/{hash}``, and writes their BLAKE3 hash (:func:`policy_hash`) into every
report scored by it.

Scoring code never uses a literal constant: it reads every number from a frozen
:class:`Policy` parsed from the document, so a new policy version is a new document.
What v2 adds (SPEC §7.1) is optional in the model, and absent from the v1 document:
its absence *is* v1's behaviour, so the v1 document and its hash never change.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from reporters.wire import blake3_hex, canonical_json

POLICY_V1_RESOURCE: Final = "policy_v1.json"
POLICY_V2_RESOURCE: Final = "policy_v2.json"
POLICY_V3_RESOURCE: Final = "policy_v3.json"


def _load_document(resource: str) -> Mapping[str, Any]:
    text = importlib.resources.files(__package__).joinpath(resource).read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return MappingProxyType(document)


#: The v1 policy document as shipped in ``policy_v1.json`` (read-only at the top level;
#: use :func:`policy_document` for a copy you may change).
POLICY_V1_DOCUMENT: Final[Mapping[str, Any]] = _load_document(POLICY_V1_RESOURCE)
#: The v2 document as shipped in ``policy_v2.json`` (SPEC §7.1).
POLICY_V2_DOCUMENT: Final[Mapping[str, Any]] = _load_document(POLICY_V2_RESOURCE)
#: The v3 document as shipped in ``policy_v3.json`` (SPEC §7.2, docs/scoring.md).
POLICY_V3_DOCUMENT: Final[Mapping[str, Any]] = _load_document(POLICY_V3_RESOURCE)


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
    #: what an admitted failure with no ground truth (rule 2, ``claimed: FAILURE``)
    #: weighs: a reporter's measurement (v1, v2), or what the interaction would have
    #: weighed had the agent claimed success — its caller's verdict, else the
    #: reporter's rules 6-7, else nothing (v3, docs/scoring.md "Policy v3")
    admission: Literal["reporter", "as_if_claimed_success"] = "reporter"


class ConstantRater(_Frozen):
    """v1: ``min_attestations`` or more attestations about ``min_subjects`` or more
    subjects, all with one outcome code -> weight 0 (any evaluator)."""

    min_attestations: int
    min_subjects: int


class PolarityConstantRater(_Frozen):
    """v2 (SPEC §7.1.4): a *provisional* evaluator at least ``min_share`` of whose
    ``min_verdicts`` or more verdicts (attestations and value judgments) about
    ``min_subjects`` or more subjects have one polarity -> weight 0."""

    min_verdicts: int = Field(ge=1)
    min_subjects: int = Field(ge=1)
    min_share: float = Field(gt=0, le=1)


class EvaluatorRules(_Frozen):
    prior_samples: int = Field(ge=0)
    prior_weight: float
    default_weight: float
    polarity_threshold: float
    constant_rater: ConstantRater | PolarityConstantRater
    #: what grades an evaluator: every ground truth (v1), or only probes recorded after
    #: the verdict (v2, SPEC §7.1.1)
    grading: Literal["ground_truth", "blind_probes"] = "ground_truth"
    #: ``J = 0`` with at least this many graded verdicts gives weight 0 (v2, §7.1.4)
    uninformative_min_samples: int | None = Field(default=None, ge=1)
    #: fewer graded verdicts than this: provisional (v2 ``N_cal``, §7.1.2); 0: nobody is
    calibration_samples: int = Field(default=0, ge=0)
    #: one recentring offset (v1) or one per polarity (v2, §7.1.5)
    offsets: Literal["one", "per_polarity"] = "one"


class Settling(_Frozen):
    """How an agent's verdict weights are settled (v2, SPEC §7.1 steps b-d). Absent
    (v1): a verdict of weight 0 still resolves its interaction and nothing is capped."""

    #: ``K``: an evaluator's verdicts about one subject count at most as K verdicts
    per_evaluator_subject: float = Field(gt=0)
    #: ``C_prov``: the provisional verdicts about one subject weigh at most this in total
    provisional_total: float = Field(gt=0)
    #: whom K binds: every evaluator (v2), or only the calibrated ones (v3: provisional
    #: verdicts are bounded together by ``C_prov``, each counting alike within it)
    per_evaluator_applies_to: Literal["all", "calibrated"] = "all"


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
    settling: Settling | None = None

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

    @property
    def blind_grading(self) -> bool:
        """Only probes recorded after a verdict grade its evaluator (v2)."""
        return self.evaluators.grading == "blind_probes"

    @property
    def admission_as_if_success(self) -> bool:
        """An unchecked admitted failure weighs what a claimed success would (v3)."""
        return self.weights.admission == "as_if_claimed_success"

    @property
    def per_polarity_offsets(self) -> bool:
        return self.evaluators.offsets == "per_polarity"

    @property
    def counts_value_judgments(self) -> bool:
        """Value judgments are in an evaluator's record (its constant-rater count, its
        verdicts given) — v2; under v1 only attestations are."""
        return isinstance(self.evaluators.constant_rater, PolarityConstantRater)


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


@functools.cache
def policy_v2() -> Policy:
    """The v2 policy, parsed once."""
    return Policy.from_document(POLICY_V2_DOCUMENT)


@functools.cache
def policy_v3() -> Policy:
    """The v3 policy, parsed once."""
    return Policy.from_document(POLICY_V3_DOCUMENT)


# --------------------------------------------------------------------------- registry

#: Every policy this bureau knows, by the name ``BUREAU_POLICY`` gives it. A ledger names
#: its policies by hash (its ``genesis`` entry, ``policy`` entries, every report), so a
#: known policy is never removed: sealed epochs are rebuilt under their own (SPEC §7.1).
KNOWN_POLICIES: Final[Mapping[str, Mapping[str, Any]]] = MappingProxyType({
    "v1": POLICY_V1_DOCUMENT,
    "v2": POLICY_V2_DOCUMENT,
    "v3": POLICY_V3_DOCUMENT,
})
#: The policy a new ledger starts with when ``BUREAU_POLICY`` is unset (SPEC §10).
DEFAULT_POLICY_NAME: Final = "v3"


@functools.cache
def known_policy_hashes() -> Mapping[str, str]:
    """Policy hash -> its name, for every known policy."""
    return MappingProxyType({policy_hash(doc): name for name, doc in KNOWN_POLICIES.items()})


def policy_name_of(digest: str) -> str | None:
    """The name of the known policy with this hash, or None when the bureau has none."""
    return known_policy_hashes().get(digest)


@functools.cache
def policy_named(name: str) -> Policy:
    """A known policy by name (``KeyError`` for an unknown one), parsed once."""
    return Policy.from_document(KNOWN_POLICIES[name])


@functools.cache
def policy_by_hash(digest: str) -> tuple[Policy, str]:
    """A known policy by hash, with its name (``KeyError`` for an unknown one)."""
    name = known_policy_hashes()[digest]
    return policy_named(name), name
