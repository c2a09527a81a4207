"""Each check of ``bureau-check``, step by step. A check returns an :class:`Outcome` (the
steps that passed, in words, and the facts a script wants) or raises
:class:`~reporters.check.bureau.CheckFailed` naming the step that failed.

Every proof is checked against sizes and roots this side holds (a verified note, a
seq the report names, a head kept before), never against sizes the answer states;
every signature against the key in force, in the bureau's key history, at the ledger
position it covers.

What a report check proves, in order (``report``; ``file`` adds the last step):

1. the report envelope is signed by the key in force at its ``ledger.seq``, is the
   agent's, and is of the epoch asked for — without ``--epoch``, of the latest sealed
   epoch, the one ``/v1/checkpoints/latest`` names (signed, with the report's seq and
   head);
2. its epoch's checkpoint (JSON) is signed by the key in force at its seq and names the
   same ledger ``seq`` and ``head`` as the report;
3. the epoch's checkpoint note is signed by the key in force at its size, with the same
   size and root as the checkpoint, that size being the report's seq (and, if asked,
   cosigned by enough witnesses);
4. the report's ``ledger.head`` is leaf ``seq − 1``, the last, of that tree (an
   inclusion proof);
5. that tree is a prefix of the tree the bureau publishes now (a consistency proof);
6. (``file``) the agent's own file, read with its key, has the report's
   ``evidence.root`` up to ``ledger.seq``: the report was computed over exactly the
   entries the agent can see about itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import nacl.signing

from reporters import (
    Agent,
    BureauClientError,
    VerificationError,
    VerifiedCheckpoint,
    evidence_root,
    key_id,
    strictjson,
    verify_chain,
    verify_checkpoint,
    verify_consistency,
    verify_inclusion,
    verify_report,
    verify_settlement,
    verify_share,
)
from reporters.check.bureau import Bureau, CannotCheck, CheckFailed, Trust, open_note

_ENTRY_ID = re.compile(r"[0-9a-f]{64}")


@dataclass
class Outcome:
    """What a check verified: ``steps`` for people, ``facts`` for scripts."""

    command: str
    trust: Trust
    steps: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def step(self, text: str) -> None:
        self.steps.append(text)


def _failed(what: str, exc: VerificationError) -> CheckFailed:
    return CheckFailed(f"{what}: {exc.code}" + (f" at {exc.path}" if exc.path else "")
                       + f": {exc.detail}")


@dataclass(frozen=True)
class Witnessing:
    """Witness cosignature vkeys a note must carry, and how many of them."""

    witnesses: tuple[str, ...] = ()
    threshold: int = 0


NO_WITNESSES = Witnessing()


@dataclass(frozen=True)
class Checking:
    """What every check stands on: the bureau it reads (its routes), the keys it trusts,
    and the witnesses a note must carry."""

    bureau: Bureau
    trust: Trust
    witnessing: Witnessing = NO_WITNESSES

    def open_note(self, note: str, what: str) -> VerifiedCheckpoint:
        """``note`` verified against the trusted key and the witnesses asked for."""
        w = self.witnessing
        return open_note(note, self.trust, w.witnesses, w.threshold, what)

    async def latest_note(self) -> VerifiedCheckpoint:
        """The latest checkpoint note the bureau publishes, verified the same way."""
        w = self.witnessing
        return await self.bureau.checkpoint(self.trust, w.witnesses, w.threshold)


async def _consistent_with_latest(checking: Checking, out: Outcome,
                                  older: VerifiedCheckpoint) -> VerifiedCheckpoint:
    """Step: ``older`` is a prefix of what the bureau publishes now."""
    bureau = checking.bureau
    latest = await checking.latest_note()
    if latest.size < older.size:
        raise CheckFailed(f"the bureau's latest checkpoint has size {latest.size}, smaller "
                          f"than the size {older.size} it signed before: it rewound its tree")
    proof = await bureau.consistency(older.size, latest)
    try:
        verify_consistency(proof, older, latest)
    except VerificationError as exc:
        raise _failed(f"the tree of size {older.size} is not a prefix of the latest "
                      f"(size {latest.size})", exc) from None
    out.step(f"the tree of size {older.size} is a prefix of the latest published tree "
             f"(size {latest.size}, root {latest.root_hex})")
    out.facts["latest"] = {"size": latest.size, "root": latest.root_hex}
    return latest


@dataclass(frozen=True)
class SignedCheckpoint:
    """An epoch's JSON checkpoint, verified and read."""

    epoch: int
    seq: int
    head: str
    entries: Any
    root: Any


async def _checkpoint(bureau: Bureau, trust: Trust, which: str) -> SignedCheckpoint:
    """``GET /v1/checkpoints/{which}``, signed by the key in force at its seq."""
    doc = await bureau.get_json(f"/v1/checkpoints/{which}", "checkpoint")
    try:
        payload = verify_checkpoint(doc, trust.history)
    except VerificationError as exc:
        raise _failed(f"the checkpoint {which} does not verify", exc) from None
    epoch, seq, head = payload.get("epoch"), payload.get("seq"), payload.get("head")
    if type(epoch) is not int or type(seq) is not int or not isinstance(head, str):
        raise CheckFailed(f"the checkpoint {which} names no epoch, seq and head")
    return SignedCheckpoint(epoch, seq, head, payload.get("entries"), payload.get("root"))


@dataclass(frozen=True)
class _Report:
    payload: dict[str, Any]
    epoch: int
    seq: int
    head: str


def _open_report(envelope: bytes, trust: Trust, agent: str, where: str) -> _Report:
    try:
        doc = strictjson.loads(envelope)
    except strictjson.StrictJSONError:
        raise CheckFailed(f"{where} is not a JSON envelope") from None
    try:
        report = verify_report(doc, trust.history)
    except VerificationError as exc:
        raise _failed(f"{where} is not a report signed by the bureau's key in force at "
                      "its ledger seq", exc) from None
    if report.get("agent") != agent:
        raise CheckFailed(f"the report is about {str(report.get('agent'))[:80]}, not {agent}")
    ledger, epoch = report.get("ledger"), report.get("epoch")
    if not isinstance(ledger, Mapping) or type(epoch) is not int:
        raise CheckFailed("the report names no epoch and ledger")
    seq, head = ledger.get("seq"), ledger.get("head")
    if type(seq) is not int or seq < 1 or not isinstance(head, str) \
            or not _ENTRY_ID.fullmatch(head):
        raise CheckFailed("the report's ledger has no seq and head")
    return _Report(report, epoch, seq, head)


async def _the_report(bureau: Bureau, trust: Trust, agent: str, epoch: int | None,
                      envelope: bytes | None) -> tuple[_Report, SignedCheckpoint | None]:
    """Step 1: the report, of the epoch asked for; without one, of the latest sealed
    epoch. A report fetched just before a seal is fetched once more, so a seal between
    the two reads is not taken for a stale report. From a static mirror, the latest
    sealed epoch is read first and then its report (the mirror writes an epoch's reports
    before it says the epoch is the latest)."""
    if envelope is None and epoch is None and await bureau.static():
        latest = await _checkpoint(bureau, trust, "latest")
        path = await bureau.report_path(agent, latest.epoch)
        raw = await bureau.get(path, "report")
        assert raw is not None
        report = _open_report(raw, trust, agent, bureau.url + path)
        if (report.epoch, report.seq, report.head) != (latest.epoch, latest.seq, latest.head):
            raise CheckFailed(f"the report at {path} is of epoch {report.epoch}, seq "
                              f"{report.seq}; the latest checkpoint says epoch "
                              f"{latest.epoch}, seq {latest.seq}")
        return report, latest
    path = await bureau.report_path(agent, epoch)
    attempts = 1 if envelope is not None or epoch is not None else 2
    for attempt in range(attempts):
        if envelope is None or attempt:
            raw = await bureau.get(path, "report")
            assert raw is not None
            where = bureau.url + path
        else:
            raw, where = envelope, "the report given"
        report = _open_report(raw, trust, agent, where)
        if epoch is not None:
            if report.epoch != epoch:
                raise CheckFailed(f"the report is of epoch {report.epoch}, not of epoch "
                                  f"{epoch} (--epoch)")
            return report, None
        latest = await _checkpoint(bureau, trust, "latest")
        if report.epoch == latest.epoch:
            if (report.seq, report.head) != (latest.seq, latest.head):
                raise CheckFailed(f"the report of epoch {report.epoch} names seq "
                                  f"{report.seq}, the latest checkpoint seq {latest.seq}")
            return report, latest
        if report.epoch > latest.epoch:
            raise CheckFailed(f"the report is of epoch {report.epoch}, later than the latest "
                              f"sealed epoch {latest.epoch} /v1/checkpoints/latest names")
        if attempt + 1 == attempts:
            break
    raise CheckFailed(f"the report is of epoch {report.epoch}, but the latest sealed epoch "
                      f"is {latest.epoch} (/v1/checkpoints/latest): not the latest report")


async def check_report(checking: Checking, agent: str, *, epoch: int | None = None,
                       envelope: bytes | None = None,
                       command: str = "report") -> tuple[Outcome, dict[str, Any]]:
    """Steps 1-5 above; the outcome and the verified report payload."""
    bureau, trust = checking.bureau, checking.trust
    out = Outcome(command, trust)
    report, latest = await _the_report(bureau, trust, agent, epoch, envelope)
    seq, head = report.seq, report.head
    signer = trust.history.at(seq).key_id
    out.step(f"the report of {agent} at epoch {report.epoch} is signed by {signer}, the "
             f"key in force at seq {seq}")
    if latest is not None:
        out.step(f"it is the latest report: epoch {report.epoch} is the latest sealed, "
                 "as /v1/checkpoints/latest says")
    out.facts.update(agent=agent, epoch=report.epoch, ledger={"seq": seq, "head": head},
                     evidence=report.payload.get("evidence"))

    checkpoint = latest or await _checkpoint(bureau, trust, str(report.epoch))
    if (checkpoint.epoch, checkpoint.seq, checkpoint.head) != (report.epoch, seq, head):
        raise CheckFailed(f"the checkpoint of epoch {report.epoch} names epoch "
                          f"{checkpoint.epoch}, seq {checkpoint.seq} and head "
                          f"{checkpoint.head}, the report seq {seq} and head {head}")
    out.step(f"the checkpoint of epoch {report.epoch} is signed and names the same seq "
             f"{seq} and head {head}")

    note = await bureau.get_text(await bureau.epoch_note_path(report.epoch), "note")
    tree = checking.open_note(note, f"the note of epoch {report.epoch}")
    if (tree.size, tree.root_hex) != (checkpoint.entries, checkpoint.root) or tree.size != seq:
        raise CheckFailed(f"the note of epoch {report.epoch} (size {tree.size}, root "
                          f"{tree.root_hex}) is not the checkpoint's tree (entries "
                          f"{str(checkpoint.entries)[:30]}, root {str(checkpoint.root)[:70]}) "
                          f"ending at the report's seq {seq}")
    out.step(f"the note of epoch {report.epoch} is signed by {trust.origin}: tree size "
             f"{tree.size}, root {tree.root_hex}"
             + (f", cosigned by {', '.join(c.witness for c in tree.cosignatures)}"
                if tree.cosignatures else ""))

    proof = await bureau.inclusion(head, tree, seq - 1)
    try:
        verify_inclusion(head, proof, tree, leaf_index=seq - 1)
    except VerificationError as exc:
        raise _failed(f"the report's head {head} is not entry {seq} of that tree",
                      exc) from None
    out.step(f"entry {seq} ({head}) is the last leaf of that tree")
    await _consistent_with_latest(checking, out, tree)
    return out, report.payload


async def check_inclusion(checking: Checking, entry_id: str, *, note: str | None = None,
                          seq: int | None = None) -> Outcome:
    """An entry is in the tree of a checkpoint note (given, or the latest published),
    at seq ``seq`` when given (the seq a receipt names)."""
    if not _ENTRY_ID.fullmatch(entry_id):
        raise CannotCheck(f"{entry_id!r} is not an entry id (64 lowercase hex digits)")
    bureau, trust = checking.bureau, checking.trust
    out = Outcome("inclusion", trust)
    if note is None:
        tree = await checking.latest_note()
        out.step(f"the latest checkpoint is signed by {trust.origin}: size {tree.size}, "
                 f"root {tree.root_hex}")
    else:
        tree = checking.open_note(note, "the note given")
        out.step(f"the note given is signed by {trust.origin}: size {tree.size}, root "
                 f"{tree.root_hex}")
    if seq is not None and not 1 <= seq <= tree.size:
        raise CheckFailed(f"entry seq {seq} is not in a tree of size {tree.size}")
    proof = await bureau.inclusion(entry_id, tree, None if seq is None else seq - 1)
    try:
        index = verify_inclusion(entry_id, proof, tree,
                                 leaf_index=None if seq is None else seq - 1)
    except VerificationError as exc:
        raise _failed(f"entry {entry_id} is not proven in the tree of size {tree.size}",
                      exc) from None
    out.step(f"entry {entry_id} is leaf {index} (seq {index + 1}) of that tree")
    out.facts.update(entry=entry_id, leaf_index=index, size=tree.size, root=tree.root_hex)
    if note is not None:
        await _consistent_with_latest(checking, out, tree)
    return out


async def check_consistency(checking: Checking, old_note: str,
                            new_note: str | None = None) -> Outcome:
    """The tree of ``old_note`` is a prefix of the tree of ``new_note`` (default: the
    latest published)."""
    trust = checking.trust
    out = Outcome("consistency", trust)
    old = checking.open_note(old_note, "the older note")
    out.step(f"the older note is signed by {trust.origin}: size {old.size}, root "
             f"{old.root_hex}")
    out.facts["old"] = {"size": old.size, "root": old.root_hex}
    if new_note is None:
        await _consistent_with_latest(checking, out, old)
        return out
    new = checking.open_note(new_note, "the newer note")
    out.step(f"the newer note is signed by {trust.origin}: size {new.size}, root "
             f"{new.root_hex}")
    out.facts["new"] = {"size": new.size, "root": new.root_hex}
    if new.size < old.size:
        old, new = new, old  # either order: the smaller must be a prefix of the larger
    proof = await checking.bureau.consistency(old.size, new)
    try:
        verify_consistency(proof, old, new)
    except VerificationError as exc:
        raise _failed(f"the tree of size {old.size} is not a prefix of the tree of size "
                      f"{new.size}: the bureau signed two histories", exc) from None
    out.step(f"the tree of size {old.size} is a prefix of the tree of size {new.size}")
    return out


async def check_file(checking: Checking, key: nacl.signing.SigningKey, *,
                     epoch: int | None = None) -> Outcome:
    """Steps 1-6: the agent's report, and its own file read with its key."""
    agent = key_id(key)
    bureau = checking.bureau
    out, report = await check_report(checking, agent, epoch=epoch, command="file")
    seq = report["ledger"]["seq"]
    claimed = report.get("evidence")
    if not isinstance(claimed, Mapping) or not isinstance(claimed.get("root"), str):
        raise CheckFailed("the report carries no evidence root")
    entries: list[dict[str, Any]] = []
    try:
        async with Agent(key, bureau.url, session=bureau.session) as me:
            async for page in me.pages():
                entries += page.raw_entries
        verify_chain(entries)
    except VerificationError as exc:
        raise _failed("the file the bureau served does not verify", exc) from None
    except BureauClientError as exc:
        raise CannotCheck(f"cannot read the file of {agent}: {exc}") from None
    try:
        root = evidence_root(entries, seq)
    except VerificationError as exc:
        raise _failed("the file the bureau served is not in seq order", exc) from None
    counted = sum(1 for e in entries if e["seq"] <= seq)
    out.facts.update(file={"entries": len(entries), "up_to_seal": counted, "root": root})
    if root != claimed["root"]:
        raise CheckFailed(f"the report's evidence root {claimed['root']} is not the root "
                          f"{root} of the {counted} entries of {agent}'s file up to seq "
                          f"{seq}: the report was not computed over the file the bureau "
                          "shows its agent")
    out.step(f"the evidence root {root} is the root of the {counted} entries of the "
             f"agent's own file up to seq {seq}")
    return out


async def check_settlement(checking: Checking, epoch: int, *,
                           key: nacl.signing.SigningKey | None = None) -> Outcome:
    """An epoch's settlement of the evaluators' pool (SPEC §8.2):

    1. the document is signed by the trusted bureau key, is of ``epoch``, and adds up
       (paid and unpaid sum to the pool; nobody paid, the empty root);
    2. (with the evaluator's ``key``) its own row, read with that key, is a leaf of the
       document's root in a tree of as many leaves as the document says were paid, and
       its units fit within what was paid.
    """
    bureau, trust = checking.bureau, checking.trust
    out = Outcome("settlement", trust)
    path = f"/v1/settlements/{epoch}"
    doc_bytes = await bureau.get(path, "settlement")
    assert doc_bytes is not None
    # The key in force at the epoch's seal, from the key history: the epoch's checkpoint
    # (verified under the history) names the seal's seq; a settlement names none.
    try:
        checkpoint = verify_checkpoint(await bureau.get_json(f"/v1/checkpoints/{epoch}",
                                                             "checkpoint"),
                                       trust.history)
        signer = trust.history.at(checkpoint["seq"]).key_id
    except VerificationError as exc:
        raise _failed(f"the checkpoint of epoch {epoch} does not verify", exc) from None
    try:
        doc = verify_settlement(strictjson.loads(doc_bytes), signer, epoch)
    except strictjson.StrictJSONError:
        raise CheckFailed(f"{bureau.url}{path} is not a JSON envelope") from None
    except VerificationError as exc:
        raise _failed(f"{bureau.url}{path} is not a settlement of epoch {epoch} signed by "
                      f"{signer}", exc) from None
    out.step(f"the settlement of epoch {epoch} is signed by {signer}, the key in force at "
             f"its seal (seq {checkpoint['seq']}): pool "
             f"{doc['pool']}, paid {doc['paid']} to {doc['evaluators']} evaluators, "
             f"unpaid {doc['unpaid']}" + (" (a quiet epoch: nobody earned)"
                                         if doc["evaluators"] == 0 else ""))
    out.facts.update(settlement=doc)
    if key is None:
        return out
    me = key_id(key)
    try:
        async with Agent(key, bureau.url, session=bureau.session) as agent:
            answer = await agent.settlement(epoch)
    except BureauClientError as exc:
        raise CannotCheck(f"cannot read the settlement row of {me}: {exc}") from None
    try:
        units = verify_share(answer, doc, me)
    except VerificationError as exc:
        raise _failed(f"the row the bureau served {me}", exc) from None
    out.facts.update(evaluator=me, units=units,
                     share=None if units == 0 else {"leaf_index": answer["leaf_index"],
                                                    "score": answer["row"]["score"]})
    if units == 0:
        out.step(f"{me} has no row: it earned nothing in epoch {epoch}")
    else:
        out.step(f"{me}'s row (units {units}, score {answer['row']['score']}) is leaf "
                 f"{answer['leaf_index']} of the settlement's root, in a tree of the "
                 f"{doc['evaluators']} evaluators paid; {units} of the {doc['paid']} units "
                 f"paid of the pool of {doc['pool']}")
    return out
