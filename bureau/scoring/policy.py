"""Scoring policies as data (SPEC §7, §7.1).

A policy is one JSON document in this package (``policy_v1.json`` to ``policy_v4.json``),
read through :mod:`importlib.resources`. The service serves a document's RFC 8785
canonical bytes (:func:`policy_bytes`) at ``GET /v1/policy`` and ``GET
/v1/policies/{hash}``, and writes their BLAKE3 hash (:func:`policy_hash`) into every
report scored by it.

Scoring code never uses a literal constant: it reads every number from a frozen
:class:`Policy` parsed from the document, so a new policy version is a new document.
What v2 adds (SPEC §7.1) is optional in the model, and absent from the v1 document:
its absence *is* v1's behaviour, so the v1 document and its hash never change. Likewise
what v4 adds (its evaluators' ``rates``, its score's ``posterior``), and what v4 no longer
reads (the weighted mean's prior and Wilson's ``z``, the evaluator weight's prior) is
optional for v4 and required of the documents before it.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reporters.wire import blake3_hex, canonical_json

POLICY_V1_RESOURCE: Final = "policy_v1.json"
POLICY_V2_RESOURCE: Final = "policy_v2.json"
POLICY_V3_RESOURCE: Final = "policy_v3.json"
POLICY_V4_RESOURCE: Final = "policy_v4.json"


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
#: The v4 document as shipped in ``policy_v4.json`` (SPEC §7.2 r4, docs/scoring.md).
POLICY_V4_DOCUMENT: Final[Mapping[str, Any]] = _load_document(POLICY_V4_RESOURCE)


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


class CallerRates(_Frozen):
    """v4 (docs/scoring.md "Policy v4"): an evaluator's rates of positive verdicts on right
    calls (``alpha``) and on wrong calls (``beta``), learned from ground truth only —
    probes, deliverable checks and witnessed admissions (``claimed: FAILURE``) — never
    from agreement. With ``e`` errors in ``n`` graded verdicts, the pooled error rate is
    ``eps = clamp((e + error_prior[0]) / (n + error_prior[0] + error_prior[1]),
    error_floor, error_ceiling)``; each side's own rate is pulled towards it by ``shrink``
    pseudo-verdicts and kept within the same bounds."""

    #: (errors, right verdicts) imagined before any is graded: a fresh key's rates
    error_prior: tuple[float, float]
    shrink: float = Field(ge=0)
    #: no evaluator counts as more exact than this: a record of readable truth can be
    #: copied, so a perfect one is not worth more than a careful honest caller's
    error_floor: float = Field(ge=0, lt=0.5)
    error_ceiling: float = Field(gt=0, le=0.5)
    #: a subject rates its evaluators only once at least this many evaluators have rated
    #: verdicts about it (a decoy only a ring calls rates nobody)
    established_raters: int = Field(ge=1)
    #: calibrated only once rated on at least this many distinct established subjects
    calibration_subjects: int = Field(ge=1)
    #: a calibrated evaluator's voice about one subject: its rated verdicts beyond
    #: ``calibration_samples``, divided by this, at most ``settling.per_evaluator_subject``
    #: verdicts (so a voice is earned by rated verdicts beyond calibration)
    samples_per_voice: float = Field(gt=0)
    #: what one verdict of a calibrated evaluator weighs before its voice is settled
    calibrated_weight: float = Field(gt=0)
    #: ``alpha - beta`` at most this, over ``uninformative_min_samples`` or more rated
    #: verdicts: its verdicts tell too little to count (weight 0)
    min_informedness: float = Field(ge=0, lt=1)
    #: rates are read to this many decimals: evaluators of like records then share one
    #: kind of verdict, which each agent's posterior sums once (and a rate that moves by
    #: less than that from one seal to the next re-scores nobody)
    decimals: int = Field(ge=1, le=6)


class EvaluatorRules(_Frozen):
    #: v1-v3: the prior of ``w_e = (n·J + k·w0) / (n + k)`` (k, w0); v4 has no such weight
    prior_samples: int | None = Field(default=None, ge=0)
    prior_weight: float | None = None
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
    #: v4: the rates a verdict is weighed by (absent: v1-v3, a weight and offsets)
    rates: CallerRates | None = None

    @model_validator(mode="after")
    def _weight_prior(self) -> EvaluatorRules:
        if self.rates is None and (self.prior_samples is None or self.prior_weight is None):
            raise ValueError("prior_samples and prior_weight are required without rates")
        return self

    @property
    def weight_prior(self) -> tuple[int, float]:
        """(k, w0) of v1-v3's evaluator weight."""
        assert self.prior_samples is not None and self.prior_weight is not None
        return self.prior_samples, self.prior_weight


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


class Posterior(_Frozen):
    """v4 (docs/scoring.md "Policy v4"): the score is a posterior over the agent's
    reliability ``r`` (the chance that an answer it does not admit is right) and its
    candour ``s`` (the chance that it does not admit a call), computed on a fixed grid of
    ``grid`` cells on each; its quality is ``q = r·s`` and its published value the
    outcome price ``s·(r·v(ACCEPTED) + (1 − r)·v(FAILED_DISCOVERED)) + (1 − s)·
    v(FAILED_ADMITTED)``."""

    grid: int = Field(ge=4, le=1000)
    #: Beta prior of r and of s: (a, b)
    reliability_prior: tuple[float, float]
    candour_prior: tuple[float, float]
    #: verdicts move r only within this central share of the agent's own ground truth's
    #: posterior of r (the trust region)
    trust_band: float = Field(gt=0, le=1)
    #: the published interval's credibility, for q at its low end and the value at its high
    interval: float = Field(gt=0, lt=1)


class ScoreRules(_Frozen):
    #: v1-v3: the weighted mean's prior and Wilson's z; v4 has a posterior instead
    prior_observations: float | None = Field(default=None, ge=0)
    prior_value: float | None = None
    wilson_z: float | None = None
    posterior: Posterior | None = None

    @model_validator(mode="after")
    def _one_model(self) -> ScoreRules:
        mean = (self.prior_observations, self.prior_value, self.wilson_z)
        if self.posterior is None and None in mean:
            raise ValueError("prior_observations, prior_value and wilson_z are required "
                             "without a posterior")
        return self

    @property
    def weighted_mean(self) -> tuple[float, float, float]:
        """(prior observations, prior value, Wilson's z) of v1-v3's score."""
        k, v, z = self.prior_observations, self.prior_value, self.wilson_z
        assert k is not None and v is not None and z is not None
        return k, v, z


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

    @model_validator(mode="after")
    def _posterior_parts(self) -> Policy:
        """A posterior (v4) weighs verdicts by their evaluators' rates and settles them,
        and tells an admitted failure among ground truth by its price (the score's terms
        carry values, not codes), so that price must be its own."""
        if self.score.posterior is None:
            return self
        if self.evaluators.rates is None or self.settling is None:
            raise ValueError("a posterior needs evaluators.rates and settling")
        values = self.outcomes.values
        if values["FAILED_ADMITTED"] in (values["ACCEPTED"], values["FAILED_DISCOVERED"]):
            raise ValueError("under a posterior FAILED_ADMITTED needs a price of its own")
        return self

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
    def posterior(self) -> Posterior | None:
        """v4's score model (None: v1-v3's weighted mean and Wilson interval)."""
        return self.score.posterior

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


@functools.cache
def policy_v4() -> Policy:
    """The v4 policy, parsed once."""
    return Policy.from_document(POLICY_V4_DOCUMENT)


# --------------------------------------------------------------------------- registry

#: Every policy this bureau knows, by the name ``BUREAU_POLICY`` gives it. A ledger names
#: its policies by hash (its ``genesis`` entry, ``policy`` entries, every report), so a
#: known policy is never removed: sealed epochs are rebuilt under their own (SPEC §7.1).
KNOWN_POLICIES: Final[Mapping[str, Mapping[str, Any]]] = MappingProxyType({
    "v1": POLICY_V1_DOCUMENT,
    "v2": POLICY_V2_DOCUMENT,
    "v3": POLICY_V3_DOCUMENT,
    "v4": POLICY_V4_DOCUMENT,
})
#: The policy a new ledger starts with when ``BUREAU_POLICY`` is unset (SPEC §10 r4).
DEFAULT_POLICY_NAME: Final = "v4"


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
