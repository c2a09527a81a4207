"""One agent's report, kept up to date piece by piece (used by :mod:`bureau.views.derive`).

A report payload is made of three kinds of parts:

* **static** — outcomes, unscored, probes, reliability, excluded, name: functions of the
  agent's own entries. Kept as counters that a re-resolved cluster adds itself to and
  takes itself out of, so a seal pays for the clusters that changed, not the history;
* **score** — score and value-judgment share: re-summed when the agent's entries or the
  weights of its evaluators change;
* **seal** — epoch and ledger: the same for every agent of an epoch;
* **evidence** — the root of the agent's own file (SPEC §8 r2), kept by
  :class:`bureau.reads.files.FileRoots` and re-encoded when the file grows.

The payload bytes are spliced from the canonical bytes of each part, as
:mod:`reporters.wire` writes them: RFC 8785 writes an object's members in sorted key
order, and the report's keys are fixed, so the bytes of the whole are the bytes of the
parts in that order (``REPORT_KEYS``). The tests hold the result equal to
``wire.canonical_json`` of the reference payload.

The counters are fed by clusters (:mod:`bureau.views.clusters`); the chains an
evaluator's verdict may decide are decided at rescore (:mod:`bureau.views.decisions`).
Scores are not computed here: the score arithmetic and rules 3–4 (the weight and
value of an evaluator's verdict) are :mod:`bureau.scoring`'s, called with counted
terms. What this module repeats of the scoring library is counting (``_reliability``,
the outcome tallies of ``build_report_payload``);
``tests/views/test_derive_equivalence.py`` holds the two paths equal.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable
from typing import Any

from bureau.scoring.inputs import EXCLUSION_REASONS, LinkList
from bureau.scoring.policy import Policy
from bureau.scoring.report import REPORTER_RULES, nearest_rank, rows_of
from bureau.scoring.score import Term, score_terms
from bureau.scoring.truth import InteractionKey, Truth
from bureau.views.clusters import Chain, Cluster, ClusterKey, Fixed
from bureau.views.decisions import Decisions
from reporters import wire
from reporters.tlog.merkle import EMPTY_ROOT

#: A report's keys in RFC 8785 order (a test checks this is their sorted order).
REPORT_KEYS = ("agent", "epoch", "evidence", "excluded", "first_seen_epoch",
               "ground_truth_share", "ledger", "links", "name", "outcomes", "policy", "probes",
               "provisional_share", "reliability", "reporters", "score", "unscored",
               "value_judgment_share")
assert list(REPORT_KEYS) == sorted(REPORT_KEYS)
#: The keys whose bytes are not static: the seal's (the same for every agent of an
#: epoch), the evidence root (``evidence_bytes``, set as the agent's file grows) and the
#: ones that follow evaluator weights (re-encoded at rescore). Each is spliced into the
#: static bytes where its marker was.
SEAL_KEYS = ("epoch", "ledger")
EVIDENCE_KEY = "evidence"
SCORE_KEYS = ("ground_truth_share", "outcomes", "provisional_share", "reporters", "score",
              "unscored", "value_judgment_share")
SPLICED = tuple(k for k in REPORT_KEYS
                if k in SEAL_KEYS or k == EVIDENCE_KEY or k in SCORE_KEYS)


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


class AgentState:
    """What the deriver knows of one agent, and its report in pieces."""

    __slots__ = ("answered", "base", "chains", "clusters", "codes", "distrusted", "enrolled",
                 "epochs", "evidence_bytes", "excluded", "fixed", "latencies", "links", "name",
                 "observed",
                 "probe_counts", "promises", "rep_units", "rep_values", "score_bytes",
                 "score_values", "static_bytes", "truth", "wf_ok", "wf_seen")

    def __init__(self) -> None:
        self.clusters: dict[ClusterKey, Cluster] = {}
        #: ground truth of the agent's interactions (the library's truth_index)
        self.truth: dict[InteractionKey, Truth] = {}
        self.name: str | None = None
        #: its links in force (SPEC §3 r3), as the report carries them
        self.links: LinkList = ()
        self.enrolled = False
        #: this agent's excluded entries: entry id -> (seq, kind label)
        self.excluded: dict[str, tuple[int, str]] = {}
        self.distrusted = 0  # entries distrust sets aside
        # counters over the clusters' last resolution
        self.codes: Counter[tuple[str, bool]] = Counter()  # of Fixed resolutions
        self.probe_counts = [0, 0]  # passed, failed (counted probes)
        self.epochs: Counter[int] = Counter()  # of counted facts and probes
        self.observed = self.answered = self.wf_seen = self.wf_ok = 0
        self.latencies: list[int] = []  # sorted
        self.promises: dict[str, list[int]] = {}  # promise -> [kept, broken]
        self.rep_units: Counter[str] = Counter()  # reporter -> units
        # score inputs, each with how many units gave it: scored Fixed resolutions as
        # (weight, value, rule), their values per reporter for the reporters rows, and
        # the chains that evaluators' verdicts may decide
        self.fixed: Counter[tuple[float, float, int]] = Counter()
        self.rep_values: Counter[tuple[str, float]] = Counter()
        self.chains: Counter[Chain] = Counter()
        self.static_bytes: tuple[bytes, ...] = ()
        self.evidence_bytes = evidence_part(EMPTY_ROOT)
        self.score_bytes: dict[str, bytes] = {}
        self.score_values: dict[str, Any] = {}  # what some score parts were encoded from
        #: what rescore starts from, made from the counters when they last changed
        self.base: _Base | None = None

    # ----------------------------------------------------------------- counting

    def count(self, cl: Cluster, sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) one cluster's counted contribution."""
        self.base = None
        for fixed in cl.fixed:
            self._count_fixed(fixed, sign)
        for chain in cl.chains:
            self.chains[chain] += sign
            self.rep_units[chain.rest.reporter] += sign
        self.distrusted += sign * cl.distrusted
        for p in cl.counted_probes:
            self.probe_counts[0 if p.passed else 1] += sign
            self.epochs[p.epoch] += sign
        for f in cl.counted_facts:  # as bureau.scoring.report._reliability
            self.observed += sign
            self.epochs[f.epoch] += sign
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

    def _count_fixed(self, f: Fixed, sign: int) -> None:
        code, scored, weight, value, rule, reporter = f
        self.rep_units[reporter] += sign
        if code is not None:
            self.codes[(code, scored and weight > 0)] += sign
        if scored:
            self.fixed[(weight, value, rule)] += sign
            if rule in REPORTER_RULES:
                self.rep_values[(reporter, value)] += sign

    # ----------------------------------------------------------------- payload parts

    def restatic(self, agent: str, policy: Policy, policy_hash: str,
                 reasons: dict[str, str]) -> None:
        """Re-encode the static parts from the counters (as build_report_payload)."""
        excluded = dict.fromkeys(EXCLUSION_REASONS, 0)
        for eid in self.excluded:
            excluded[reasons[eid]] += 1
        excluded["distrusted"] += self.distrusted
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
        seen = [e for e, n in self.epochs.items() if n]
        # One encoder call for the whole payload, with markers where the per-seal,
        # evidence and per-score parts go ("\u0000" cannot occur otherwise: no free text holds
        # control characters, and key ids and codes are plain ASCII).
        doc: dict[str, Any] = {
            "agent": agent, "excluded": excluded,
            "first_seen_epoch": min(seen) if seen else None, "name": self.name,
            "links": list(self.links),
            "policy": policy_hash, "probes": probes, "reliability": reliability}
        for i, key in enumerate(SPLICED):
            doc[key] = f"\x00{i}"
        # Every number here is an int or a rate made plain by _plain, and every key but
        # the promises' is a fixed ASCII word: then the payload is plain (see
        # reporters.wire.canonical_json_plain).
        fast = all(k.isascii() for k in self.promises) and not any(
            isinstance(r, _Odd) for r in (reliability["answer_rate"],
                                          reliability["well_formed_rate"]))
        whole = wire.canonical_json_plain(doc) if fast else wire.canonical_json(_unodd(doc))
        parts = whole.split(b'"\\u0000')
        assert len(parts) == len(SPLICED) + 1
        assert all(p[:2] == b'%d"' % i for i, p in enumerate(parts[1:]))
        self.static_bytes = (parts[0], *(p[2:] for p in parts[1:]))

    def _base(self, policy: Policy) -> _Base:
        """What the counters give before any chain is decided: the terms of Fixed
        resolutions, the outcome tallies, the reporters' tallies and their rows' bytes.
        Made again only after the counters change (most re-scores follow weights)."""
        if self.base is not None:
            return self.base
        terms: list[Term] = [(w, v, rule, n, None, False)
                             for (w, v, rule), n in self.fixed.items() if n]
        outcomes = dict.fromkeys(policy.scored_codes, 0)
        unscored = dict.fromkeys(policy.outcomes.unscored, 0)
        for (code, scored), n in self.codes.items():
            if n:
                table = outcomes if scored else unscored
                table[code] = table.get(code, 0) + n
        values: dict[str, list[tuple[float, int]]] = {}
        for (reporter, value), n in self.rep_values.items():
            if n:
                values.setdefault(reporter, []).append((value, n))
        tally = {r: (n, values.get(r, [])) for r, n in self.rep_units.items() if n}
        self.base = _Base(terms, outcomes, unscored, tally,
                          wire.canonical_json_fast(rows_of(tally, policy)))
        return self.base

    def rescore(self, policy: Policy, decisions: Decisions) -> None:
        """Re-decide the chains and re-sum the score with the evaluators' current
        weighings; re-encode every part that follows them (a part whose value did not
        change keeps its bytes: most seals re-score every agent, and most of an agent's
        parts stay as they were)."""
        base = self._base(policy)
        terms = list(base.terms)
        outcomes, unscored = dict(base.outcomes), dict(base.unscored)
        extra: list[tuple[str, float, int]] = []  # (reporter, value, n) from chains
        for chain, n in self.chains.items():
            if not n:
                continue
            listed, unlisted, term, rep_value = decisions.of(chain)
            if listed is not None:
                outcomes[listed] += n
            for code in unlisted:
                unscored[code] = unscored.get(code, 0) + n
            if term is not None:
                w, v, rule, evaluator, provisional = term
                terms.append((w, v, rule, n, evaluator, provisional))
            if rep_value is not None:
                reporter, reported = rep_value
                extra.append((reporter, reported, n))
        result = score_terms(terms, policy, decisions.weighing)
        score, number, rnd = result.score, wire.canonical_number, policy.round
        if score is None:
            score_bytes = b"null"
        else:
            # The score object's canonical bytes, its members in their sorted order and
            # its numbers by wire: ~2 µs, where an encoder call costs 5-10 µs, and most
            # seals re-score every agent (an evaluator's weight moves them all).
            score_bytes = b'{"high":%s,"interactions":%d,"low":%s,"value":%s,"weight":%s}' % (
                number(score["high"]), score["interactions"], number(score["low"]),
                number(score["value"]), number(score["weight"]))
        if extra:
            tally = {r: (n, list(vs)) for r, (n, vs) in base.tally.items()}
            for reporter, value, n in extra:
                tally[reporter][1].append((value, n))
            reporters = wire.canonical_json_fast(rows_of(tally, policy))
        else:
            reporters = base.reporters
        last = self.score_bytes
        self.score_bytes = {
            "ground_truth_share": number(rnd(result.ground_truth_share)),
            "outcomes": self._encoded("outcomes", outcomes, last, wire.canonical_json_plain),
            "provisional_share": number(rnd(result.provisional_share)),
            "reporters": reporters,
            "score": score_bytes,
            "unscored": self._encoded("unscored", unscored, last, wire.canonical_json_plain),
            "value_judgment_share": number(rnd(result.value_judgment_share)),
        }

    def _encoded(self, key: str, value: Any, last: dict[str, bytes],
                 encode: Callable[[Any], bytes]) -> bytes:
        """``encode(value)``, or the bytes of the last rescore when ``value`` is the same
        (compared as values: cheaper than encoding them again)."""
        if self.score_values.get(key) == value and key in last:
            return last[key]
        self.score_values[key] = value
        return encode(value)

    def payload(self, seal_parts: dict[str, bytes]) -> bytes:
        """The canonical payload bytes, given the epoch's (epoch, ledger) bytes."""
        static, score = self.static_bytes, self.score_bytes
        out = [static[0]]
        for i, key in enumerate(SPLICED):
            out.append(seal_parts[key] if key in seal_parts else self.evidence_bytes
                       if key == EVIDENCE_KEY else score[key])
            out.append(static[i + 1])
        return b"".join(out)


class _Base:
    """What :meth:`AgentState._base` makes: the parts of a re-score that do not follow
    evaluator weights."""

    __slots__ = ("outcomes", "reporters", "tally", "terms", "unscored")

    def __init__(self, terms: list[Term], outcomes: dict[str, int], unscored: dict[str, int],
                 tally: dict[str, tuple[int, list[tuple[float, int]]]], reporters: bytes,
                 ) -> None:
        self.terms = terms
        self.outcomes = outcomes
        self.unscored = unscored
        self.tally = tally
        self.reporters = reporters


def evidence_part(root: bytes) -> bytes:
    """``{"root": <hex>}``: the canonical bytes of a report's ``evidence``."""
    return b'{"root":"%s"}' % root.hex().encode()


def seal_part(epoch: int, seq: int, head: str) -> dict[str, bytes]:
    return {"epoch": wire.canonical_json_fast(epoch),
            "ledger": wire.canonical_json_fast({"seq": seq, "head": head})}
