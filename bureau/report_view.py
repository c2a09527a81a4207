"""One agent's report, kept up to date piece by piece (used by :mod:`bureau.derive`).

A report payload is made of three kinds of parts:

* **static** — outcomes, unscored, probes, reliability, excluded, name: functions of the
  agent's own entries. Kept as counters that a re-resolved cluster adds itself to and
  takes itself out of, so a seal pays for the clusters that changed, not the history;
* **score** — score and value-judgment share: re-summed when the agent's entries or the
  weights of its evaluators change;
* **seal** — epoch and ledger: the same for every agent of an epoch.

The payload bytes are spliced from the canonical bytes of each part: RFC 8785 writes an
object's members in sorted key order, and the report's keys are fixed, so the bytes of
the whole are the bytes of the parts in that order (``REPORT_KEYS``). The tests hold
the result equal to ``wire.canonical_json`` of the reference payload.

What this module repeats of the scoring library is counting (``_reliability``, the
outcome tallies of ``build_report_payload``) and the score arithmetic of
``score_agent``; ``tests/reports/test_derive_equivalence.py`` holds them equal.
"""

from __future__ import annotations

import bisect
import json
import math
from collections import Counter
from typing import Any

from bureau.scoring.inputs import (
    EXCLUSION_REASONS,
    Attestation,
    Fact,
    Probe,
    ValueJudgment,
)
from bureau.scoring.outcomes import InteractionKey, Resolution
from bureau.scoring.policy import Policy
from bureau.scoring.report import nearest_rank, wilson_interval
from reporters import wire

#: A report's keys in RFC 8785 order (a test checks this is their sorted order).
REPORT_KEYS = ("agent", "epoch", "excluded", "ledger", "name", "outcomes", "policy",
               "probes", "reliability", "score", "unscored", "value_judgment_share")
assert list(REPORT_KEYS) == sorted(REPORT_KEYS)


class _SlowPath(Exception):
    pass


def _prepare(value: Any) -> Any:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return int(value)  # JCS writes 1.0 as 1, exactly as it writes the int 1
        if 1e-4 <= abs(value) < 1e16:
            return value  # repr is plain decimal here: the same digits as ECMAScript
        raise _SlowPath
    if isinstance(value, dict):
        if not all(k.isascii() for k in value):
            raise _SlowPath  # code-point and UTF-16 key orders agree on ASCII only
        return {k: _prepare(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_prepare(v) for v in value]
    return value


def encode(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value made of report-shaped parts.

    A fast path over the C JSON encoder where it provably writes what
    :func:`reporters.wire.canonical_json` writes (ASCII keys; floats that Python and
    ECMAScript print alike); anything else goes to ``wire.canonical_json`` itself.
    """
    try:
        prepared = _prepare(value)
    except _SlowPath:
        return wire.canonical_json(value)
    return json.dumps(prepared, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


ClusterKey = tuple[str, str, str, str]  # ("i"|"e", reporter, interaction|engagement, subject)
#: what a resolution not decided by an evaluator leaves: (code, scored, weight, value,
#: rule). There are a few dozen distinct ones, so they are shared (see :func:`compact`)
#: instead of keeping ~0.2 KiB of Resolution and Unit per interaction.
Compact = tuple[str | None, bool, float, float, int]
_COMPACT: dict[Compact, Compact] = {}


def compact(r: Resolution) -> Resolution | Compact:
    """Keep an evaluator-decided resolution whole (its weight moves); reduce any other
    to the shared tuple of what it adds to the report."""
    if r.scored and r.rule in (3, 4):
        return r
    c = (r.code, r.scored, r.weight, r.value if r.value is not None else 0.0, r.rule)
    return _COMPACT.setdefault(c, c)
Evidential = Fact | Probe | Attestation | ValueJudgment


class Cluster:
    """Entries about one interaction (or one engagement) of one agent: nothing outside
    a cluster changes how its units resolve."""

    __slots__ = ("atts", "counted_facts", "counted_probes", "facts", "probes", "res", "vjs")

    def __init__(self) -> None:
        self.facts: tuple[Fact, ...] = ()
        self.probes: tuple[Probe, ...] = ()
        self.atts: tuple[Attestation, ...] = ()
        self.vjs: tuple[ValueJudgment, ...] = ()
        self.res: tuple[Resolution | Compact, ...] = ()
        # what the agent's counters hold of this cluster: its non-excluded facts and
        # probes as of its last resolution (the same tuples when none is excluded)
        self.counted_facts: tuple[Fact, ...] = ()
        self.counted_probes: tuple[Probe, ...] = ()

    def add(self, item: Evidential) -> None:
        if isinstance(item, Fact):
            self.facts += (item,)
        elif isinstance(item, Probe):
            self.probes += (item,)
        elif isinstance(item, Attestation):
            self.atts += (item,)
        else:
            self.vjs += (item,)

    def absorb(self, other: Cluster) -> None:
        for group in (other.facts, other.probes, other.atts, other.vjs):
            for item in group:
                self.add(item)


class AgentState:
    """What the deriver knows of one agent, and its report in pieces."""

    __slots__ = ("answered", "clusters", "codes", "enrolled", "excluded", "fixed",
                 "latencies", "name", "observed", "probe_counts", "promises", "score_bytes",
                 "static_bytes", "truth", "verdicts", "wf_ok", "wf_seen")

    def __init__(self) -> None:
        self.clusters: dict[ClusterKey, Cluster] = {}
        #: ground truth of the agent's interactions (the library's truth_index)
        self.truth: dict[InteractionKey, bool] = {}
        self.name: str | None = None
        self.enrolled = False
        #: this agent's excluded entries: entry id -> (seq, kind label)
        self.excluded: dict[str, tuple[int, str]] = {}
        # counters over the clusters' last resolution
        self.codes: Counter[tuple[str, bool]] = Counter()
        self.probe_counts = [0, 0]  # passed, failed (non-excluded probes)
        self.observed = self.answered = self.wf_seen = self.wf_ok = 0
        self.latencies: list[int] = []  # sorted
        self.promises: dict[str, list[int]] = {}  # promise -> [kept, broken]
        # score inputs: (weight, value, rule) not decided by an evaluator, and the
        # scored resolutions that an evaluator decided (rules 3 and 4)
        self.fixed: Counter[tuple[float, float, int]] = Counter()  # term -> how many
        self.verdicts: list[Resolution] = []  # a plain list of references: small
        self.static_bytes: tuple[bytes, bytes, bytes, bytes] = (b"", b"", b"", b"")
        self.score_bytes = (b"null", b"0")

    # ----------------------------------------------------------------- counting

    def count(self, cl: Cluster, sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) one cluster's counted contribution."""
        for r in cl.res:
            if isinstance(r, Resolution):  # scored, rule 3 or 4
                assert r.code is not None
                self.codes[(r.code, True)] += sign
                if sign > 0:
                    self.verdicts.append(r)
                else:  # by identity: equal-valued resolutions may be distinct units
                    vs = self.verdicts
                    del vs[next(i for i, x in enumerate(vs) if x is r)]
                continue
            code, scored, weight, value, rule = r
            if code is not None:
                self.codes[(code, scored)] += sign
            if scored:
                self.fixed[(weight, value, rule)] += sign
        for p in cl.counted_probes:
            self.probe_counts[0 if p.passed else 1] += sign
        for f in cl.counted_facts:  # as bureau.scoring.report._reliability
            self.observed += sign
            if f.answered:
                self.answered += sign
                if f.latency_ms is not None:
                    if sign > 0:
                        bisect.insort(self.latencies, f.latency_ms)
                    else:
                        del self.latencies[bisect.bisect_left(self.latencies, f.latency_ms)]
            if f.well_formed is not None:
                self.wf_seen += sign
                self.wf_ok += sign * f.well_formed
            for pr in f.promises:
                counts = self.promises.setdefault(pr.promise, [0, 0])
                counts[0 if pr.kept else 1] += sign
                if counts == [0, 0]:
                    del self.promises[pr.promise]

    # ----------------------------------------------------------------- payload parts

    def restatic(self, agent: str, policy: Policy, policy_hash: str,
                 reasons: dict[str, str]) -> None:
        """Re-encode the static parts from the counters (as build_report_payload)."""
        outcomes = dict.fromkeys(policy.scored_codes, 0)
        unscored = dict.fromkeys(policy.outcomes.unscored, 0)
        for (code, scored), n in self.codes.items():
            if n:
                table = outcomes if scored else unscored
                table[code] = table.get(code, 0) + n
        excluded = dict.fromkeys(EXCLUSION_REASONS, 0)
        for eid in self.excluded:
            excluded[reasons[eid]] += 1
        rnd, obs = policy.round, self.observed
        reliability = {
            "observed": obs,
            "answer_rate": rnd(self.answered / obs) if obs else None,
            "well_formed_rate": rnd(self.wf_ok / self.wf_seen) if self.wf_seen else None,
            "latency_ms": {"p50": nearest_rank(self.latencies, 50),
                           "p95": nearest_rank(self.latencies, 95)},
            "promises": {k: {"kept": v[0], "broken": v[1]}
                         for k, v in sorted(self.promises.items())},
        }
        probes = {"passed": self.probe_counts[0], "failed": self.probe_counts[1]}
        # One encoder call for the whole payload, with markers where the per-seal and
        # per-score parts go ("\u0000" cannot occur otherwise: no free text holds
        # control characters, and key ids and codes are plain ASCII).
        whole = encode({"agent": agent, "epoch": "\x000", "excluded": excluded,
                        "ledger": "\x001", "name": self.name, "outcomes": outcomes,
                        "policy": policy_hash, "probes": probes, "reliability": reliability,
                        "score": "\x002", "unscored": unscored,
                        "value_judgment_share": "\x003"})
        parts = whole.split(b'"\\u0000')
        assert len(parts) == 5 and all(p[:2] == b'%d"' % i for i, p in enumerate(parts[1:]))
        self.static_bytes = (parts[0], parts[1][2:], parts[2][2:], parts[3][2:])
        assert parts[4][2:] == b"}"

    def rescore(self, policy: Policy, weights: dict[str, tuple[float, float]]) -> None:
        """Re-sum the score with the evaluators' current (weight, offset)."""
        terms = [t for t, n in self.fixed.items() for _ in range(n)]
        default = (policy.evaluators.default_weight, 0.0)
        for r in self.verdicts:
            assert r.evaluator is not None and r.raw_value is not None
            w_e, offset = weights.get(r.evaluator, default)
            if r.rule == 3:  # as bureau.scoring.outcomes.resolve, rule 3
                terms.append((w_e, min(1.0, max(0.0, r.raw_value - offset)), 3))
            else:  # rule 4
                vj = r.unit.value_judgment
                assert vj is not None
                weight = policy.weights.value_judgment * w_e * policy.spend_factor(vj.spent)
                terms.append((weight, r.raw_value, 4))
        score, share = score_terms(terms, policy)
        both = encode({"s": score, "v": policy.round(share)})  # one encoder call
        cut = both.rindex(b',"v":')
        self.score_bytes = (both[5:cut], both[cut + 5:-1])

    def payload(self, seal_part: tuple[bytes, bytes]) -> bytes:
        """The canonical payload bytes, given the epoch's (epoch, ledger) bytes."""
        s1, s2, s3, s4 = self.static_bytes
        return b"".join((s1, seal_part[0], s2, seal_part[1], s3, self.score_bytes[0], s4,
                         self.score_bytes[1], b"}"))


def seal_part(epoch: int, seq: int, head: str) -> tuple[bytes, bytes]:
    return encode(epoch), encode({"seq": seq, "head": head})


def score_terms(terms: list[tuple[float, float, int]],
                policy: Policy) -> tuple[dict[str, Any] | None, float]:
    """The score arithmetic of :func:`bureau.scoring.report.score_agent`, over
    (weight, value, rule) terms: exact sums, so term order does not matter."""
    if not terms:
        return None, 0.0
    total_w = math.fsum(w for w, _, _ in terms)
    vj_w = math.fsum(w for w, _, rule in terms if rule == 4)
    share = vj_w / total_w if total_w > 0 else 0.0
    if total_w <= 0:
        return None, share
    rules, rnd = policy.score, policy.round
    weighted = math.fsum(w * v for w, v, _ in terms)
    k = rules.prior_observations
    p = (weighted + k * rules.prior_value) / (total_w + k)
    low, high = wilson_interval(p, total_w, rules.wilson_z)
    return {"value": rnd(p), "low": rnd(low), "high": rnd(high), "weight": rnd(total_w),
            "interactions": len(terms)}, share
