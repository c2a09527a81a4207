"""The bureau and its witnesses (SPEC §8.1, BUREAU_WITNESSES): each new tree head is sent
to the test witness (tests/transparency/witness.py, written from C2SP tlog-witness) over
loopback HTTP; cosignatures come back, are kept, and are served with GET /checkpoint; a
witness restarted from an older state is caught up from the size it names (409); a
forked history is refused by the witness and counted by the bureau."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import asyncpg
import nacl.signing
import pytest
from aiohttp import web

from bureau.http.keys import PUBLISHER
from reporters import verify_note, wire
from reporters.tlog.checkpoint import Checkpoint, cosign, default_origin, sign_checkpoint_note
from reporters.tlog.merkle import leaf_hash
from reporters.tlog.note import Verifier
from reporters.tlog.witness import Witness, parse_witnesses
from tests.processes import ServeProcess, bureau_env
from tests.support import (
    BureauUnderTest,
    registration,
    registry_sample,
    serving,
    start_bureau,
    until,
)
from tests.transparency.service import bureau_vkey, get_text
from tests.transparency.witness import Cosigned, TestWitness
from tests.views.support import World

WITNESS_NAME = "witness.test/w1"


@dataclass
class Running:
    state: TestWitness
    client: Witness
    url: str


@pytest.fixture
async def witness() -> AsyncIterator[Running]:
    state = TestWitness(WITNESS_NAME, nacl.signing.SigningKey(os.urandom(32)), {})
    async with serving(state.app()) as base:
        url = base + "/"
        (client,) = parse_witnesses(f"{state.vkey}={url}")
        yield Running(state, client, url)


@pytest.fixture
async def witnessed(database_url: str, tmp_path: Path,
                    witness: Running) -> AsyncIterator[tuple[BureauUnderTest, Running]]:
    """A bureau that knows the witness, and a witness that trusts the bureau's log key.
    The publisher ticks only when a test says so."""
    async with start_bureau(database_url, tmp_path, witnesses=(witness.client,),
                            checkpoint_interval=3600) as bureau:
        witness.state.logs = {bureau.log_key.origin: [bureau.log_key.signer.verifier]}
        yield bureau, witness


def conflicts() -> float:
    return registry_sample("bureau_witness_conflicts_total", witness=WITNESS_NAME)


async def cosigned_sizes(bureau: BureauUnderTest) -> list[int]:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        return [r["size"] for r in await conn.fetch(
            "SELECT size FROM cosignatures WHERE witness = $1 ORDER BY size",
            witness_vkey(bureau))]
    finally:
        await conn.close()


def witness_vkey(bureau: BureauUnderTest) -> str:
    (w,) = bureau.config.witnesses
    return w.verifier.vkey


async def publish_and_wait(bureau: BureauUnderTest) -> int:
    """Publish the current head and wait until the witness's answer is kept."""
    head = await bureau.app[PUBLISHER].tick()
    assert head is not None
    await until(f"a cosignature of size {head.size}",
                lambda: _has(bureau, head.size))
    return head.size


async def _has(bureau: BureauUnderTest, size: int) -> bool:
    return size in await cosigned_sizes(bureau)


async def test_the_round_trip_and_the_cosigned_checkpoint(
        witnessed: tuple[BureauUnderTest, Running]) -> None:
    bureau, witness = witnessed
    world = await World.make(bureau)
    await world.fact(await world.agent("a"))
    first = await publish_and_wait(bureau)
    assert witness.state.latest[bureau.log_key.origin].size == first
    for _ in range(5):
        await world.fact(await world.agent("b"))
    second = await publish_and_wait(bureau)
    assert second > first
    # GET /checkpoint: the bureau's note and the witness's cosignature, which verifies
    status, _, note = await get_text(bureau, "/checkpoint")
    assert status == 200
    head = verify_note(note, await bureau_vkey(bureau), witnesses=[witness.state.vkey],
                       threshold=1)
    assert head.size == second
    assert [c.witness for c in head.cosignatures] == [WITNESS_NAME]
    assert note == witness.state.latest[head.origin].note  # the bytes the witness holds
    assert await cosigned_sizes(bureau) == [first, second]


async def test_a_witness_restarted_from_an_older_state_is_caught_up(
        witnessed: tuple[BureauUnderTest, Running]) -> None:
    bureau, witness = witnessed
    world = await World.make(bureau)
    await world.agent("a")
    first = await publish_and_wait(bureau)
    older = witness.state.latest[bureau.log_key.origin]
    await world.agent("b")
    second = await publish_and_wait(bureau)
    # the witness comes back from a backup taken at the first head
    witness.state.latest[bureau.log_key.origin] = older
    before = witness.state.requests
    await world.agent("c")
    third = await publish_and_wait(bureau)  # old=second → 409 "first" → old=first → 200
    assert first < second < third
    assert witness.state.requests - before == 2
    assert witness.state.latest[bureau.log_key.origin].size == third
    assert witness.state.conflicts == []


async def test_a_forked_history_is_refused_and_counted(
        witnessed: tuple[BureauUnderTest, Running]) -> None:
    """Someone showed the witness another history, signed with the bureau's key: at the
    size it holds, another root. The bureau's consistency proof cannot hold against it:
    the witness refuses (422), the bureau counts a conflict, and publishing goes on."""
    bureau, witness = witnessed
    world = await World.make(bureau)
    for name in "abcd":
        await world.agent(name)
    origin = bureau.log_key.origin
    forged = Checkpoint(origin, 3, leaf_hash(b"another history"))
    forged_note = sign_checkpoint_note(forged, bureau.log_key.signer)
    witness.state.latest[origin] = Cosigned(3, forged.root, forged_note)
    before = conflicts()
    head = await bureau.app[PUBLISHER].tick()
    assert head is not None and head.size > 3
    await until("the conflict to be counted", _counted(before))
    assert witness.state.conflicts and "not consistent" in witness.state.conflicts[-1]
    assert await cosigned_sizes(bureau) == []
    assert witness.state.latest[origin].root == forged.root  # the witness kept its history
    # publication never waited for the witness, and goes on
    status, _, note = await get_text(bureau, "/checkpoint")
    assert status == 200 and verify_note(note, bureau.log_key.vkey).size == head.size
    # the same head is not sent again; a new one is, and is refused again
    await bureau.app[PUBLISHER].tick()
    await world.agent("e")
    await bureau.app[PUBLISHER].tick()
    await until("the second conflict", _counted(before + 1))


async def test_another_root_at_the_same_size_is_a_conflict(
        witnessed: tuple[BureauUnderTest, Running]) -> None:
    bureau, witness = witnessed
    world = await World.make(bureau)
    await world.agent("a")
    origin = bureau.log_key.origin
    size = (await bureau.app[PUBLISHER].publish_now() or await _latest(bureau)).size
    forged = Checkpoint(origin, size, leaf_hash(b"not the bureau's"))
    witness.state.latest[origin] = Cosigned(size, forged.root, sign_checkpoint_note(
        forged, bureau.log_key.signer))
    before = conflicts()
    await world.agent("b")
    await bureau.app[PUBLISHER].tick()
    await until("the conflict", _counted(before))


async def test_a_witness_ahead_of_every_published_head_is_a_conflict(
        witnessed: tuple[BureauUnderTest, Running]) -> None:
    bureau, witness = witnessed
    world = await World.make(bureau)
    await world.agent("a")
    origin = bureau.log_key.origin
    forged = Checkpoint(origin, 1000, leaf_hash(b"a longer history"))
    witness.state.latest[origin] = Cosigned(1000, forged.root, sign_checkpoint_note(
        forged, bureau.log_key.signer))
    before = conflicts()
    await bureau.app[PUBLISHER].tick()
    await until("the conflict", _counted(before))


async def test_an_unreachable_witness_never_holds_up_publication(
        database_url: str, tmp_path: Path) -> None:
    vkey = TestWitness("gone.test/w", nacl.signing.SigningKey(os.urandom(32)), {}).vkey
    (gone,) = parse_witnesses(f"{vkey}=http://127.0.0.1:9/")  # the discard port: refused
    async with start_bureau(database_url, tmp_path, witnesses=(gone,),
                            checkpoint_interval=3600) as bureau:
        world = await World.make(bureau)
        failures = registry_sample("bureau_witness_failures_total", witness="gone.test/w")
        await world.agent("a")
        head = await bureau.app[PUBLISHER].tick()
        assert head is not None
        status, _, note = await get_text(bureau, "/checkpoint")
        assert status == 200 and verify_note(note, bureau.log_key.vkey).size == head.size

        async def failed() -> bool:
            return registry_sample("bureau_witness_failures_total",
                                   witness="gone.test/w") > failures

        await until("the failure to be counted", failed)


def _counted(before: float) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return conflicts() > before
    return check


async def _latest(bureau: BureauUnderTest) -> Checkpoint:
    status, _, note = await get_text(bureau, "/checkpoint")
    assert status == 200
    return verify_note(note, bureau.log_key.vkey).checkpoint


async def _register_reporter(url: str, admin: nacl.signing.SigningKey) -> None:
    """One more entry, through the bureau at ``url``."""
    envelope = wire.sign_payload(admin, "reporter", registration(wire.generate_key()))
    async with aiohttp.ClientSession() as session, \
            session.post(url + "/v1/evidence", json=envelope) as resp:
        assert resp.status == 201, await resp.text()


def _witness_size(witness: Running, origin: str) -> int:
    got = witness.state.latest.get(origin)
    return 0 if got is None else got.size


def _witness_past(witness: Running, origin: str, size: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return _witness_size(witness, origin) > size
    return check


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_when_the_leader_dies_another_process_takes_over(
        database_url: str, tmp_path: Path, witness: Running) -> None:
    """Two ``bureau serve`` processes; the one that leads is killed -9; the other takes
    the lock and sends the next heads, starting from the cosignatures kept."""
    signing = wire.generate_key()
    key_file = tmp_path / "signing.key"
    key_file.write_text(wire.key_to_pem(signing))
    origin = default_origin(bytes(signing.verify_key))
    witness.state.logs = {origin: [Verifier(origin, 0x01, bytes(signing.verify_key))]}
    admin = wire.generate_key()
    env = bureau_env(database_url, tmp_path / "home", wire.signing_key_id(admin),
                     BUREAU_SIGNING_KEY=str(key_file), BUREAU_CHECKPOINT_INTERVAL="0.2",
                     BUREAU_WITNESSES=f"{witness.state.vkey}={witness.url}")
    first = ServeProcess(env, tmp_path / "first.log")
    second = ServeProcess(env, tmp_path / "second.log")
    await first.start()
    try:
        await _register_reporter(first.url, admin)
        await until("the first process to send a head", _witness_past(witness, origin, 0))
        await second.start()
        assert "publishes tree heads" in first.log.read_text()
        assert "publishes tree heads" not in second.log.read_text()
        first.kill()
        size = _witness_size(witness, origin)
        await _register_reporter(second.url, admin)
        await until("the second process to send the new head",
                    _witness_past(witness, origin, size), timeout=60)
        assert "publishes tree heads" in second.log.read_text()
        assert witness.state.conflicts == []
    finally:
        first.stop()
        second.stop()


class _ForkedWitness(TestWitness):
    """A witness that answers ``200`` with a valid cosignature over *another* root at the
    size it was sent — what it would sign had someone shown it a forked history — and
    serves that forked checkpoint as the one it last cosigned."""

    __test__ = False

    async def add_checkpoint(self, request: web.Request) -> web.Response:
        note = (await request.read()).decode().partition("\n\n")[2]
        theirs = Checkpoint.parse(note.split("\n\n", 1)[0] + "\n")
        forged = Checkpoint(theirs.origin, theirs.size, leaf_hash(b"a forked history"))
        line = cosign(forged, self.signer, int(time.time()))
        self.latest[theirs.origin] = Cosigned(forged.size, forged.root, forged.text()
                                              + "\n" + line)
        return web.Response(text=line)


@pytest.mark.parametrize("pieces", [False, True], ids=["whole", "in-pieces"])
async def test_a_cosignature_over_another_root_is_a_conflict(
        database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        pieces: bool) -> None:
    """Issue 20 finding 7: a valid cosignature over another root at a size the bureau
    published was counted as a failure, and no alert fired. It is a conflict: counted
    in bureau_witness_conflicts_total (ops/prometheus/alerts.yml alerts on it) and logged
    with both roots. ``in-pieces``: the witness's answers come in two pieces; they were
    read with ``content.read(n)``, which returns what has arrived so far, so the
    conflict went unseen (issue 35's review)."""
    name = "witness.test/forked"
    state = _ForkedWitness(name, nacl.signing.SigningKey(os.urandom(32)), {}, pieces=pieces)
    async with serving(state.app()) as base:
        (client,) = parse_witnesses(f"{state.vkey}={base}/")
        async with start_bureau(database_url, tmp_path, witnesses=(client,),
                                checkpoint_interval=3600) as bureau:
            world = await World.make(bureau)
            await world.agent("a")

            def counted() -> float:
                return registry_sample("bureau_witness_conflicts_total", witness=name)

            before = counted()
            head = await bureau.app[PUBLISHER].tick()
            assert head is not None

            async def conflict() -> bool:
                return counted() > before

            await until("the conflict", conflict)
            assert head.size not in await cosigned_sizes(bureau)  # nothing kept
            said = [r.getMessage() for r in caplog.records if "WITNESS CONFLICT" in r.message]
            assert said and head.root.hex() in said[0] \
                and leaf_hash(b"a forked history").hex() in said[0]
