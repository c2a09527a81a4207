"""The run: start the agents and the proxy, drive the sessions epoch by epoch, have
the evaluators attest and the prober probe, seal each epoch, and read the results."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections import Counter
from collections.abc import Awaitable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import nacl.signing

from bureau.scoring import EvaluatorStats
from bureau.scoring.policy import KNOWN_POLICIES, policy_by_hash, policy_named
from bureau.simulate import ledger_view
from bureau.simulate.epochs import seal_current
from bureau.simulate.loopback import serving
from bureau.simulate.pay import Payroll, open_pool, payroll
from bureau.simulate.population import Member, Session, enroll_all, next_agent, plan
from bureau.simulate.progress import Progress
from bureau.simulate.world import (
    EVALUATOR_KINDS,
    HONEST_EVALUATORS,
    SimAgent,
    Task,
    chance,
    deliverable_check,
    seen,
    verdict,
)
from reporters import Admin, Agent, Rejected, Reporter, wire
from reporters.httpsig import sign_request_headers
from reporters.proxy import INTERACTION_HEADER, Proxy, from_mapping
from reporters.proxy.measure import parse_strict

T = TypeVar("T")


@dataclass(frozen=True)
class Options:
    agents: int = 8
    #: sessions in all (a session is one task; retries and switches add calls)
    interactions: int = 400
    epochs: int = 3
    seed: int = 1
    #: share of tasks the gateway's deliverable check verifies
    check_share: float = 0.5
    #: known-answer probes per agent per epoch
    probes: int = 2
    #: share of the evaluators' calls the gateway re-checks after they attested and
    #: reports as (covert) probes: the blind ground truth evaluators are graded on
    covert_share: float = 0.5
    #: the proxy's windows: short, so an epoch settles quickly, but far longer than the
    #: gap between a failed call and its retry even on a loaded machine
    settle_seconds: float = 0.5
    quiet_seconds: float = 1.5
    concurrency: int = 16
    #: longest wait for an epoch to end and its reports to appear
    max_epoch_wait: float = 120.0
    #: the evaluators' pool of each epoch, in units (0: no settlement)
    pool: int = 1000


@dataclass(frozen=True)
class Target:
    """A running bureau and an admin key of it."""

    url: str
    admin: nacl.signing.SigningKey


@dataclass
class AgentRow:
    member: Member
    report: dict[str, Any] | None


@dataclass
class EvaluatorRow:
    member: Member
    stats: EvaluatorStats | None
    attempted: int
    refused: Counter[str]
    #: units of the evaluators' pool it was paid over every settled epoch
    units: int = 0


@dataclass
class Result:
    agents: list[AgentRow]
    evaluators: list[EvaluatorRow]
    derived: Counter[str]
    calls: int
    epochs_sealed: list[int] = field(default_factory=list)
    #: the name of the policy that scored the reports
    policy: str = ""
    #: policy name -> how much the honest evaluators' verdicts weigh under it, the same
    #: ledger scored by every policy the bureau knows
    honest_weight: dict[str, ledger_view.VerdictWeight] = field(default_factory=dict)
    #: the settled epochs of the evaluators' pool
    payroll: Payroll = field(default_factory=Payroll)

    def score(self, kind: str) -> list[float]:
        return [r.report["score"]["value"] for r in self.agents
                if r.member.kind == kind and r.report and r.report["score"]]

    def evaluator(self, kind: str) -> EvaluatorRow:
        return next(r for r in self.evaluators if r.member.kind == kind)


async def _limited(sem: asyncio.Semaphore, work: Awaitable[T]) -> T:
    async with sem:
        return await work


@dataclass
class _Attestation:
    evaluator: Member
    interaction: str
    subject: str
    what: str
    task: str


class Simulation:
    def __init__(self, options: Options, target: Target, progress: Progress) -> None:
        self.o = options
        self.target = target
        self.progress = progress
        self.calls = 0
        self.attempted: Counter[str] = Counter()
        self.refused: dict[str, Counter[str]] = {k: Counter() for k in EVALUATOR_KINDS}
        self.sealed: list[int] = []

    async def run(self) -> Result:
        o = self.o
        if o.agents < 4 or o.epochs < 1 or o.interactions < o.epochs:
            raise ValueError("need at least 4 agents, 1 epoch and 1 interaction an epoch")
        async with AsyncExitStack() as stack:
            self.http = await stack.enter_async_context(aiohttp.ClientSession())
            bureau = await ledger_view.bureau_key(self.http, self.target.url)
            self.epoch_seconds = int(bureau["epoch_seconds"])
            if self.epoch_seconds > o.max_epoch_wait:
                raise ValueError(
                    f"the bureau's epochs last {self.epoch_seconds} s: run it with a short "
                    "BUREAU_EPOCH_SECONDS (e.g. 5) to simulate several epochs")
            self.admin = await stack.enter_async_context(Admin(self.target.admin, self.target.url))
            if o.pool:
                await open_pool(self.admin, o.pool, self.epoch_seconds)
            self.agents, self.evaluators = await enroll_all(self.target.url, o.seed, o.agents)
            self.sim_agents = [SimAgent(m.name, m.kind, o.seed) for m in self.agents]  # type: ignore[arg-type]
            upstreams = [await stack.enter_async_context(a.serve()) for a in self.sim_agents]
            self.upstreams = upstreams
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bureau-sim-")))
            self.proxy, self.proxy_url = await self._start_proxy(stack, tmp, upstreams)
            prober_key = wire.generate_key()
            await self.admin.register_reporter(wire.signing_key_id(prober_key), "sim-prober",
                                               "Probe Co", ["probes"])
            self.prober = await stack.enter_async_context(
                Reporter(prober_key, self.target.url, tmp / "prober-spool"))
            self.callers = {m.kind: m for m in self.evaluators}
            sessions = plan(o.seed, o.agents, o.interactions)
            per_epoch = [sessions[e::o.epochs] for e in range(o.epochs)]
            self.progress.start(o.interactions + o.epochs)
            for epoch, batch in enumerate(per_epoch):
                await self._epoch(epoch, batch)
            return await self._results()

    # ------------------------------------------------------------------ setup

    async def _start_proxy(self, stack: AsyncExitStack, tmp: Path,
                           upstreams: list[str]) -> tuple[Proxy, str]:
        key = wire.generate_key()
        await self.admin.register_reporter(wire.signing_key_id(key), "sim-gateway",
                                           "Gateway Co", ["facts", "probes"])
        # The gateway's own probes (re-checks of calls it carried) go through a spool of
        # their own; the proxy holds the key's other spool.
        self.rechecks = await stack.enter_async_context(
            Reporter(key, self.target.url, tmp / "recheck-spool"))
        config = from_mapping({
            "bureau_url": self.target.url, "key_file": "-", "spool_dir": str(tmp / "spool"),
            "proxy_id": f"sim-{self.o.seed}", "settle_seconds": self.o.settle_seconds,
            "quiet_seconds": self.o.quiet_seconds,
            "agents": {m.kid: {"promises": [{"promise": "p95-under-2s", "max_ms": 2000}]}
                       for m in self.agents},
            "routes": [{"prefix": f"/{m.name}", "agent": m.kid, "upstream": up,
                        "claim": {"pointer": "/status",
                                  "values": {"ok": "SUCCESS", "declined": "DECLINED"}}}
                       for m, up in zip(self.agents, upstreams, strict=True)]}, tmp)
        check = deliverable_check(self.o.seed, self.o.check_share)
        proxy = Proxy(config, key, checks={r.prefix: check for r in config.routes})
        url = await stack.enter_async_context(serving(proxy.app(), access_log=False))
        return proxy, url

    # ------------------------------------------------------------------ one epoch

    async def _epoch(self, epoch: int, sessions: list[Session]) -> None:
        self.progress.label(f"epoch {epoch + 1}/{self.o.epochs}: traffic")
        sem = asyncio.Semaphore(self.o.concurrency)
        results = await asyncio.gather(
            *(_limited(sem, self._session(s)) for s in sessions),
            *(_limited(sem, self._probe(epoch, i, k)) for i in range(len(self.agents))
              for k in range(self.o.probes)))
        attestations = [a for a in results[:len(sessions)] if a is not None]
        self.progress.label(f"epoch {epoch + 1}/{self.o.epochs}: settling facts")
        await self.proxy.settle()  # every derived outcome known, every fact admitted
        await self.prober.flush()
        self.progress.label(f"epoch {epoch + 1}/{self.o.epochs}: attestations")
        await asyncio.gather(*(_limited(sem, self._attest(a)) for a in attestations))
        await self._recheck(attestations)
        self.progress.label(f"epoch {epoch + 1}/{self.o.epochs}: sealing")
        self.sealed.append(await self._seal())
        self.progress.advance()

    async def _session(self, s: Session) -> _Attestation | None:
        """Call until an answer comes, retrying or switching as the plan says; returns
        what the evaluator will attest (None for users, and for a caller who gave up)."""
        caller = self.callers[s.caller].key if s.caller != "user" else wire.generate_key()
        agent, attempt = s.agent, 0
        try:
            while True:
                attempt += 1
                interaction, what = await self._call(agent, s.task, caller)
                if what != "none":
                    if s.caller == "user":
                        return None
                    return _Attestation(self.callers[s.caller], interaction,
                                        self.agents[agent].kid, what, s.task.id)
                nxt = next_agent(self.o.seed, s, attempt, agent, len(self.agents))
                if nxt is None:
                    return None
                agent = nxt
        finally:
            self.progress.advance()

    async def _call(self, agent: int, task: Task, caller: nacl.signing.SigningKey
                    ) -> tuple[str, str]:
        url = f"{self.proxy_url}/{self.agents[agent].name}/solve"
        body = json.dumps(task.body()).encode()
        headers = {"Content-Type": "application/json",
                   **sign_request_headers(caller, "POST", url)}
        self.calls += 1
        async with self.http.post(url, data=body, headers=headers) as resp:
            raw = await resp.read()
            interaction = resp.headers[INTERACTION_HEADER]
            ok, doc = parse_strict(raw)
            return interaction, seen(doc, body) if resp.status == 200 and ok else "none"

    async def _probe(self, epoch: int, agent: int, k: int) -> None:
        """A known-answer test, sent straight to the agent (not through the proxy: a
        probe is the prober's own interaction). No answer: nothing to report."""
        task = Task(f"probe-{epoch}-{agent}-{k}", "add", 17 * (k + 1), 25 + epoch)
        try:
            async with self.http.post(self.upstreams[agent] + "/solve",
                                      json=task.body()) as resp:
                ok, doc = parse_strict(await resp.read())
        except aiohttp.ClientError:
            return
        passed = ok and seen(doc, json.dumps(task.body()).encode()) == "correct"
        await self.prober.send(self.prober.probe(
            f"probe-{self.o.seed}-{epoch}-{agent}-{k}", self.agents[agent].kid,
            "add-known-answer", passed))

    async def _attest(self, a: _Attestation) -> None:
        v = verdict(a.evaluator.kind, a.what)  # type: ignore[arg-type]
        if v is None:
            return
        self.attempted[a.evaluator.kind] += 1
        async with Agent(a.evaluator.key, self.target.url, session=self.http) as ev:
            try:
                await ev.attest(self.proxy.reporter.key_id, a.interaction, a.subject,
                                v[0], v[1])  # type: ignore[arg-type]
            except Rejected as err:
                self.refused[a.evaluator.kind][err.code] += 1

    async def _recheck(self, attestations: list[_Attestation]) -> None:
        """After the evaluators attested, the gateway re-checks a sample of their calls
        (chosen by task id) and reports each as a probe of that interaction: the callers
        could not know which calls would be probed, so these grade them blind (SPEC §7.1).
        A declined call has nothing to re-check."""
        for a in attestations:
            if a.what in ("correct", "wrong") and \
                    chance(self.o.seed, "covert", a.task) < self.o.covert_share:
                await self.rechecks.send(self.rechecks.probe(
                    a.interaction, a.subject, "recheck", a.what == "correct"))
        await self.rechecks.flush()

    async def _seal(self) -> int:
        """Wait for the bureau's current epoch to end, ask for a seal, and wait until
        that epoch's reports are out. Returns the epoch."""
        return await seal_current(self.http, self.target.url, self.admin, self.epoch_seconds,
                                  self.o.max_epoch_wait)

    # ------------------------------------------------------------------ results

    async def _results(self) -> Result:
        bureau = await ledger_view.bureau_key(self.http, self.target.url)
        files = {m.kid: await ledger_view.read_file(self.http, self.target.url, m.key)
                 for m in [*self.agents, *self.evaluators]}
        evidence = ledger_view.evidence_of(
            e for m in self.agents for e in files[m.kid].entries)
        reports = {m.kid: await ledger_view.latest_report(self.http, self.target.url, m.kid,
                                                          bureau["key"]) for m in self.agents}
        # The policy that scored the reports (each names its own), else the bureau's.
        digest = next((r["policy"] for r in reports.values() if r), bureau["policy"])
        policy, name = policy_by_hash(digest)
        table = ledger_view.evaluators(evidence, policy)
        rows = [AgentRow(m, reports[m.kid] or ledger_view.computed_report(
            m.kid, evidence, table, policy)) for m in self.agents]
        paid = await payroll(self.http, self.target.url, bureau["key"], self.sealed,
                             [m.key for m in self.evaluators])
        evaluators = [
            EvaluatorRow(m, table.get(m.kid), self.attempted[m.kind],
                         Counter(r["code"] for r in files[m.kid].refusals),
                         paid.units.get(m.kid, 0))
            for m in self.evaluators]
        derived = Counter(f.derived for f in evidence.facts if f.derived is not None)
        honest = {m.kid for m in self.evaluators if m.kind in HONEST_EVALUATORS}
        weights = {other: ledger_view.verdict_weight(
            [m.kid for m in self.agents], evidence, policy_named(other), honest)
            for other in KNOWN_POLICIES}
        return Result(rows, evaluators, derived, self.calls, self.sealed, name, weights, paid)


async def simulate(options: Options, target: Target,
                   progress: Progress | None = None) -> Result:
    """Run the simulation against ``target``; see :mod:`bureau.simulate`."""
    return await Simulation(options, target, progress or Progress(enabled=False)).run()

