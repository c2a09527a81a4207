"""Incremental derivation: every agent's report as of a seq, updated entry by entry.

The reference path (:func:`bureau.reports.reference_payloads`) scores the whole ledger
at every seal; it is what a report *is*. This module computes exactly the same bytes
but pays, at each seal, for what changed since the previous one:

* **Clusters.** An agent's entries fall into clusters that never influence each other:
  everything about one ``(reporter, interaction, subject)`` — or, for an engagement,
  about every interaction of ``(reporter, engagement, subject)``. Units of the scoring
  library never span two clusters, so :func:`~bureau.scoring.outcomes.resolve_all` on
  the changed clusters gives the same resolutions as on the whole agent. A new entry
  re-resolves its one cluster.
* **Evaluators.** An evaluator's record is a sum over the interactions it attested.
  Each ``(evaluator, interaction)`` contribution is kept, so a new attestation, a new
  ground truth or an exclusion swaps one contribution; the statistics themselves come
  from the library's ``evaluator_stats``.
* **Agents** (:mod:`bureau.report_view`): the report's counters take a re-resolved
  cluster out and put it back; the score is re-summed for agents whose clusters changed
  and for agents judged by an evaluator whose weight or offset moved; every report's
  bytes are spliced from cached canonical parts.

``tests/reports/test_derive_equivalence.py`` holds this path and the reference equal,
byte for byte, at every seal of randomised ledgers with engagements, probes before
their facts, constant raters and exclusions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from bureau.evidence import AgentName, Item
from bureau.report_view import (
    AgentState,
    Cluster,
    ClusterKey,
    Evidential,
    compact,
    seal_part,
)
from bureau.scoring.evaluators import EvaluatorRecord, EvaluatorStats, evaluator_stats
from bureau.scoring.inputs import (
    SELF_DEALING,
    Attestation,
    Evidence,
    Exclusion,
    Fact,
    Probe,
    ValueJudgment,
)
from bureau.scoring.outcomes import InteractionKey, resolve_all, truth_index
from bureau.scoring.policy import Policy

_KIND_LABEL = {Fact: "fact", Probe: "probe", Attestation: "attestation",
               ValueJudgment: "value_judgment"}


@dataclass
class _EvalAcc:
    """Counters whose multiset semantics let one contribution be taken out again."""

    subjects: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: Counter[float] = field(default_factory=Counter)
    attestations: int = 0
    positives: int = 0
    negatives: int = 0
    tp: int = 0
    tn: int = 0

    def apply(self, c: tuple[str, float, bool | None], sign: int, threshold: float) -> None:
        outcome, value, truth = c
        self.attestations += sign
        self.outcomes[outcome] += sign
        if truth is None:
            return
        called_pass = value >= threshold
        if truth:
            self.positives += sign
            self.tp += sign * called_pass
        else:
            self.negatives += sign
            self.tn += sign * (not called_pass)
        self.errors[value - (1.0 if truth else 0.0)] += sign

    def as_acc(self) -> EvaluatorRecord:
        errors = [e for e, n in sorted(self.errors.items()) for _ in range(n)]
        return EvaluatorRecord(attestations=self.attestations,
                    subjects={s for s, n in self.subjects.items() if n > 0},
                    outcomes={o for o, n in self.outcomes.items() if n > 0},
                    positives=self.positives, negatives=self.negatives, tp=self.tp,
                    tn=self.tn, errors=errors)


class Deriver:
    """Reports as of ``self.seq``, advanced by :meth:`apply` and :meth:`settle`."""

    def __init__(self, policy: Policy, policy_hash: str) -> None:
        self.policy = policy
        self.policy_hash = policy_hash
        self.seq = 0
        self.agents: dict[str, AgentState] = {}
        #: engagement-step interactions -> the engagement's cluster
        self.ikey_cluster: dict[InteractionKey, ClusterKey] = {}
        #: global exclusions, with the library's reason precedence
        self.excluded: dict[str, str] = {}
        self.evaluators: dict[str, EvaluatorStats] = {}
        self.weights: dict[str, tuple[float, float]] = {}  # evaluator -> (w_e, offset)
        self._accs: dict[str, _EvalAcc] = {}
        #: evaluator -> interaction -> (outcome, value, truth) it adds to the record
        self._contrib: dict[str, dict[InteractionKey, tuple[str, float, bool | None]]] = {}
        self._judged: dict[str, set[str]] = {}  # evaluator -> agents it decided units of
        # pending work, cleared by settle()
        self._dirty_clusters: dict[str, set[ClusterKey]] = {}
        self._dirty_agents: set[str] = set()
        self._dirty_pairs: set[tuple[str, InteractionKey]] = set()
        self._dirty_ikeys: set[InteractionKey] = set()

    # ----------------------------------------------------------------- intake

    def agent(self, key: str) -> AgentState:
        st = self.agents.get(key)
        if st is None:
            st = self.agents[key] = AgentState()
            self._dirty_agents.add(key)
        return st

    def cluster_key(self, item: Evidential) -> ClusterKey:
        if isinstance(item, ValueJudgment):
            return ("e", item.reporter, item.engagement, item.subject)
        if isinstance(item, Fact) and item.engagement is not None:
            return ("e", item.reporter, item.engagement.id, item.subject)
        ikey = (item.reporter, item.interaction, item.subject)
        return self.ikey_cluster.get(ikey, ("i", *ikey))

    def _touch(self, agent: str, ckey: ClusterKey) -> Cluster:
        st = self.agent(agent)
        cl = st.clusters.get(ckey)
        if cl is None:
            cl = st.clusters[ckey] = Cluster()
        self._dirty_clusters.setdefault(agent, set()).add(ckey)
        self._dirty_agents.add(agent)
        return cl

    def apply(self, items: Iterable[tuple[int, Item]],
              targets: dict[str, tuple[int, Item | None]]) -> None:
        """Take in decoded entries in seq order. ``targets`` maps the id of every entry
        an exclusion in ``items`` names to that entry's (seq, decoded item)."""
        for seq, item in items:
            self.seq = max(self.seq, seq)
            if isinstance(item, AgentName):
                known = self.agents.get(item.agent)
                if item.enrolled or (known is not None and known.enrolled):
                    st = self.agent(item.agent)
                    st.enrolled, st.name = True, item.name
                    self._dirty_agents.add(item.agent)
            elif isinstance(item, Exclusion):
                self._exclude(item, targets.get(item.target))
            else:
                self._add(item)

    def _add(self, item: Evidential) -> None:
        if isinstance(item, Fact) and item.engagement is not None:
            ikey = (item.reporter, item.interaction, item.subject)
            ckey = self.cluster_key(item)
            self.ikey_cluster[ikey] = ckey
            st = self.agent(item.subject)
            orphan = st.clusters.pop(("i", *ikey), None)
            if orphan is not None:  # a probe came before its engagement-step fact
                st.count(orphan, -1)
                self._touch(item.subject, ckey).absorb(orphan)
                self._dirty_clusters.get(item.subject, set()).discard(("i", *ikey))
        self._touch(item.subject, self.cluster_key(item)).add(item)
        if isinstance(item, Fact | Probe):
            self._dirty_ikeys.add((item.reporter, item.interaction, item.subject))
        elif isinstance(item, Attestation):
            self._dirty_pairs.add((item.evaluator, (item.reporter, item.interaction,
                                                    item.subject)))

    def _exclude(self, ex: Exclusion, target: tuple[int, Item | None] | None) -> None:
        if self.excluded.get(ex.target) != SELF_DEALING:
            self.excluded[ex.target] = SELF_DEALING if ex.reason == SELF_DEALING else "disputed"
        if target is None:
            return
        seq, item = target
        if not isinstance(item, Fact | Probe | Attestation | ValueJudgment):
            return  # an exclusion of an entry that is no evidence changes no report
        st = self.agent(item.subject)
        st.excluded[ex.target] = (seq, _KIND_LABEL[type(item)])
        self._touch(item.subject, self.cluster_key(item))
        if isinstance(item, Fact | Probe):
            self._dirty_ikeys.add((item.reporter, item.interaction, item.subject))
        elif isinstance(item, Attestation):
            self._dirty_pairs.add((item.evaluator, (item.reporter, item.interaction,
                                                    item.subject)))

    # ----------------------------------------------------------------- settle

    def settle(self) -> None:
        """Bring clusters, evaluators and agents up to date with everything applied."""
        for agent, ckeys in self._dirty_clusters.items():
            self._resolve(agent, ckeys)
        self._dirty_clusters.clear()

        pairs = self._dirty_pairs
        for ikey in self._dirty_ikeys:
            cl = self._cluster_of(ikey)
            if cl is not None:
                pairs.update((a.evaluator, ikey) for a in cl.atts
                             if (a.reporter, a.interaction, a.subject) == ikey)
        changed = self._update_contributions(pairs)
        self._dirty_ikeys.clear()
        pairs.clear()

        rescore: set[str] = set(self._dirty_agents)
        for evaluator in changed:
            rescore.update(self._judged.get(evaluator, ()))
        for agent in self._dirty_agents:
            self._restatic(agent)
        self._dirty_agents.clear()
        for agent in rescore:
            self._rescore(agent)

    def _resolve(self, agent: str, ckeys: set[ClusterKey]) -> None:
        """Re-resolve some of an agent's clusters with one call into the library (its
        per-call overhead dominates for one small cluster). Units never span clusters,
        so each resolution goes back to the cluster it came from."""
        st, excluded = self.agents[agent], self.excluded
        clusters = [st.clusters[k] for k in ckeys if k in st.clusters]
        facts: list[Fact] = []
        probes: list[Probe] = []
        atts: list[Attestation] = []
        vjs: list[ValueJudgment] = []
        for cl in clusters:
            st.count(cl, -1)
            facts.extend(cl.facts)
            probes.extend(cl.probes)
            atts.extend(cl.atts)
            vjs.extend(cl.vjs)
            cl.res = ()
        ev = Evidence(tuple(facts), tuple(probes), tuple(atts), tuple(vjs), ())
        for r in resolve_all(ev, self.policy, {}, excluded):
            key = r.unit.key
            home = key if key[0] == "e" else self.ikey_cluster.get(
                (key[1], key[2], key[3]), key)
            st.clusters[home].res += (compact(r),)
            if r.scored and r.evaluator is not None:
                self._judged.setdefault(r.evaluator, set()).add(agent)
        for cl in clusters:
            cl.counted_facts = cl.facts if not any(
                f.entry_id in excluded for f in cl.facts) else tuple(
                f for f in cl.facts if f.entry_id not in excluded)
            cl.counted_probes = cl.probes if not any(
                p.entry_id in excluded for p in cl.probes) else tuple(
                p for p in cl.probes if p.entry_id not in excluded)
            st.count(cl, +1)
        for x in facts:
            st.truth.pop((x.reporter, x.interaction, x.subject), None)
        for y in probes:
            st.truth.pop((y.reporter, y.interaction, y.subject), None)
        st.truth.update(truth_index(facts, probes, excluded))

    def _cluster_of(self, ikey: InteractionKey) -> Cluster | None:
        st = self.agents.get(ikey[2])
        if st is None:
            return None
        return st.clusters.get(self.ikey_cluster.get(ikey, ("i", *ikey)))

    def _update_contributions(self, pairs: set[tuple[str, InteractionKey]]) -> set[str]:
        """Swap the contribution of each (evaluator, interaction); return evaluators
        whose weight or offset changed."""
        policy, excluded, touched = self.policy, self.excluded, set[str]()
        for pair in pairs:
            evaluator, ikey = pair
            cl = self._cluster_of(ikey)
            first: Attestation | None = None
            for a in cl.atts if cl is not None else ():
                if (a.evaluator == evaluator and (a.reporter, a.interaction, a.subject) == ikey
                        and a.entry_id not in excluded and (first is None or a.seq < first.seq)):
                    first = a
            new = None
            if first is not None and not policy.is_unscored(first.outcome):
                assert cl is not None
                new = (first.outcome, policy.outcome_value(first.outcome, first.corrections),
                       self.agents[ikey[2]].truth.get(ikey))
            mine = self._contrib.setdefault(evaluator, {})
            old = mine.get(ikey)
            if old == new:
                continue
            acc = self._accs.setdefault(evaluator, _EvalAcc())
            threshold = policy.evaluators.polarity_threshold
            if old is not None:
                acc.apply(old, -1, threshold)
                acc.subjects[ikey[2]] -= 1
                del mine[ikey]
            if new is not None:
                acc.apply(new, +1, threshold)
                acc.subjects[ikey[2]] += 1
                mine[ikey] = new
            touched.add(evaluator)
        changed: set[str] = set()
        for evaluator in touched:
            acc = self._accs[evaluator]
            before = self.evaluators.get(evaluator)
            if acc.attestations == 0:
                del self._accs[evaluator]
                self.evaluators.pop(evaluator, None)
                self.weights.pop(evaluator, None)
                after = None
            else:
                after = evaluator_stats(evaluator, acc.as_acc(), policy)
                self.evaluators[evaluator] = after
                self.weights[evaluator] = (after.weight, after.offset)
            if _weighs(before) != _weighs(after):
                changed.add(evaluator)
        return changed

    def _restatic(self, agent: str) -> None:
        self.agents[agent].restatic(agent, self.policy, self.policy_hash, self.excluded)

    def _rescore(self, agent: str) -> None:
        self.agents[agent].rescore(self.policy, self.weights)

    # ----------------------------------------------------------------- output

    def payloads(self, epoch: int, seq: int, head: str) -> Iterator[tuple[str, bytes]]:
        """Every agent's canonical report payload bytes at this state, sorted by agent."""
        part = seal_part(epoch, seq, head)
        for agent in sorted(self.agents):
            yield agent, self.agents[agent].payload(part)


def _weighs(stats: EvaluatorStats | None) -> tuple[float, float] | None:
    return None if stats is None else (stats.weight, stats.offset)

