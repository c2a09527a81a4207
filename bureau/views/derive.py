"""Incremental derivation: every agent's report as of a seq, updated entry by entry.

Two paths, one definition. The reference path
(:func:`bureau.views.reference.reference_payloads`) scores the whole ledger at every
seal; it is what a report *is*. The :class:`Deriver` computes exactly the same bytes but
pays, at each seal, for what changed since the previous one:

* **Clusters** (:mod:`bureau.views.clusters`). An agent's entries fall into clusters
  that never influence each other: everything about one
  ``(reporter, interaction, subject)`` — or, for an engagement, about every interaction
  of ``(reporter, engagement, subject)``. Units of the scoring library never span two
  clusters, so :func:`~bureau.scoring.outcomes.resolve_all` on the changed clusters
  gives the same resolutions as on the whole agent. A new entry
  re-resolves its one cluster.
* **Evaluators.** An evaluator's record is a sum over the interactions it attested,
  kept one contribution at a time (:mod:`bureau.views.contributions`); the sums and the
  statistics they give are the scoring library's (``evaluator_stats``).
* **Agents** (:mod:`bureau.views.parts`): the report's counters take a re-resolved
  cluster out and put it back; the score is re-summed for agents whose clusters changed
  and for agents judged by an evaluator whose weight or offset moved (by the library's
  :func:`~bureau.scoring.score.score_terms`); every report's bytes are spliced from
  cached canonical parts.
* **Files** (:mod:`bureau.reads.files`): each agent's own file is a Merkle accumulator
  fed the entries it gained since the last seal; its root is the report's
  ``evidence.root`` (SPEC §8 r2). Its entries are read apart from the evidence items:
  an entry is in several files (an attestation is in its evaluator's and its subject's),
  and a report shard reads the files of its own agents.

``tests/views/test_derive_equivalence.py`` holds this path and the reference equal,
byte for byte, at every seal of randomised ledgers with engagements, probes before
their facts, constant raters and exclusions.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncGenerator, Iterable, Iterator

from bureau.evidence.entries import EntrySpan, read_with_targets
from bureau.reads.files import FileRoots, Membership, read_files
from bureau.scoring.book import EvaluatorBook
from bureau.scoring.distrust import Distrust, distrusted_ids, step
from bureau.scoring.evaluators import (
    Contribution,
    EvaluatorPart,
    Weighing,
    rated_contribution,
    standing,
)
from bureau.scoring.inputs import (
    SELF_DEALING,
    AgentName,
    Attestation,
    Evidence,
    Exclusion,
    Fact,
    Item,
    Probe,
    ReporterUpdate,
    ValueJudgment,
)
from bureau.scoring.outcomes import build_units, resolve_by_reporter, resolve_rest, verdicts_of
from bureau.scoring.policy import Policy
from bureau.scoring.rates import rated_truth
from bureau.scoring.truth import (
    InteractionKey,
    Truth,
    claims_index,
    graded_truth,
    truth_index,
)
from bureau.storage import db
from bureau.views.clusters import Chain, Cluster, ClusterKey, Evidential, fixed_of, shared
from bureau.views.contributions import Contributions
from bureau.views.decisions import Decisions
from bureau.views.parts import AgentState, evidence_part, seal_part

_KIND_LABEL = {Fact: "fact", Probe: "probe", Attestation: "attestation",
               ValueJudgment: "value_judgment"}


class Deriver:
    """Reports as of ``self.seq``, advanced by :meth:`apply` and :meth:`reweigh`."""

    def __init__(self, policy: Policy, policy_hash: str) -> None:
        self.policy = policy
        self.policy_hash = policy_hash
        self.seq = 0
        self.agents: dict[str, AgentState] = {}
        #: engagement-step interactions -> the engagement's cluster
        self.ikey_cluster: dict[InteractionKey, ClusterKey] = {}
        #: global exclusions, with the library's reason precedence
        self.excluded: dict[str, str] = {}
        #: this deriver's evaluator sums as one shard of the whole (see EvaluatorBook)
        self.book = EvaluatorBook(policy)
        self.weights: dict[str, Weighing] = {}  # evaluator -> its weighing
        #: reporter -> its distrust in force (bureau.scoring.distrust)
        self.distrust: dict[str, Distrust] = {}
        #: what each standing verdict adds to its evaluator's record
        self.contributions = Contributions(policy)
        self._judged: dict[str, set[str]] = {}  # evaluator -> agents it decided units of
        #: every key's own file, as a Merkle accumulator (its report's evidence root)
        self.files = FileRoots()
        # pending work, cleared by reweigh()
        self._dirty_clusters: dict[str, set[ClusterKey]] = {}
        self._dirty_agents: set[str] = set()

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
                    st.enrolled = True
                    if item.name is not None:
                        st.name = item.name
                    if item.links is not None:
                        st.links = item.links
                    self._dirty_agents.add(item.agent)
            elif isinstance(item, Exclusion):
                self._exclude(item, targets.get(item.target))
            elif isinstance(item, ReporterUpdate):
                self._reporter(item)
            else:
                self._add(item)

    def add_files(self, rows: Iterable[Membership]) -> None:
        """Take in (agent, seq, entry id): entries of agents' files, in seq order."""
        self.files.add(rows)

    def _reporter(self, update: ReporterUpdate) -> None:
        """A reporter's distrust may change: every cluster of its evidence is resolved
        again (distrust changes are rare; this walks every cluster once)."""
        before = self.distrust.get(update.reporter)
        after = step(before, update)
        if after == before:
            return
        if after is None:
            del self.distrust[update.reporter]
        else:
            self.distrust[update.reporter] = after
        for agent, st in self.agents.items():
            for ckey in st.clusters:
                if ckey[1] == update.reporter:
                    self._dirty_clusters.setdefault(agent, set()).add(ckey)
                    self._dirty_agents.add(agent)

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

    # ----------------------------------------------------------------- reweigh

    def reweigh(self) -> None:
        """Bring clusters, evaluators and agents up to date with everything applied."""
        self.finish(self.book.update([(0, self.reweigh_local())]))

    def reweigh_local(self) -> dict[str, EvaluatorPart | None]:
        """The first half of :meth:`reweigh`: re-resolve what changed and return this
        deriver's sums for every evaluator whose contributions moved (None: it has none
        left here). A deriver that holds one shard of the agents hands these to the
        :class:`EvaluatorBook` that sums all shards."""
        for agent, ckeys in self._dirty_clusters.items():
            self._resolve(agent, ckeys)
            self.contributions.settle(agent)
        self._dirty_clusters.clear()
        return self.contributions.parts()

    def finish(self, changed: dict[str, Weighing | None]) -> None:
        """The second half of :meth:`reweigh`: take the evaluators whose weighing changed,
        everywhere, and re-encode and re-score the agents that depend on them."""
        rescore: set[str] = set(self._dirty_agents)
        for evaluator, weighs in changed.items():
            if weighs is None:
                self.weights.pop(evaluator, None)
            else:
                self.weights[evaluator] = weighs
            rescore.update(self._judged.get(evaluator, ()))
        for agent in self._dirty_agents:
            self._restatic(agent)
        for agent in self.files.take_changed() | self._dirty_agents:
            st = self.agents.get(agent)
            if st is not None:  # a key whose file grew may have no report (yet)
                st.evidence_bytes = evidence_part(self.files.root(agent))
        self._dirty_agents.clear()
        decisions = Decisions(self.policy, self.weights)
        for agent in rescore:
            self.agents[agent].rescore(self.policy, decisions)

    def _resolve(self, agent: str, ckeys: set[ClusterKey]) -> None:
        """Re-resolve some of an agent's clusters with one call into the library (its
        per-call overhead dominates for one small cluster). Units never span clusters,
        so each resolution goes back to the cluster it came from."""
        st, excluded, policy = self.agents[agent], self.excluded, self.policy
        clusters = [st.clusters[k] for k in ckeys if k in st.clusters]
        facts: list[Fact] = []
        probes: list[Probe] = []
        atts: list[Attestation] = []
        vjs: list[ValueJudgment] = []
        for cl in clusters:
            if cl.counted:
                st.count(cl, -1)  # (a new cluster has nothing counted yet)
            facts.extend(cl.facts)
            probes.extend(cl.probes)
            atts.extend(cl.atts)
            vjs.extend(cl.vjs)
            cl.fixed, cl.chains = (), ()
        ev = Evidence(tuple(facts), tuple(probes), tuple(atts), tuple(vjs), ())
        aside = excluded
        if self.distrust and any(k[1] in self.distrust for k in ckeys):
            extra = distrusted_ids(ev, self.distrust, excluded)
            if extra:
                aside = {**excluded, **extra}
        for unit in build_units(ev, aside):
            key = unit.key
            home = st.clusters[key if key[0] == "e" else self.ikey_cluster.get(
                (key[1], key[2], key[3]), key)]
            fixed = resolve_by_reporter(unit, policy)
            verdicts = () if fixed is not None else verdicts_of(unit, policy)
            if not verdicts:
                home.fixed += (fixed_of(fixed or resolve_rest(unit, policy)),)
                continue
            chain: Chain = shared(Chain(verdicts=tuple(shared(v) for v in verdicts),
                                        rest=fixed_of(resolve_rest(unit, policy))))
            home.chains += (chain,)
            for v in verdicts:
                self._judged.setdefault(v.evaluator, set()).add(agent)
        for cl in clusters:
            if aside and any(x.entry_id in aside for x in cl.facts + cl.probes):
                cl.counted_facts = tuple(f for f in cl.facts if f.entry_id not in aside)
                cl.counted_probes = tuple(p for p in cl.probes if p.entry_id not in aside)
            else:
                cl.counted_facts, cl.counted_probes = cl.facts, cl.probes
            cl.distrusted = 0 if aside is excluded else sum(
                1 for group in (cl.facts, cl.probes, cl.atts, cl.vjs) for x in group
                if aside.get(x.entry_id) == "distrusted" and x.entry_id not in excluded)
            st.count(cl, +1)
        if st.truth:
            for x in facts:
                st.truth.pop((x.reporter, x.interaction, x.subject), None)
            for y in probes:
                st.truth.pop((y.reporter, y.interaction, y.subject), None)
        st.truth.update(truth_index(facts, probes, aside))
        for cl in clusters:
            if cl.atts or (cl.vjs and policy.counts_value_judgments):
                self._contribute(cl, st.truth, aside)

    def _contribute(self, cl: Cluster, truth: dict[InteractionKey, Truth],
                    excluded: dict[str, str]) -> None:
        """Re-work what one cluster's verdicts add to their evaluators' sums: per
        (evaluator, interaction), the first attestation not set aside stands, graded
        against the interaction's ground truth as the policy says; under v2 the first
        value judgment per (evaluator, engagement) too. Every contribution that changed
        is swapped; its evaluator is marked touched."""
        policy = self.policy
        blind = policy.blind_grading
        claims = None if policy.evaluators.rates is None else claims_index(
            cl.counted_facts, {})
        new: dict[tuple[str, tuple[str, ...]], Contribution | None] = {}
        for (evaluator, ikey), a in standing(cl.atts, excluded).items():
            if a is None:
                new[(evaluator, ikey)] = None
                continue
            at = (a.reporter, a.interaction, a.subject)
            rated = None if claims is None else rated_truth(truth.get(at), claims.get(at))
            new[(evaluator, ikey)] = rated_contribution(
                a.outcome, a.corrections, graded_truth(truth.get(at), a.seq, blind), policy,
                rated)
        if policy.counts_value_judgments:
            for vpair, v in standing(cl.vjs, excluded).items():
                new[vpair] = None if v is None else rated_contribution(v.judgment, 0, None,
                                                                       policy, None)
        self.contributions.swap(new)

    def _restatic(self, agent: str) -> None:
        self.agents[agent].restatic(agent, self.policy, self.policy_hash, self.excluded)

    # ----------------------------------------------------------------- output

    def payloads(self, epoch: int, seq: int, head: str) -> Iterator[tuple[str, bytes]]:
        """Every agent's canonical report payload bytes at this state, sorted by agent."""
        part = seal_part(epoch, seq, head)
        for agent in sorted(self.agents):
            yield agent, self.agents[agent].payload(part)


# ----------------------------------------------------------------- from the entries


@contextlib.contextmanager
def long_lived_objects() -> Iterator[None]:
    """The deriver holds millions of long-lived objects: keep the cyclic collector from
    walking them over and over while they are made (it makes nothing cyclic), then
    freeze them out of every later collection."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        gc.freeze()


async def feed(conn: db.Connection, deriver: Deriver, upto: int, *,
               shard: tuple[int, int] | None = None) -> int:
    """Apply every entry after the deriver's seq up to ``upto`` (only those of one
    shard of the agents, with ``shard=(i, n)``), and the files they add to; return how
    many evidence items that was. The caller reweighs.

    The next chunk is fetched (PostgreSQL decodes its payloads, in its own process)
    while this one is applied in a worker thread, and the event loop keeps serving."""
    count = 0
    with long_lived_objects():
        span = EntrySpan(deriver.seq, upto, shard)
        async for rows in read_files(conn, span):
            await asyncio.to_thread(deriver.add_files, rows)
        chunks = read_with_targets(conn, span)
        assert isinstance(chunks, AsyncGenerator)
        pending = asyncio.ensure_future(anext(chunks, None))
        try:
            while (got := await pending) is not None:
                pending = asyncio.ensure_future(anext(chunks, None))
                await asyncio.to_thread(deriver.apply, *got)
                count += len(got[0])
            deriver.seq = upto
        finally:
            if not pending.done():
                pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)
            await chunks.aclose()
    return count


async def advance(conn: db.Connection, deriver: Deriver, upto: int) -> int:
    """Feed the deriver everything up to ``upto`` and reweigh it."""
    count = await feed(conn, deriver, upto)
    with long_lived_objects():
        await asyncio.to_thread(deriver.reweigh)
    return count
