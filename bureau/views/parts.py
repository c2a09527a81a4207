"""One agent's report, kept up to date piece by piece (used by :mod:`bureau.views.derive`).

A report payload is made of three kinds of parts:

* **static** — outcomes, unscored, probes, reliability, excluded, name: functions of the
  agent's own entries. Kept as counters that a re-resolved cluster adds itself to and
  takes itself out of, so a seal pays for the clusters that changed, not the history;
* **score** — score and value-judgment share: re-summed when the agent's entries or the
  weights of its evaluators change;
* **seal** — epoch and ledger: the same for every agent of an epoch;
* **evidence** — the root of the agent's own file (SPEC §8 r2), kept by
  :class:`bureau.views.files.FileRoots` and re-encoded when the file grows.

The payload bytes are spliced from the canonical bytes of each part, as
:mod:`reporters.wire` writes them: RFC 8785 writes an object's members in sorted key
order, and the report's keys are fixed, so the bytes of the whole are the bytes of the
parts in that order (``REPORT_KEYS``). The tests hold the result equal to
``wire.canonical_json`` of the reference payload.

Scores are not computed here: the score arithmetic and rules 3–4 (the weight and
value of an evaluator's verdict) are :mod:`bureau.scoring`'s, called with counted
terms. What this module repeats of the scoring library is counting (``_reliability``,
the outcome tallies of ``build_report_payload``);
``tests/reports/test_derive_equivalence.py`` holds the two paths equal.
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Any

from bureau.scoring.inputs import (
    EXCLUSION_REASONS,
    Attestation,
    Fact,
    Probe,
    ValueJudgment,
)
from bureau.scoring.outcomes import Resolution, attestation_term, value_judgment_term
from bureau.scoring.policy import Policy
from bureau.scoring.report import nearest_rank
from bureau.scoring.score import Term, score_terms
from bureau.scoring.truth import InteractionKey
from reporters import wire
from reporters.tlog.merkle import EMPTY_ROOT

#: A report's keys in RFC 8785 order (a test checks this is their sorted order).
REPORT_KEYS = ("agent", "epoch", "evidence", "excluded", "ledger", "name", "outcomes",
               "policy", "probes", "reliability", "score", "unscored", "value_judgment_share")
assert list(REPORT_KEYS) == sorted(REPORT_KEYS)


class _Odd(float):
    """A float that is not plain (see ``reporters.wire.canonical_json_plain``)."""


def _plain(x: float) -> float | int:
    """A rate, plain: an integer-valued float as an int, a tiny one marked odd."""
    if x.is_integer():
        return int(x)
    return x if 1e-4 <= abs(x) < 1e16 else _Odd(x)


def _unodd(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unodd(v) for k, v in value.items()}
    return float(value) if isinstance(value, _Odd) else value


ClusterKey = tuple[str, str, str, str]  # ("i"|"e", reporter, interaction|engagement, subject)
#: What a resolution not decided by an evaluator adds to the report: (code, scored,
#: weight, value, rule). There are a few dozen distinct ones, so they are shared
#: instead of keeping ~0.2 KiB of Resolution and Unit per interaction.
Fixed = tuple[str | None, bool, float, float, int]
#: What a scored resolution decided by an evaluator (rules 3 and 4) adds: (code, rule,
#: evaluator, raw value, spent — for a value judgment, else None). Its weight and value
#: follow the evaluator's current (weight, offset), so they are worked out at rescore.
Verdict = tuple[str, int, str, float, int | None]
_SHARED: dict[tuple[Any, ...], Any] = {}


def compact(r: Resolution) -> tuple[Fixed, None] | tuple[None, Verdict]:
    """A resolution as the (shared) tuple of what it adds to the report: a Fixed, or a
    Verdict for one an evaluator decided."""
    if r.scored and r.rule in (3, 4):
        assert r.code is not None and r.evaluator is not None and r.raw_value is not None
        vj = r.unit.value_judgment
        v = (r.code, r.rule, r.evaluator, r.raw_value, vj.spent if r.rule == 4 and vj else None)
        return None, _SHARED.setdefault(v, v)
    c = (r.code, r.scored, r.weight, r.value if r.value is not None else 0.0, r.rule)
    return _SHARED.setdefault(c, c), None


Evidential = Fact | Probe | Attestation | ValueJudgment


class Cluster:
    """Entries about one interaction (or one engagement) of one agent: nothing outside
    a cluster changes how its units resolve."""

    __slots__ = ("atts", "counted_facts", "counted_probes", "facts", "fixed", "probes",
                 "verdicts", "vjs")

    def __init__(self) -> None:
        self.facts: tuple[Fact, ...] = ()
        self.probes: tuple[Probe, ...] = ()
        self.atts: tuple[Attestation, ...] = ()
        self.vjs: tuple[ValueJudgment, ...] = ()
        # what its units resolved to, last time (see compact)
        self.fixed: tuple[Fixed, ...] = ()
        self.verdicts: tuple[Verdict, ...] = ()
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

    __slots__ = ("answered", "clusters", "codes", "enrolled", "evidence_bytes", "excluded",
                 "fixed", "latencies", "name", "observed", "probe_counts", "promises",
                 "score_bytes", "static_bytes", "truth", "verdicts", "wf_ok", "wf_seen")

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
        # score inputs, each with how many units gave it: (weight, value, rule) not
        # decided by an evaluator, and the verdicts of evaluators (rules 3 and 4)
        self.fixed: Counter[tuple[float, float, int]] = Counter()
        self.verdicts: Counter[Verdict] = Counter()
        self.static_bytes: tuple[bytes, bytes, bytes, bytes, bytes] = (b"",) * 5
        self.score_bytes = (b"null", b"0")
        self.evidence_bytes = evidence_part(EMPTY_ROOT)

    # ----------------------------------------------------------------- counting

    def count(self, cl: Cluster, sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) one cluster's counted contribution."""
        for code, scored, weight, value, rule in cl.fixed:
            if code is not None:
                self.codes[(code, scored)] += sign
            if scored:
                self.fixed[(weight, value, rule)] += sign
        for v in cl.verdicts:
            self.codes[(v[0], True)] += sign
            self.verdicts[v] += sign
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
            "answer_rate": _plain(rnd(self.answered / obs)) if obs else None,
            "well_formed_rate": _plain(rnd(self.wf_ok / self.wf_seen)) if self.wf_seen
            else None,
            "latency_ms": {"p50": nearest_rank(self.latencies, 50),
                           "p95": nearest_rank(self.latencies, 95)},
            "promises": {k: {"kept": v[0], "broken": v[1]}
                         for k, v in sorted(self.promises.items())},
        }
        probes = {"passed": self.probe_counts[0], "failed": self.probe_counts[1]}
        # One encoder call for the whole payload, with markers where the per-seal,
        # evidence and per-score parts go ("\u0000" cannot occur otherwise: no free text holds
        # control characters, and key ids and codes are plain ASCII).
        doc = {"agent": agent, "epoch": "\x000", "evidence": "\x001", "excluded": excluded,
               "ledger": "\x002", "name": self.name, "outcomes": outcomes,
               "policy": policy_hash, "probes": probes, "reliability": reliability,
               "score": "\x003", "unscored": unscored, "value_judgment_share": "\x004"}
        # Every number here is an int or a rate made plain by _plain, and every key but
        # the promises' is a fixed ASCII word: then the payload is plain (see
        # reporters.wire.canonical_json_plain).
        fast = all(k.isascii() for k in self.promises) and not any(
            isinstance(r, _Odd) for r in (reliability["answer_rate"],
                                          reliability["well_formed_rate"]))
        whole = wire.canonical_json_plain(doc) if fast else wire.canonical_json(_unodd(doc))
        parts = whole.split(b'"\\u0000')
        assert len(parts) == 6 and all(p[:2] == b'%d"' % i for i, p in enumerate(parts[1:]))
        self.static_bytes = (parts[0], parts[1][2:], parts[2][2:], parts[3][2:], parts[4][2:])
        assert parts[5][2:] == b"}"

    def rescore(self, policy: Policy, weights: dict[str, tuple[float, float]]) -> None:
        """Re-sum the score with the evaluators' current (weight, offset)."""
        terms: list[Term] = [(w, v, rule, n) for (w, v, rule), n in self.fixed.items() if n]
        default = (policy.evaluators.default_weight, 0.0)
        for (_, rule, evaluator, raw, spent), n in self.verdicts.items():
            if not n:
                continue
            w_e, offset = weights.get(evaluator, default)
            if rule == 3:
                weight, value = attestation_term(raw, w_e, offset)
            else:
                assert spent is not None
                weight, value = value_judgment_term(raw, w_e, spent, policy)
            terms.append((weight, value, rule, n))
        result = score_terms(terms, policy)
        score, number = result.score, wire.canonical_number
        if score is None:
            score_bytes = b"null"
        else:
            # The score object's canonical bytes, its members in their sorted order and
            # its numbers by wire: ~2 µs, where an encoder call costs 5-10 µs, and most
            # seals re-score every agent (an evaluator's weight moves them all).
            score_bytes = b'{"high":%s,"interactions":%d,"low":%s,"value":%s,"weight":%s}' % (
                number(score["high"]), score["interactions"], number(score["low"]),
                number(score["value"]), number(score["weight"]))
        self.score_bytes = (score_bytes, number(policy.round(result.value_judgment_share)))

    def payload(self, seal_part: tuple[bytes, bytes]) -> bytes:
        """The canonical payload bytes, given the epoch's (epoch, ledger) bytes."""
        s1, s2, s3, s4, s5 = self.static_bytes
        return b"".join((s1, seal_part[0], s2, self.evidence_bytes, s3, seal_part[1], s4,
                         self.score_bytes[0], s5, self.score_bytes[1], b"}"))


def seal_part(epoch: int, seq: int, head: str) -> tuple[bytes, bytes]:
    return (wire.canonical_json_fast(epoch),
            wire.canonical_json_fast({"seq": seq, "head": head}))


def evidence_part(root: bytes) -> bytes:
    """``{"root": <hex>}``: the canonical bytes of a report's ``evidence``."""
    return b'{"root":"%s"}' % root.hex().encode()
