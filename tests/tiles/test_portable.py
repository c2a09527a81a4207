"""A report's proof bundle and its card (SPEC §9.1 r4), served by a bureau whose
witness cosigns its heads, and checked by ``bureau-check bundle`` / ``card`` with no
network: good ones verify (with a witness quorum), and a forged score, another agent or
epoch than claimed, another key, a cosignature of another log, too few cosignatures and
a truncated file each fail with one line."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import nacl.signing
import pytest

from bureau.http.keys import PUBLISHER
from bureau.mirror.documents import Site
from bureau.mirror.files import CannotWrite
from bureau.mirror.sync import Mirror
from bureau.storage import chain
from reporters import layout, wire
from reporters.portable import MAX_CARD_BYTES, card_bytes
from reporters.tlog.checkpoint import Checkpoint, cosign
from reporters.tlog.tlogproof import TlogProof
from reporters.tlog.witness import parse_witnesses
from tests.support import BureauUnderTest, get, get_json, kid, serving, start_bureau, until
from tests.tiles.support import Oracle, bureau_check, last_json
from tests.transparency.witness import TestWitness
from tests.views.support import EPOCH_SECONDS, World, next_epoch


@dataclass
class Sealed:
    bureau: BureauUnderTest
    witness: TestWitness
    agent: str
    other: str
    epoch: int


async def _sealed(bureau: BureauUnderTest, witness: TestWitness) -> Sealed:
    world = await World.make(bureau)
    agent, other = await world.agent("alpha"), await world.agent("beta")
    for _ in range(3):
        await world.fact(agent, caller=other)
    [epoch] = await next_epoch(bureau)
    await bureau.app[PUBLISHER].tick()  # the head after the seal, offered to the witness
    # the cosignature of the head after the seal, as the bundle carries it (the
    # witness may have cosigned an earlier head first)
    async def cosigned() -> bool:
        status, body = await get(bureau, f"/v1/agents/{kid(agent)}/proof")
        return status == 200 and "— witness.test/tiles " in json.loads(body)["log"]

    await until("the witness's cosignature in the agent's bundle", cosigned)
    return Sealed(bureau, witness, kid(agent), kid(other), epoch)


@pytest.fixture
async def witnessed(database_url: str, tmp_path: Path
                    ) -> AsyncIterator[tuple[BureauUnderTest, TestWitness]]:
    """A bureau whose publisher (ticked by the test) offers each head to a witness."""
    witness = TestWitness("witness.test/tiles", nacl.signing.SigningKey(os.urandom(32)), {})
    async with serving(witness.app()) as url:
        (client,) = parse_witnesses(f"{witness.vkey}={url}/")
        async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS,
                                witnesses=(client,), checkpoint_interval=3600) as bureau:
            witness.logs = {bureau.log_key.origin: [bureau.log_key.signer.verifier]}
            yield bureau, witness


@pytest.fixture
async def sealed(witnessed: tuple[BureauUnderTest, TestWitness]) -> Sealed:
    return await _sealed(*witnessed)


async def _document(s: Sealed, what: str, query: str = "") -> tuple[bytes, dict[str, Any]]:
    status, body = await get(s.bureau, f"/v1/agents/{s.agent}/{what}{query}")
    assert status == 200, body[:300]
    return body, json.loads(body)


def _write(tmp_path: Path, name: str, data: bytes | dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return str(path)


@pytest.mark.slow  # bureau-check in a process of its own
async def test_a_bundle_verifies_offline_with_the_witness_quorum(
        sealed: Sealed, tmp_path: Path) -> None:
    s = sealed
    body, bundle = await _document(s, "proof")
    _, report = await get_json(s.bureau, f"/v1/agents/{s.agent}/report")
    assert bundle["report"] == report and bundle["format"] == "bureau-proof-bundle/v1"
    log = TlogProof.parse(bundle["log"])
    payload = json.loads(base64.b64decode(report["payload"]))
    assert log.index == payload["ledger"]["seq"] - 1
    assert "— witness.test/tiles " in log.checkpoint  # cosigned
    assert wire.canonical_json(bundle) == body
    ran = await bureau_check("bundle", _write(tmp_path, "b.json", body), "--key",
                             s.bureau.log_key.vkey, "--witness", s.witness.vkey,
                             "--quorum", "1", "--agent", s.agent, "--epoch", str(s.epoch))
    assert ran.status == 0, ran.out
    assert "bureau-check bundle: OK (offline)" in ran.out
    assert "cosigned by witness.test/tiles" in ran.out
    assert "NOT CHECKED: that this tree is a prefix" in ran.out
    ran = await bureau_check("bundle", _write(tmp_path, "b.json", body), "--key",
                             s.bureau.log_key.vkey, "--json")
    doc = last_json(ran.out)
    assert ran.status == 0 and doc["ok"] and doc["score"] == payload["score"], ran.out
    # no --witness: no cosignature is trusted, so none is counted (and it says so)
    assert doc["agent"] == s.agent and doc["cosigned_by"] == []
    assert any("witness" in u for u in doc["unchecked"])


@pytest.mark.slow  # bureau-check in a process of its own
async def test_a_card_is_small_and_verifies_offline(sealed: Sealed, tmp_path: Path) -> None:
    s = sealed
    body, card = await _document(s, "card")
    assert len(body) <= MAX_CARD_BYTES and card_bytes(card) == body
    _, report = await get_json(s.bureau, f"/v1/agents/{s.agent}/report")
    payload = base64.b64decode(report["payload"])
    ran = await bureau_check("card", _write(tmp_path, "c.json", body), "--key",
                             s.bureau.log_key.vkey, "--witness", s.witness.vkey,
                             "--quorum", "1", "--agent", s.agent, "--epoch", str(s.epoch),
                             "--json")
    doc = last_json(ran.out)
    assert ran.status == 0 and doc["ok"], ran.out
    assert doc["report"] == wire.blake3_hex(payload)
    assert doc["score"] == json.loads(payload)["score"] and doc["epoch"] == s.epoch
    # the same card for an explicit epoch
    again, _ = await _document(s, "card", f"?epoch={s.epoch}")
    assert again == body


@pytest.mark.slow  # bureau-check in a process of its own
async def test_forged_or_misdirected_cards_fail_in_one_line(sealed: Sealed,
                                                             tmp_path: Path) -> None:
    s = sealed
    _, card = await _document(s, "card")
    key = s.bureau.log_key.vkey
    statement = json.loads(base64.b64decode(card["statement"]["payload"]))
    forged = json.loads(json.dumps(card))
    statement["score"] = {**(statement["score"] or {}), "value": 0.99, "low": 0.98}
    forged["statement"]["payload"] = base64.b64encode(wire.canonical_json(statement)).decode()
    other_key = s.bureau.log_key.of(s.bureau.log_key.origin, wire.generate_key()).vkey
    cases = {
        "forged score": (forged, ["--key", key], "BAD_SIGNATURE"),
        "another agent": (card, ["--key", key, "--agent", s.other], "is about"),
        "another epoch": (card, ["--key", key, "--epoch", str(s.epoch + 1)], "of epoch"),
        "another key": (card, ["--key", other_key], "BAD_KEY"),
        "too few cosignatures": (card, ["--key", key, "--witness", TestWitness(
            "witness.test/other", wire.generate_key(), {}).vkey, "--quorum", "1"],
            "TOO_FEW_COSIGNATURES"),
    }
    for what, (doc, flags, expected) in cases.items():
        ran = await bureau_check("card", _write(tmp_path, "c.json", doc), *flags)
        assert ran.status == 1, (what, ran.out)
        assert ran.out.count("\n") == 1 and "FAILED" in ran.out and expected in ran.out, \
            (what, ran.out)
    truncated = card_bytes(card)[:-40]
    for command in ("card", "bundle"):
        ran = await bureau_check(command, _write(tmp_path, "t.json", truncated), "--key", key)
        assert ran.status == 1 and ran.out.count("\n") == 1, ran.out
        assert "not JSON" in ran.out and "truncated" in ran.out


@pytest.mark.slow  # bureau-check in a process of its own
async def test_a_cosignature_of_another_log_fails(sealed: Sealed, tmp_path: Path) -> None:
    """The witness's cosignature line of another log's checkpoint (same size, root and
    witness key) pasted into the bundle: the signed message names the origin, so it
    does not verify for this one."""
    s = sealed
    _, bundle = await _document(s, "proof")
    log = TlogProof.parse(bundle["log"])
    ours = Checkpoint.parse(log.checkpoint.split("\n\n")[0] + "\n")
    other = Checkpoint("another-log.example", ours.size, ours.root)
    foreign = cosign(other, s.witness.signer, 1_700_000_000)
    note_text, signatures = log.checkpoint.split("\n\n", 1)
    kept = [line for line in signatures.splitlines(keepends=True)
            if not line.startswith("— witness.test/tiles ")]
    forged = note_text + "\n\n" + "".join(kept) + foreign
    bundle["log"] = TlogProof(log.index, log.hashes, forged).text()
    ran = await bureau_check("bundle", _write(tmp_path, "b.json", bundle), "--key",
                             s.bureau.log_key.vkey, "--witness", s.witness.vkey,
                             "--quorum", "1")
    assert ran.status == 1 and ran.out.count("\n") == 1, ran.out
    assert "BAD_SIGNATURE" in ran.out


@pytest.mark.slow  # bureau-check in a process of its own
async def test_a_bundle_whose_log_proof_is_another_tree_fails(sealed: Sealed,
                                                              tmp_path: Path) -> None:
    """The log proof's note replaced by a stale one (a true head of this log, signed by
    the bureau: its tree of one entry), or the consistency proof dropped: each fails."""
    s = sealed
    _, bundle = await _document(s, "proof")
    genesis = (await Oracle.of(s.bureau)).nodes[(0, 0)]
    log = TlogProof.parse(bundle["log"])
    stale = {**bundle, "log": TlogProof(log.index, log.hashes,
                                        s.bureau.log_key.sign(1, genesis)).text()}
    dropped = {**bundle, "consistency": []}
    for what, doc, expected in (("stale note", stale, "does not reach seq"),
                                ("no consistency", dropped, "BAD_PROOF")):
        ran = await bureau_check("bundle", _write(tmp_path, "b.json", doc), "--key",
                                 s.bureau.log_key.vkey)
        assert ran.status == 1 and ran.out.count("\n") == 1, (what, ran.out)
        assert "FAILED" in ran.out and expected in ran.out, (what, ran.out)


async def test_what_is_not_there_is_404_and_a_bad_epoch_422(sealed: Sealed) -> None:
    s = sealed
    stranger = kid(wire.generate_key())
    for path in (f"/v1/agents/{stranger}/proof", f"/v1/agents/{stranger}/card",
                 f"/v1/agents/{s.agent}/proof?epoch={s.epoch + 5}",
                 f"/v1/agents/{s.agent}/card?epoch={s.epoch + 5}"):
        status, body = await get(s.bureau, path)
        assert status == 404 and b"NOT_FOUND" in body, (path, body)
    for path in (f"/v1/agents/{s.agent}/proof?epoch=01", f"/v1/agents/{s.agent}/card?x=1"):
        status, body = await get(s.bureau, path)
        assert status == 422 and b"SCHEMA" in body, (path, body)


async def test_bundles_and_cards_never_wait_for_the_ledger_lock(sealed: Sealed) -> None:
    """A writer holding the ledger head's row lock does not hold up either read."""
    s = sealed
    conn = await asyncpg.connect(s.bureau.database_url)
    try:
        async with conn.transaction():
            await chain.lock_head(conn)
            for what in ("proof", "card"):
                status, _ = await asyncio.wait_for(
                    get(s.bureau, f"/v1/agents/{s.agent}/{what}"), 10)
                assert status == 200, what
    finally:
        await conn.close()


@pytest.mark.slow  # bureau-check in a process of its own
async def test_the_mirror_writes_an_epochs_cards_again_once_witnesses_cosign(
        witnessed: tuple[BureauUnderTest, TestWitness], tmp_path: Path) -> None:
    """Mirrored before any witness cosigned a head of the epoch, its cards carry none;
    the next pass after the witness cosigns writes them again, cosigned."""
    bureau, witness = witnessed
    world = await World.make(bureau)
    agent = await world.agent("alpha")
    await world.fact(agent)
    [epoch] = await next_epoch(bureau)
    mirror = Mirror(tmp_path / "mirror", Site(bureau.log_key.origin, EPOCH_SECONDS, None,
                                              None))
    card_file = tmp_path / "mirror" / layout.agent_read(kid(agent), "card", epoch)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        await mirror.sync(conn)
        quorum = ["--key", bureau.log_key.vkey, "--witness", witness.vkey, "--quorum", "1"]
        ran = await bureau_check("card", str(card_file), *quorum)
        assert ran.status == 1 and "TOO_FEW_COSIGNATURES" in ran.out, ran.out
        await bureau.app[PUBLISHER].tick()
        await until("the witness's cosignature", lambda: witness.latest)
        result = await mirror.sync(conn)
        assert result.refreshed == [epoch]
        ran = await bureau_check("card", str(card_file), *quorum)
        assert ran.status == 0, ran.out
        latest = tmp_path / "mirror" / layout.agent_read(kid(agent), "card")
        assert latest.read_bytes() == card_file.read_bytes()
        assert (await mirror.sync(conn)).refreshed == []
    finally:
        mirror.close()
        await conn.close()


@pytest.mark.slow  # bureau-check in a process of its own
async def test_a_pass_that_ends_before_its_state_still_refreshes_the_epoch_later(
        witnessed: tuple[BureauUnderTest, TestWitness], tmp_path: Path) -> None:
    """A pass that wrote an epoch but ended (a kill, a full disk) before the state that
    names the epochs to refresh: once a witness cosigns, the epoch's cards are written
    again all the same (the state was written last, after ``v1/checkpoints/latest``, so
    the epoch counted as mirrored and was never refreshed)."""
    bureau, witness = witnessed
    world = await World.make(bureau)
    agent = await world.agent("alpha")
    await world.fact(agent)
    [epoch] = await next_epoch(bureau)
    root = tmp_path / "mirror"
    mirror = Mirror(root, Site(bureau.log_key.origin, EPOCH_SECONDS, None, None))
    (root / ".mirror/state.json").mkdir(parents=True)  # where the state goes: it fails
    card_file = root / layout.agent_read(kid(agent), "card", epoch)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        with pytest.raises(CannotWrite):
            await mirror.sync(conn)
        (root / ".mirror/state.json").rmdir()
        await bureau.app[PUBLISHER].tick()
        await until("the witness's cosignature", lambda: witness.latest)
        await mirror.sync(conn)
        ran = await bureau_check("card", str(card_file), "--key", bureau.log_key.vkey,
                                 "--witness", witness.vkey, "--quorum", "1")
        assert ran.status == 0, ran.out
    finally:
        mirror.close()
        await conn.close()
