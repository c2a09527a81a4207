"""Where the attacks are played: a live bureau, reached only through its public
interfaces — the ``reporters`` library (a gateway :class:`~reporters.Reporter` spooling
facts and probes, :class:`~reporters.Agent` parties that enroll, attest, judge value and
amend, an :class:`~reporters.Admin`), and signed reports fetched and verified.

Every party gets an operator and an anchor of its own (nobody is linked unless an attack
says so), every interaction an id of its own, so attacks can share one bureau and one
epoch without seeing each other: the only state they share is the ledger's, and every
score in a report is per subject.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import secrets
import tempfile
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import aiohttp
import nacl.signing

from bureau.simulate.driver import Target
from bureau.simulate.epochs import seal_current
from reporters import Admin, Agent, Reporter, verify_report, wire
from reporters.models import AttestationOutcome, FactPayload

Check = Literal["PASS", "FAIL"] | None
#: millionths of the currency: one unit
UNIT = 1_000_000
CURRENCY = "USD"


@dataclass(frozen=True)
class Party:
    """An enrolled agent: a subject, an evaluator, or both."""

    label: str
    key: nacl.signing.SigningKey
    operator: str
    anchor: str

    @property
    def kid(self) -> str:
        return wire.signing_key_id(self.key)


@dataclass(eq=False)
class Arena:
    """One bureau, one gateway reporter (facts and probes), and the parties of every
    attack. Use :func:`arena` to get one."""

    target: Target
    http: aiohttp.ClientSession
    admin: Admin
    gateway: Reporter
    #: ``GET /v1/bureau``: the key that signs reports, the epoch length
    bureau: dict[str, Any]
    #: ``GET /v1/policy``: the policy document in force, as any attacker can read it
    policy: dict[str, Any]
    #: where the spools of the reporters :meth:`reporter` adds are kept
    spool_root: Path
    #: what closes them with the arena
    stack: AsyncExitStack
    _reporter_names: dict[str, str] = field(default_factory=dict, init=False)
    #: ids unique per run, even on a reused bureau
    _tag: str = field(default_factory=lambda: secrets.token_hex(3), init=False)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1), init=False)
    _limit: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(16),
                                      init=False)

    # ------------------------------------------------------------------ parties

    def _name(self, label: str) -> str:
        """A name unique in this run that is also a host-name label."""
        safe = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
        return f"{safe}-{next(self._ids)}-{self._tag}"

    async def enroll(self, label: str, *, operator: str | None = None,
                     anchor: str | None = None) -> Party:
        """A new agent, enrolled with an operator and an anchor no one else has unless
        given. (Each anchor is a registrable domain of its own: ``<name>.example``, under
        the implicit ``*`` rule of the public suffix list, so no two are linked.)"""
        name = self._name(label)
        party = Party(name, wire.generate_key(), operator or f"{name} Ltd",
                      anchor or f"{name}.example")
        async with self._limit, self._agent(party) as a:
            await a.enroll(name, party.anchor, party.operator)
        return party

    async def enroll_many(self, label: str, n: int) -> list[Party]:
        return list(await asyncio.gather(*(self.enroll(label) for _ in range(n))))

    @asynccontextmanager
    async def _agent(self, party: Party) -> AsyncIterator[Agent]:
        async with Agent(party.key, self.target.url, session=self.http) as agent:
            yield agent

    async def checks_seen(self, party: Party) -> dict[str, Check]:
        """What ``party`` can read in its own file before it attests: the deliverable
        check of each interaction it called (``GET /v1/agents/{agent}/entries``)."""
        seen: dict[str, Check] = {}
        async with self._agent(party) as a:
            async for page in a.pages(limit=1000):
                for entry in page.entries:
                    if isinstance(entry.payload, FactPayload) and entry.payload.caller == party.kid:
                        seen[entry.payload.interaction] = entry.payload.check
        return seen

    async def amend(self, party: Party, *, operator: str | None = None,
                    anchor: str | None = None) -> None:
        async with self._agent(party) as a:
            await a.amend(operator=operator, anchor=anchor)

    async def reporter(self, label: str) -> Reporter:
        """Another registered reporter (role ``facts``), with a spool of its own; it is
        closed with the arena."""
        key = wire.generate_key()
        name = self._reporter_names[wire.signing_key_id(key)] = self._name(label)
        await self.admin.register_reporter(wire.signing_key_id(key), name, f"{name} Co",
                                           ["facts"])
        return await self.stack.enter_async_context(
            Reporter(key, self.target.url, self.spool_root / name))

    async def distrust(self, reporter: Reporter, since: str) -> None:
        """The admin re-issues ``reporter``'s registration, declaring its evidence
        untrustworthy from ``since`` on (SPEC §3, distrust)."""
        name = self._reporter_names[reporter.key_id]
        await self.admin.register_reporter(reporter.key_id, name, f"{name} Co", ["facts"],
                                           distrusted_from=since)

    # ------------------------------------------------------------------ evidence

    async def calls(self, subject: Party, n: int, *, caller: Party | None = None,
                    check: Check = None, reporter: Reporter | None = None) -> list[str]:
        """``n`` interactions of ``subject`` (called by ``caller``, a one-off user when
        None) that the gateway (or ``reporter``) reports: answered, claimed a success,
        the deliverable check as given. Returns their ids once spooled."""
        via = reporter or self.gateway
        ids = [f"adv-{next(self._ids):06d}-{self._tag}" for _ in range(n)]
        await asyncio.gather(*(via.send(via.fact(
            ia, subject.kid, caller=caller.kid if caller else None, latency_ms=200,
            well_formed=True, claimed="SUCCESS", check=check)) for ia in ids))
        return ids

    async def engagement(self, subject: Party, buyer: Party, spent: int) -> str:
        """A time-and-materials engagement of ``subject`` by ``buyer`` the gateway
        reports, ``spent`` millionths in all; returns its id."""
        eid = f"eng-{next(self._ids):06d}-{self._tag}"
        await self.gateway.send(self.gateway.fact(
            f"adv-{next(self._ids):06d}-{self._tag}", subject.kid, caller=buyer.kid,
            latency_ms=200, well_formed=True, claimed="SUCCESS", engagement={
                "id": eid, "arrangement": "TIME_AND_MATERIALS", "cap": max(spent, UNIT),
                "spent": spent, "currency": CURRENCY, "units": [{"unit": "hour",
                                                                  "quantity": 1}],
                "concluded": "COMPLETED"}))
        return eid

    async def probe(self, subject: Party, interaction: str, passed: bool) -> None:
        """The gateway's probe result for one of its interactions (a covert probe: the
        caller did not know the call was one)."""
        await self.gateway.send(self.gateway.probe(interaction, subject.kid, "known-answer",
                                                   passed))

    async def attest(self, evaluator: Party, subject: Party, interaction: str,
                     outcome: AttestationOutcome, corrections: int = 0) -> None:
        async with self._limit, self._agent(evaluator) as a:
            await a.attest(self.gateway.key_id, interaction, subject.kid, outcome, corrections)

    async def attest_all(self, verdicts: Iterable[tuple[Party, Party, str, AttestationOutcome,
                                                        int]]) -> None:
        """(evaluator, subject, interaction, outcome, corrections) each, concurrently."""
        await asyncio.gather(*(self.attest(*v) for v in verdicts))

    async def judge(self, buyer: Party, subject: Party, engagement: str, spent: int,
                    judgment: Literal["VALUE_OK", "VALUE_POOR"]) -> None:
        async with self._limit, self._agent(buyer) as a:
            await a.value_judgment(self.gateway.key_id, engagement, subject.kid, judgment,
                                   spent, CURRENCY, {"hour": 1})

    async def settle(self, *reporters: Reporter) -> None:
        """Wait until the bureau has admitted everything spooled; a refusal is a bug in
        the attack (the arena sends only what the bureau must accept)."""
        for r in (self.gateway, *reporters):
            await r.flush()
            if r.rejections:
                raise RuntimeError(f"the bureau refused a reporter's envelope: "
                                   f"{r.rejections[0]}")

    # ------------------------------------------------------------------ epochs, reports

    async def seal(self, max_wait: float = 120.0) -> int:
        """Wait for the bureau's current epoch to end, have it sealed, and wait until its
        checkpoint (and so its reports) is out. Returns the epoch."""
        return await seal_current(self.http, self.target.url, self.admin,
                                  int(self.bureau["epoch_seconds"]), max_wait)

    async def report(self, party: Party, epoch: int | None = None) -> dict[str, Any]:
        """The party's signed report (the latest, or of ``epoch``), verified against the
        bureau's key."""
        query = "" if epoch is None else f"?epoch={epoch}"
        async with self.http.get(f"{self.target.url}/v1/agents/{party.kid}/report{query}"
                                 ) as resp:
            resp.raise_for_status()
            envelope = json.loads(await resp.read())
        return verify_report(envelope, self.bureau["key"])


@asynccontextmanager
async def arena(target: Target) -> AsyncIterator[Arena]:
    """An arena on ``target``: the gateway registered, everything closed afterwards."""
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(aiohttp.ClientSession())
        async with http.get(target.url + "/v1/bureau") as resp:
            resp.raise_for_status()
            bureau: dict[str, Any] = await resp.json()
        async with http.get(target.url + "/v1/policy") as resp:
            resp.raise_for_status()
            policy: dict[str, Any] = json.loads(await resp.read())
        admin = await stack.enter_async_context(Admin(target.admin, target.url))
        spools = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bureau-adv-")))
        key = wire.generate_key()
        await admin.register_reporter(wire.signing_key_id(key), "adversarial-gateway",
                                      "Gateway Co", ["facts", "probes"])
        gateway = await stack.enter_async_context(Reporter(key, target.url, spools / "gw"))
        yield Arena(target=target, http=http, admin=admin, gateway=gateway, bureau=bureau,
                    policy=policy, spool_root=spools, stack=stack)
