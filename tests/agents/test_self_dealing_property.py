"""Property: whatever the interleaving of enrollments, amendments, facts and
attestations, no admitted *favourable* attestation stays counted while its evaluator and
subject are linked under their final identities, and no unfavourable one is ever refused
or excluded as self-dealing (SPEC §5, revision 2).

Each generated scenario runs on the module's one bureau with keys of its own, as a few
batches (so the in-group state is exercised as well as the state loaded from the
database). A small model replays the results in ledger order and predicts every code
and every exclusion, in order; its link rule is written out here independently of
``bureau.intake.links``, from the protocol's words and the same two libraries.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import idna
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from publicsuffixlist import PublicSuffixList

from reporters import wire
from tests.agents.support import Key, attestation, enrollment, interaction_id, stored_entries
from tests.support import BureauUnderTest, fact_payload, issued, kid

AGENTS = 3
# Small pools, so that links happen often, with every kind of link among them: operators
# that differ only by case, width, invisible (Cf) characters or white space; e-mails and
# domains that differ by case, IDN form, trailing dot or subdomain; neighbours under a
# private suffix (github.io) that are NOT linked; two e-mails on one domain, not linked.
OPERATORS = ["Acme", " acme ", "ＡＣＭＥ", "Ac\u200bme", "Globex", "GLOBEX  Corp",
             "globex\u00a0corp", "Initech", "Hooli", "Stark"]
ANCHORS = [("email", "sam@acme.com"), ("email", "kim@acme.com"), ("domain", "ACME.com"),
           ("email", "Sam@Acme.COM"), ("domain", "ci.acme.com."), ("email", "x@mail.acme.com"),
           ("domain", "bücher.de"), ("email", "ops@xn--bcher-kva.de"),
           ("domain", "a.github.io"), ("domain", "b.github.io"), ("email", "me@a.github.io"),
           ("domain", "hooli.xyz"), ("domain", "co.uk"), ("domain", "stark.co.uk")]
OUTCOMES = ["ACCEPTED", "DECLINED", "FAILED_DISCOVERED"]
FAVOURABLE = {"ACCEPTED", "DECLINED"}  # of OUTCOMES (SPEC §5)


@dataclass(frozen=True)
class Identity:
    operator: str
    anchor: tuple[str, str]


_SPACES = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f"
                     "\u205f\u3000]+")


def _operator(text: str) -> str:
    text = "".join(c for c in unicodedata.normalize("NFKC", text)
                   if unicodedata.category(c) != "Cf")
    return _SPACES.sub(" ", text.casefold()).strip(" ")


@cache
def _psl() -> PublicSuffixList:
    return PublicSuffixList()  # the bundled list, private section included


def _domain(text: str) -> str:
    return idna.encode(text, uts46=True, std3_rules=True,
                       transitional=False).decode().rstrip(".")


def linked(a: Identity, b: Identity) -> bool:
    """SPEC §5, written out independently of the implementation."""
    if _operator(a.operator) == _operator(b.operator):
        return True
    (ka, va), (kb, vb) = a.anchor, b.anchor
    if ka == kb == "email":
        la, _, da = va.casefold().rpartition("@")
        lb, _, db = vb.casefold().rpartition("@")
        return (la, _domain(da)) == (lb, _domain(db))
    da, db = _domain(va.rpartition("@")[2]), _domain(vb.rpartition("@")[2])
    ra, rb = _psl().privatesuffix(da), _psl().privatesuffix(db)
    return da == db if ra is None or rb is None else ra == rb


# ------------------------------------------------------------------ operations


@dataclass(frozen=True)
class Enroll:
    agent: int
    identity: Identity


@dataclass(frozen=True)
class Amend:
    agent: int
    operator: str | None
    anchor: tuple[str, str] | None


@dataclass(frozen=True)
class Fact:
    """A reporter's fact of a new interaction; the caller attests it right after when
    ``outcome`` is set."""

    subject: int
    caller: int
    outcome: str | None


@dataclass(frozen=True)
class Attest:
    """The caller of an earlier fact attests it (again, perhaps differently)."""

    fact: int  # index among the scenario's facts so far (taken modulo their number)
    outcome: str


Op = Enroll | Amend | Fact | Attest

agents = st.integers(0, AGENTS - 1)
enrolls = st.builds(Enroll, agents, st.builds(Identity, st.sampled_from(OPERATORS),
                                              st.sampled_from(ANCHORS)))
amends = st.one_of(
    st.builds(Amend, agents, st.sampled_from(OPERATORS), st.none()),
    st.builds(Amend, agents, st.none(), st.sampled_from(ANCHORS)),
    st.builds(Amend, agents, st.sampled_from(OPERATORS), st.sampled_from(ANCHORS)))
facts_ = st.one_of(
    st.builds(lambda s, d, o: Fact(s, (s + d) % AGENTS, o), agents, st.integers(1, AGENTS - 1),
              st.none() | st.sampled_from(OUTCOMES)),
    st.builds(lambda s, o: Fact(s, s, o), agents, st.sampled_from(OUTCOMES)))  # self-attesting
attests = st.builds(Attest, st.integers(0, 15), st.sampled_from(OUTCOMES))
# one_of draws its branches evenly: repeat the ones that make attestations happen
ops: st.SearchStrategy[Op] = st.one_of(enrolls, amends, amends, facts_, facts_, facts_,
                                       attests)
# Some agents enroll first, so that there are evaluators from the start.
scenarios = st.tuples(st.lists(enrolls, min_size=1, max_size=AGENTS),
                      st.lists(st.lists(ops, min_size=2, max_size=8), min_size=2, max_size=6)
                      ).map(lambda t: [t[0], *t[1]])


# ------------------------------------------------------------------ the model


@dataclass
class Model:
    """What the bureau should have done, replayed in ledger order."""

    identities: dict[int, Identity] = field(default_factory=dict)
    #: admitted attestations, in seq order: entry id -> (evaluator, subject, outcome)
    verdicts: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    #: (evaluator, fact index) -> payload of its one verdict there
    first_verdict: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    #: expected exclusion entries, in seq order: (target, cause)
    excluded: list[tuple[str, str]] = field(default_factory=list)
    #: (signer, payloadType, payload) of every admitted envelope -> its entry id
    admitted: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def attestation_code(self, evaluator: int, subject: int, fact: int,
                         payload: dict[str, Any]) -> str | None:
        """The code the bureau should refuse with, or None to admit."""
        if evaluator not in self.identities:
            return "NOT_ENROLLED"
        if payload["outcome"] in FAVOURABLE and (evaluator == subject or (
                subject in self.identities and linked(
                    self.identities[evaluator], self.identities[subject]))):
            return "SELF_DEALING"
        first = self.first_verdict.get((evaluator, fact))
        if first is not None and first != payload:
            return "DUPLICATE_VERDICT"
        return None

    def identity_changed(self, agent: int, identity: Identity, cause: str) -> None:
        self.identities[agent] = identity
        done = {target for target, _ in self.excluded}
        for entry_id, (ev, sub, outcome) in self.verdicts.items():
            if agent in (ev, sub) and outcome in FAVOURABLE and entry_id not in done:
                other = sub if ev == agent else ev
                if other in self.identities and linked(identity, self.identities[other]):
                    self.excluded.append((entry_id, cause))


@dataclass
class Scenario:
    """One generated scenario's keys and facts, and how its ops become envelopes."""

    reporter: Key
    keys: list[Key]
    facts: list[tuple[str, int, int]] = field(default_factory=list)  # interaction, subj, caller

    def envelopes(self, op: Op) -> list[tuple[Op, dict[str, Any]]]:
        if isinstance(op, Enroll):
            return [(op, wire.sign_payload(self.keys[op.agent], "enrollment",
                                           enrollment(op.identity.operator, op.identity.anchor)))]
        if isinstance(op, Amend):
            amendment: dict[str, Any] = {"issued_at": issued()}
            if op.operator is not None:
                amendment["operator"] = op.operator
            if op.anchor is not None:
                amendment["anchor"] = {"kind": op.anchor[0], "value": op.anchor[1]}
            return [(op, wire.sign_payload(self.keys[op.agent], "amendment", amendment))]
        if isinstance(op, Fact):
            ia = interaction_id()
            self.facts.append((ia, op.subject, op.caller))
            out: list[tuple[Op, dict[str, Any]]] = [(op, wire.sign_payload(
                self.reporter, "fact",
                fact_payload(ia, kid(self.keys[op.subject]), kid(self.keys[op.caller]))))]
            if op.outcome is not None:
                out += self.envelopes(Attest(len(self.facts) - 1, op.outcome))
            return out
        if not self.facts:
            return []
        n = op.fact % len(self.facts)
        ia, subject, caller = self.facts[n]
        return [(Attest(n, op.outcome), wire.sign_payload(
            self.keys[caller], "attestation",
            attestation(self.reporter, ia, self.keys[subject], op.outcome)))]


def _replay(model: Model, scenario: Scenario, op: Op, envelope: dict[str, Any],
            result: dict[str, Any]) -> None:
    """Check one intake result against the model, then apply it to the model."""
    content = (envelope["signatures"][0]["keyid"], envelope["payloadType"],
               envelope["payload"])
    if content in model.admitted:  # the same submission again, whatever happened since
        assert (result["status"], result["id"]) == ("duplicate", model.admitted[content])
        return
    code = result.get("code")
    if code is None:
        assert result["status"] == "accepted", result
        model.admitted[content] = result["id"]
    if isinstance(op, Enroll):
        assert code == ("ALREADY_ENROLLED" if op.agent in model.identities else None), result
        if code is None:
            model.identity_changed(op.agent, op.identity, result["id"])
    elif isinstance(op, Amend):
        old = model.identities.get(op.agent)
        assert code == (None if old is not None else "NOT_ENROLLED"), result
        if old is not None:
            model.identity_changed(op.agent, Identity(
                op.operator if op.operator is not None else old.operator,
                op.anchor if op.anchor is not None else old.anchor), result["id"])
    elif isinstance(op, Fact):
        assert code is None, result
    else:
        _, subject, caller = scenario.facts[op.fact]
        payload = json.loads(wire.b64decode_canonical(envelope["payload"]))
        assert code == model.attestation_code(caller, subject, op.fact, payload), result
        if code is None:
            model.first_verdict[(caller, op.fact)] = payload
            model.verdicts[result["id"]] = (caller, subject, op.outcome)


async def _run(bureau: BureauUnderTest, batches: list[list[Op]]) -> None:
    scenario = Scenario(await bureau.reporter(("facts",)),
                        [wire.generate_key() for _ in range(AGENTS)])
    model = Model()
    for batch in batches:
        pairs = [pair for op in batch for pair in scenario.envelopes(op)]
        if not pairs:
            continue
        results = await bureau.batch([envelope for _, envelope in pairs])
        for (op, envelope), result in zip(pairs, results, strict=True):
            _replay(model, scenario, op, envelope, result)

    actual = [(e.body["entry"], e.body["cause"])
              for e in await stored_entries(bureau, "exclusion")
              if e.body["entry"] in model.verdicts]
    event(f"attestations admitted: {min(len(model.verdicts), 3)}+")
    event(f"retroactive exclusions: {min(len(actual), 2)}+")
    assert actual == model.excluded

    # The property itself, under the final identities only: every favourable verdict
    # between linked parties is excluded, and no unfavourable verdict ever is.
    excluded = {target for target, _ in actual}
    kept = 0
    for entry_id, (ev, sub, outcome) in model.verdicts.items():
        is_linked = sub in model.identities and linked(model.identities[ev],
                                                       model.identities[sub])
        if outcome not in FAVOURABLE:
            assert entry_id not in excluded, f"unfavourable attestation {entry_id} erased"
            kept += is_linked
        elif is_linked:
            assert entry_id in excluded, f"self-dealing attestation {entry_id} still counts"
    event(f"unfavourable attestations kept between linked agents: {min(kept, 2)}+")


# No shrink phase: shrinking replays hundreds of HTTP scenarios (minutes, past the test
# timeout); the failing scenario is printed as generated, and it reads well enough.
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(batches=scenarios)
async def test_no_self_dealing_attestation_is_left_counted(
        bureau: BureauUnderTest, batches: list[list[Op]]) -> None:
    await _run(bureau, batches)
