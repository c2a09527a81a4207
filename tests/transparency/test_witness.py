"""The log's side of C2SP tlog-witness (reporters.tlog.witness) against the test witness
(tests/transparency/witness.py) over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from collections.abc import AsyncIterator, Sequence

import aiohttp
import nacl.signing
import pytest

from reporters.tlog import merkle, proofs
from reporters.tlog.checkpoint import (
    Checkpoint,
    cosign,
    default_origin,
    log_signer,
    open_checkpoint,
    sign_checkpoint_note,
)
from reporters.tlog.errors import TlogError
from reporters.tlog.note import COSIGNATURE_V1, Signer
from reporters.tlog.witness import (
    Cosigned,
    Offer,
    ProofFrom,
    Refused,
    SizeMismatch,
    Witness,
    add_checkpoint,
    add_checkpoint_body,
    parse_witnesses,
    push_checkpoint,
    read_answer,
)
from tests.support import serving
from tests.transparency.witness import TestWitness

LOG_KEY = nacl.signing.SigningKey(bytes([3]) * 32)
ORIGIN = default_origin(bytes(LOG_KEY.verify_key))
NOW = 1_760_000_000


class Log:
    """A log: leaves appended, complete nodes stored, checkpoints signed."""

    def __init__(self, key: nacl.signing.SigningKey = LOG_KEY) -> None:
        self.signer = log_signer(ORIGIN, key)
        self.frontier = merkle.Frontier.empty()
        self.nodes: dict[merkle.Node, bytes] = {}

    def grow(self, to: int) -> None:
        self.frontier, new = self.frontier.extend(
            merkle.leaf_hash(os.urandom(32)) for _ in range(to - self.frontier.size))
        self.nodes.update({(level, index): h for level, index, h in new})

    def checkpoint(self, size: int) -> tuple[Checkpoint, str]:
        checkpoint = Checkpoint(ORIGIN, size, proofs.root_at(size, self.nodes.__getitem__))
        return checkpoint, sign_checkpoint_note(checkpoint, self.signer)

    def proof_from(self, size: int) -> ProofFrom:
        async def proof(old: int) -> Sequence[bytes]:
            return proofs.consistency_proof(old, size, self.nodes.__getitem__)
        return proof


@pytest.fixture
async def witness() -> AsyncIterator[tuple[TestWitness, Witness, aiohttp.ClientSession]]:
    state = TestWitness("witness.test/w1", nacl.signing.SigningKey(bytes([9]) * 32),
                        {ORIGIN: [log_signer(ORIGIN, LOG_KEY).verifier]}, clock=lambda: NOW)
    async with serving(state.app()) as base:
        (client,) = parse_witnesses(f"{state.vkey}={base}/")
        async with aiohttp.ClientSession() as session:
            yield state, client, session


async def push(session: aiohttp.ClientSession, client: Witness, log: Log, size: int,
               known: int) -> Cosigned | SizeMismatch | Refused:
    checkpoint, note = log.checkpoint(size)
    proof = log.proof_from(size)
    return await push_checkpoint(session, Offer(client, checkpoint, note), known, proof)


async def test_the_round_trip(witness: tuple[TestWitness, Witness, aiohttp.ClientSession]
                              ) -> None:
    state, client, session = witness
    log = Log()
    log.grow(40)
    for known, size in ((0, 10), (10, 25), (25, 25), (25, 40)):
        answer = await push(session, client, log, size, known)
        assert isinstance(answer, Cosigned), answer
        assert answer.cosignature.witness == "witness.test/w1"
        assert answer.cosignature.timestamp == NOW
        # The bureau serves its note with the cosignature appended; anyone checks both.
        _, note = log.checkpoint(size)
        verified = open_checkpoint(note + answer.lines, log.signer.verifier,
                                   witnesses=[client.verifier], threshold=1)
        assert verified.size == size
        assert state.latest[ORIGIN].size == size
    assert state.requests == 4 and state.conflicts == []
    async with session.get(f"{client.url}{hashlib.sha256(ORIGIN.encode()).hexdigest()}"
                           "/checkpoint") as resp:
        served = await resp.text()
    assert open_checkpoint(served, log.signer.verifier, witnesses=[client.verifier],
                           threshold=1).size == 40


async def test_an_answer_in_pieces_is_read_whole() -> None:
    """The answer was read with ``content.read(n)``, which returns what has arrived so far:
    a cosignature whose bytes came in two pieces was judged on the first (a protocol
    error). It is read whole, up to its cap."""
    state = TestWitness("witness.test/w1", nacl.signing.SigningKey(bytes([9]) * 32),
                        {ORIGIN: [log_signer(ORIGIN, LOG_KEY).verifier]}, clock=lambda: NOW,
                        pieces=True)
    log = Log()
    log.grow(12)
    async with serving(state.app()) as base, aiohttp.ClientSession() as session:
        (client,) = parse_witnesses(f"{state.vkey}={base}/")
        answer = await push(session, client, log, 12, 0)
        assert isinstance(answer, Cosigned), answer
        answer = await push(session, client, log, 12, 3)  # a 409 naming 12, in pieces
        assert isinstance(answer, Cosigned), answer


async def test_a_409_is_retried_from_the_size_the_witness_names(
        witness: tuple[TestWitness, Witness, aiohttp.ClientSession]) -> None:
    state, client, session = witness
    log = Log()
    log.grow(60)
    assert isinstance(await push(session, client, log, 25, 0), Cosigned)
    # A pusher that lost its memory (a restart) starts from 0 and learns 25.
    answer = await push(session, client, log, 60, 0)
    assert isinstance(answer, Cosigned)
    assert state.requests == 3 and state.latest[ORIGIN].size == 60
    # One request alone reports the witness's size.
    checkpoint, note = log.checkpoint(60)
    assert await add_checkpoint(session, Offer(client, checkpoint, note), 25,
                                proofs.consistency_proof(25, 60, log.nodes.__getitem__)) == \
        SizeMismatch(60)


async def test_a_witness_ahead_of_this_checkpoint_is_reported_not_chased(
        witness: tuple[TestWitness, Witness, aiohttp.ClientSession]) -> None:
    state, client, session = witness
    log = Log()
    log.grow(50)
    assert isinstance(await push(session, client, log, 50, 0), Cosigned)
    assert await push(session, client, log, 30, 0) == SizeMismatch(50)
    assert state.requests == 2
    assert await push(session, client, log, 30, 50) == SizeMismatch(50)  # not even asked
    assert state.requests == 2


async def test_a_fork_is_refused_and_the_witness_keeps_its_history(
        witness: tuple[TestWitness, Witness, aiohttp.ClientSession]) -> None:
    state, client, session = witness
    log = Log()
    log.grow(40)
    assert isinstance(await push(session, client, log, 40, 0), Cosigned)
    kept = state.latest[ORIGIN]
    forked = Log()  # same key, another history
    forked.grow(70)
    answer = await push(session, client, forked, 70, 40)
    assert isinstance(answer, Refused) and answer.conflict and answer.status == 422
    answer = await push(session, client, forked, 40, 40)  # another root at the same size
    assert isinstance(answer, Refused) and answer.conflict
    assert state.latest[ORIGIN] == kept
    assert len(state.conflicts) == 2 and "size 40" in state.conflicts[1]
    log.grow(70)
    assert isinstance(await push(session, client, log, 70, 40), Cosigned)


async def test_concurrent_checkpoints_cannot_roll_the_witness_back(
        witness: tuple[TestWitness, Witness, aiohttp.ClientSession]) -> None:
    state, client, session = witness
    log = Log()
    log.grow(70)
    assert isinstance(await push(session, client, log, 50, 0), Cosigned)

    async def one(size: int) -> object:
        checkpoint, note = log.checkpoint(size)
        return await add_checkpoint(session, Offer(client, checkpoint, note), 50,
                                    proofs.consistency_proof(50, size, log.nodes.__getitem__))

    answers = await asyncio.gather(one(60), one(70))
    assert sorted(type(a).__name__ for a in answers) == ["Cosigned", "SizeMismatch"]
    winner = 60 if isinstance(answers[0], Cosigned) else 70
    assert state.latest[ORIGIN].size == winner
    assert [a for a in answers if isinstance(a, SizeMismatch)] == [SizeMismatch(winner)]


async def _post(session: aiohttp.ClientSession, client: Witness, body: bytes
                ) -> tuple[int, str]:
    async with session.post(client.add_checkpoint_url, data=body) as resp:
        return resp.status, await resp.text()


async def test_the_witness_refuses_what_the_specification_refuses(
        witness: tuple[TestWitness, Witness, aiohttp.ClientSession]) -> None:
    state, client, session = witness
    log = Log()
    log.grow(20)
    _, note = log.checkpoint(20)
    checkpoint = log.checkpoint(20)[0]
    some_hash = base64.b64encode(bytes(32)).decode()
    cases = [
        (b"old 1\n\n" + note.encode(), 409),
        (b"old 21\n\n" + note.encode(), 400),                    # old above the size
        (b"old 01\n\n" + note.encode(), 400),
        (b"old 0\n" + note.encode(), 400),                        # no blank line
        (f"old 0\n{some_hash[:-2]}\n\n{note}".encode(), 400),     # not a hash
        (f"old 0\n{some_hash}\n\n{note}".encode(), 422),          # a proof from 0
        (b"old 0\n\n" + note.replace(ORIGIN, "other.example/log").encode(), 404),
        (b"old 0\n\n" + sign_checkpoint_note(checkpoint, log_signer(
            ORIGIN, nacl.signing.SigningKey(bytes(32)))).encode(), 403),
        (b"old 0\n\n" + note.replace("\n20\n", "\n21\n").encode(), 403),
        (b"\xff", 400),
    ]
    bad_empty = sign_checkpoint_note(Checkpoint(ORIGIN, 0, bytes(32)), log.signer)
    cases.append((b"old 0\n\n" + bad_empty.encode(), 422))
    for body, status in cases:
        assert (await _post(session, client, body))[0] == status, body
    assert ORIGIN not in state.latest
    assert len(state.conflicts) == 2


def _witness() -> tuple[Witness, Signer]:
    signer = Signer("w.example", nacl.signing.SigningKey(bytes([5]) * 32), COSIGNATURE_V1)
    return Witness(signer.verifier, "http://w.example"), signer


def test_reading_answers() -> None:
    client, signer = _witness()
    checkpoint = Checkpoint(ORIGIN, 3, bytes(32))
    line = cosign(checkpoint, signer, 77)
    answer = read_answer(200, "text/plain", line.encode(), witness=client, checkpoint=checkpoint)
    assert isinstance(answer, Cosigned) and answer.lines == line
    other = Signer("x.example", nacl.signing.SigningKey(bytes([6]) * 32), COSIGNATURE_V1)
    both = cosign(checkpoint, other, 5) + line  # cosignatures by unknown keys are ignored
    assert read_answer(200, None, both.encode(), witness=client, checkpoint=checkpoint) == answer
    assert read_answer(409, "text/x.tlog.size", b"12\n", witness=client,
                       checkpoint=checkpoint) == SizeMismatch(12)
    assert read_answer(422, "text/plain", b"fork\n", witness=client,
                       checkpoint=checkpoint) == Refused(422, "fork")
    for status, ctype, body, code in [
        (409, "text/plain", b"12\n", "WITNESS_PROTOCOL"),
        (409, "text/x.tlog.size", b"012\n", "WITNESS_PROTOCOL"),
        (409, "text/x.tlog.size", b"12", "WITNESS_PROTOCOL"),
        (200, "text/plain", b"", "WITNESS_PROTOCOL"),
        (200, "text/plain", cosign(checkpoint, other, 5).encode(), "WITNESS_PROTOCOL"),
        (200, "text/plain", cosign(Checkpoint(ORIGIN, 4, bytes(32)), signer, 5).encode(),
         "BAD_SIGNATURE"),
    ]:
        with pytest.raises(TlogError) as info:
            read_answer(status, ctype, body, witness=client, checkpoint=checkpoint)
        assert info.value.code == code


def test_a_cosignature_without_a_timestamp_is_a_protocol_error() -> None:
    client, signer = _witness()
    checkpoint = Checkpoint(ORIGIN, 3, bytes(32))
    message = b"cosignature/v1\ntime 0\n" + checkpoint.text().encode()
    blob = (client.verifier.key_hash.to_bytes(4, "big") + bytes(8)
            + signer.key.sign(message).signature)
    line = f"\u2014 w.example {base64.b64encode(blob).decode()}\n"
    with pytest.raises(TlogError, match="timestamp"):
        read_answer(200, "text/plain", line.encode(), witness=client, checkpoint=checkpoint)


def test_the_request_body() -> None:
    note = "origin\n1\n" + base64.b64encode(bytes(32)).decode() + "\n\n\u2014 origin AAAAAAA=\n"
    assert add_checkpoint_body(0, [], note) == b"old 0\n\n" + note.encode()
    body = add_checkpoint_body(7, [bytes(32), b"\x01" * 32], note)
    assert body == (b"old 7\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
                    b"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n\n" + note.encode())
    for old, proof in ((0, [bytes(32)]), (-1, []), (3, [bytes(31)]), (3, [bytes(32)] * 64)):
        with pytest.raises(ValueError):
            add_checkpoint_body(old, proof, note)


def test_the_witness_list_setting() -> None:
    one, two = (Signer(f"w{i}.example", nacl.signing.SigningKey(bytes([i]) * 32),
                       COSIGNATURE_V1).verifier for i in (1, 2))
    witnesses = parse_witnesses(f"{one.vkey}=https://w1.example/prefix, "
                                f"{two.vkey}=http://127.0.0.1:8/")
    assert [(w.name, w.url) for w in witnesses] == [
        ("w1.example", "https://w1.example/prefix"), ("w2.example", "http://127.0.0.1:8/")]
    assert witnesses[0].add_checkpoint_url == "https://w1.example/prefix/add-checkpoint"
    assert parse_witnesses("") == []
    plain = log_signer(ORIGIN, LOG_KEY).verifier.vkey
    for bad in (f"{one.vkey}", f"{one.vkey}=ftp://x", f"{one.vkey}=http://a,{one.vkey}=http://b",
                "nonsense=http://x"):
        with pytest.raises(TlogError):
            parse_witnesses(bad)
    with pytest.raises(ValueError):
        parse_witnesses(f"{plain}=http://x")
