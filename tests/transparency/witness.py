"""A transparency-log witness for the tests, written from C2SP tlog-witness.

It keeps, per log origin, the latest checkpoint it cosigned (size, root, note), and
answers ``POST /add-checkpoint`` exactly as the specification orders its checks:

1. a body that is not ``old N``, proof lines, a blank line and a note: ``400``;
2. an origin it does not know: ``404``;
3. no verifying signature by a key it trusts for the origin, or one that fails: ``403``;
4. a note text that is not a checkpoint, or ``old`` above the checkpoint's size: ``400``;
5. ``old`` not the size it last cosigned (0 if none): ``409``, ``text/x.tlog.size``;
6. a size-0 checkpoint whose root is not the empty root, a proof from 0 that is not
   empty, a root that differs at the same size, a consistency proof that does not hold:
   ``422`` — a fork, recorded in :attr:`TestWitness.conflicts`;
7. otherwise it records the checkpoint and answers ``200`` with its timestamped
   cosignature/v1 line.

Steps 5-7 run under one lock, so a check and its update are atomic (the race the
specification warns about cannot roll a log back). ``GET /<hex SHA-256 of origin>/
checkpoint`` serves the latest cosigned note. The request parsing here is its own,
independent of ``reporters.tlog.witness``; signatures, checkpoints and proofs are
checked with ``reporters.tlog``, which the other tests hold to the specifications.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import nacl.signing
from aiohttp import web

from reporters.tlog.checkpoint import Checkpoint, cosign
from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import EMPTY_ROOT
from reporters.tlog.note import COSIGNATURE_V1, Signer, Verifier, open_note
from reporters.tlog.verify import verify_consistency

_OLD_LINE = re.compile(r"old (0|[1-9][0-9]*)")


@dataclass
class Cosigned:
    size: int
    root: bytes
    note: str  # the log's note with this witness's cosignature


@dataclass
class TestWitness:
    """The witness's state and its aiohttp app."""

    __test__ = False

    name: str
    key: nacl.signing.SigningKey
    logs: Mapping[str, Sequence[Verifier]]  # origin -> the log keys trusted for it
    clock: Callable[[], float] = time.time
    latest: dict[str, Cosigned] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    requests: int = 0
    #: send each answer in two pieces, the second a moment after the first (a witness
    #: behind a slow network): a reader must read the whole answer, not what has arrived
    pieces: bool = False
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def signer(self) -> Signer:
        return Signer(self.name, self.key, COSIGNATURE_V1)

    @property
    def vkey(self) -> str:
        return self.signer.verifier.vkey

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_in_two_pieces] if self.pieces else [])
        app.router.add_post("/add-checkpoint", self.add_checkpoint)
        app.router.add_get("/{origin_hash}/checkpoint", self.checkpoint)
        return app

    async def checkpoint(self, request: web.Request) -> web.Response:
        for origin, cosigned in self.latest.items():
            if hashlib.sha256(origin.encode()).hexdigest() == request.match_info["origin_hash"]:
                return web.Response(text=cosigned.note)
        raise web.HTTPNotFound(text="never cosigned a checkpoint for that log\n")

    async def add_checkpoint(self, request: web.Request) -> web.Response:
        self.requests += 1
        old, proof, note = self._parse_request(await request.read())
        origin = note.split("\n", 1)[0]
        trusted = self.logs.get(origin)
        if trusted is None:
            raise web.HTTPNotFound(text=f"unknown log origin {origin!r}\n")
        try:
            opened = open_note(note, trusted)
        except TlogError as exc:
            if exc.code == "BAD_NOTE":
                raise web.HTTPBadRequest(text=f"malformed note: {exc.detail}\n") from None
            raise web.HTTPForbidden(text=f"{exc.detail}\n") from None
        try:
            checkpoint = Checkpoint.parse(opened.text)
        except TlogError as exc:
            raise web.HTTPBadRequest(text=f"not a checkpoint: {exc.detail}\n") from None
        if old > checkpoint.size:
            raise web.HTTPBadRequest(text="old size is above the checkpoint's size\n")
        async with self._lock:
            known = self.latest.get(origin)
            known_size = known.size if known else 0
            if old != known_size:
                return web.Response(status=409, body=f"{known_size}\n".encode(),
                                    content_type="text/x.tlog.size")
            self._check_consistency(known, old, proof, checkpoint)
            line = cosign(checkpoint, self.signer, int(self.clock()))
            self.latest[origin] = Cosigned(checkpoint.size, checkpoint.root, note + line)
        return web.Response(text=line)

    def _parse_request(self, body: bytes) -> tuple[int, list[bytes], str]:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise web.HTTPBadRequest(text="the body is UTF-8\n") from None
        head, blank, note = text.partition("\n\n")
        lines = head.split("\n")
        match = _OLD_LINE.fullmatch(lines[0])
        if not blank or match is None or len(lines) - 1 > 63:
            raise web.HTTPBadRequest(text="old line, at most 63 proof lines, blank line\n")
        proof = []
        for line in lines[1:]:
            try:
                h = base64.b64decode(line, validate=True)
            except (binascii.Error, ValueError):
                h = b""
            if len(h) != 32 or base64.b64encode(h).decode() != line:
                raise web.HTTPBadRequest(text="a proof line is one base64 hash\n")
            proof.append(h)
        return int(match[1]), proof, note

    def _check_consistency(self, known: Cosigned | None, old: int, proof: list[bytes],
                           checkpoint: Checkpoint) -> None:
        """Steps of 422: the new checkpoint must extend what was cosigned."""
        reason = None
        if checkpoint.size == 0 and checkpoint.root != EMPTY_ROOT:
            reason = "a size-0 checkpoint has the empty root"
        elif old == 0:
            if proof:
                reason = "the proof from size 0 is empty"
        elif known is not None and old == checkpoint.size and known.root != checkpoint.root:
            reason = f"another root at size {old}"
        elif known is not None:
            try:
                verify_consistency(old, checkpoint.size, known.root, checkpoint.root, proof)
            except TlogError as exc:
                reason = f"not consistent with size {old}: {exc.detail}"
        if reason is not None:
            self.conflicts.append(reason)
            raise web.HTTPUnprocessableEntity(text=reason + "\n")


@web.middleware
async def _in_two_pieces(request: web.Request, handler: Callable[..., Any]
                         ) -> web.StreamResponse:
    """The handler's answer, sent as two writes a moment apart (see ``pieces``)."""
    try:
        answer = await handler(request)
    except web.HTTPException as exc:
        answer = web.Response(status=exc.status, text=exc.text,
                              content_type=exc.content_type)
    body = answer.body if isinstance(answer.body, bytes) else b""
    out = web.StreamResponse(status=answer.status, headers={
        "Content-Type": answer.headers.get("Content-Type", "text/plain")})
    await out.prepare(request)
    await out.write(body[:len(body) // 2])
    await asyncio.sleep(0.1)  # the network's pace: the first piece arrives alone
    await out.write(body[len(body) // 2:])
    await out.write_eof()
    return out
