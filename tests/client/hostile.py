"""A bureau the tests play: a real aiohttp server on loopback that serves, route by
route, what an honest bureau would (a real Merkle tree over random entry ids, notes,
checkpoints and reports signed with real Ed25519 keys, the key in force at each
position of a key history) — or whatever a test puts in its place. It runs on a loop of
its own in a thread, so the client under test can be ``bureau-check``'s own ``main``,
run as a user runs it.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import nacl.signing
from aiohttp import web

from reporters import key_id, wire
from reporters.tlog import merkle, proofs
from reporters.tlog.checkpoint import Checkpoint, log_signer, sign_checkpoint_note

#: What a route answers: a status, a body, a content type.
Answer = tuple[int, bytes, str]
#: A route of the test's own: it may answer anything, or stream, or stall.
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

ORIGIN = "hostile.example/log"


@dataclass
class Tree:
    """A log: random entry ids and the nodes a bureau stores for them."""

    ids: list[str]
    nodes: dict[tuple[int, int], bytes] = field(default_factory=dict)

    @classmethod
    def random(cls, size: int, seed: bytes = b"") -> Tree:
        ids = [wire.blake3_hex(seed + i.to_bytes(8, "big")) for i in range(size)]
        return cls(ids).built()

    def built(self) -> Tree:
        _, nodes = merkle.Frontier.empty().extend(merkle.entry_leaf_hash(i) for i in self.ids)
        self.nodes = {(level, index): h for level, index, h in nodes}
        return self

    def root(self, size: int) -> bytes:
        return proofs.root_at(size, self.nodes.__getitem__)

    def inclusion(self, seq: int, size: int) -> dict[str, Any]:
        hashes = proofs.inclusion_proof(seq - 1, size, self.nodes.__getitem__)
        return {"leaf_index": seq - 1, "tree_size": size, "hashes": [h.hex() for h in hashes]}

    def consistency(self, old: int, new: int) -> dict[str, Any]:
        hashes = proofs.consistency_proof(old, new, self.nodes.__getitem__)
        return {"from": old, "to": new, "hashes": [h.hex() for h in hashes]}


@dataclass
class Keys:
    """A key history: ``(from_seq, key)`` oldest first, the first from seq 1."""

    history: list[tuple[int, nacl.signing.SigningKey]]

    @classmethod
    def one(cls, seed: int = 1) -> Keys:
        return cls([(1, nacl.signing.SigningKey(bytes([seed]) * 32))])

    def at(self, position: int) -> nacl.signing.SigningKey:
        chosen = self.history[0][1]
        for from_seq, key in self.history:
            if from_seq <= position:
                chosen = key
        return chosen

    def vkey(self, key: nacl.signing.SigningKey) -> str:
        return log_signer(ORIGIN, key).verifier.vkey

    def bureau(self) -> dict[str, Any]:
        """What ``/v1/bureau`` serves (SPEC §9 r3)."""
        current = self.history[-1][1]
        return {"key": key_id(current), "vkey": self.vkey(current), "origin": ORIGIN,
                "policy": "ab" * 32, "epoch_seconds": 60,
                "keys": [{"key": key_id(k), "vkey": self.vkey(k), "from_seq": s}
                         for s, k in self.history],
                "admins": [key_id(nacl.signing.SigningKey(b"\x09" * 32))]}


def note(tree_size: int, root: bytes, key: nacl.signing.SigningKey) -> str:
    return sign_checkpoint_note(Checkpoint(ORIGIN, tree_size, root), log_signer(ORIGIN, key))


def envelope(kind: str, payload: dict[str, Any], key: nacl.signing.SigningKey) -> bytes:
    return wire.sign_envelope_bytes(key, wire.payload_type(kind), wire.canonical_json(payload))


@dataclass
class Ledger:
    """An honest bureau's state: a tree, sealed epochs (epoch -> last seq), keys."""

    tree: Tree
    seals: dict[int, int]
    keys: Keys
    agent: str = key_id(nacl.signing.SigningKey(b"\x07" * 32))

    @property
    def size(self) -> int:
        return len(self.tree.ids)

    def report(self, epoch: int, key: nacl.signing.SigningKey | None = None) -> bytes:
        seq = self.seals[epoch]
        payload = {"agent": self.agent, "epoch": epoch, "name": "agent",
                   "ledger": {"seq": seq, "head": self.tree.ids[seq - 1]},
                   "evidence": {"root": merkle.EMPTY_ROOT.hex()}, "score": None}
        return envelope("report", payload, key or self.keys.at(seq))

    def checkpoint(self, epoch: int, key: nacl.signing.SigningKey | None = None) -> bytes:
        seq = self.seals[epoch]
        payload = {"epoch": epoch, "seq": seq, "head": self.tree.ids[seq - 1],
                   "entries": seq, "root": self.tree.root(seq).hex()}
        return envelope("checkpoint", payload, key or self.keys.at(seq))

    def note(self, size: int, key: nacl.signing.SigningKey | None = None) -> str:
        return note(size, self.tree.root(size), key or self.keys.at(size))

    def honest(self, request: web.Request) -> Answer:
        """What an honest bureau answers."""
        path, query = request.path, request.query
        json_type, text = "application/json", "text/plain; charset=utf-8"
        latest = max(self.seals)
        if path == "/v1/bureau":
            return 200, wire.canonical_json(self.keys.bureau()), json_type
        if path == "/checkpoint":
            return 200, self.note(self.size).encode(), text
        if path == f"/v1/agents/{self.agent}/report":
            epoch = int(query.get("epoch", latest))
            return (200, self.report(epoch), json_type) if epoch in self.seals else \
                (404, b'{"code":"NOT_FOUND"}', json_type)
        if path.startswith("/v1/checkpoints/"):
            which = path.removeprefix("/v1/checkpoints/")
            if which.endswith("/note"):
                return 200, self.note(self.seals[int(which[:-5])]).encode(), text
            return 200, self.checkpoint(latest if which == "latest" else int(which)), json_type
        if path == "/v1/proofs/consistency":
            proof = self.tree.consistency(int(query["from"]), int(query["to"]))
            return 200, wire.canonical_json(proof), json_type
        if path == "/v1/proofs/inclusion":
            seq = self.tree.ids.index(query["id"]) + 1
            return 200, wire.canonical_json(self.tree.inclusion(seq, int(query["size"]))), \
                json_type
        return 404, b'{"code":"NOT_FOUND"}', json_type


class HostileBureau:
    """The server. ``ledger`` answers honestly; ``answers[path]`` (a fixed answer) or
    ``handlers[path]`` (a route of the test's own) take its place for one path.
    ``sent`` counts the body bytes the server managed to write on streamed routes."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.answers: dict[str, Answer] = {}
        self.handlers: dict[str, Handler] = {}
        self.sent = 0
        self.url = ""
        self.loop = asyncio.new_event_loop()

    async def _route(self, request: web.Request) -> web.StreamResponse:
        handler = self.handlers.get(request.path)
        if handler is not None:
            return await handler(request)
        status, body, content_type = self.answers.get(request.path) or \
            self.ledger.honest(request)
        return web.Response(status=status, body=body, headers={"Content-Type": content_type})

    async def endless(self, request: web.Request) -> web.StreamResponse:
        """An answer of any length (1.5 GB and more): 64 KiB chunks until the client
        hangs up."""
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(request)
        chunk = b"A" * 65536
        try:
            while self.sent < 2 * 1024**3:
                await resp.write(chunk)
                self.sent += len(chunk)
        except (ConnectionError, RuntimeError):
            pass
        return resp

    async def drip(self, request: web.Request) -> web.StreamResponse:
        """A small answer that never ends: a byte at a time, each sent once the last
        one is written (the client's deadline has to end it)."""
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        try:
            await resp.write(b"[")
            while True:
                await resp.write(b" ")
                self.sent += 1
                await asyncio.sleep(0.01)
        except (ConnectionError, RuntimeError):
            pass
        return resp

    @contextmanager
    def serving(self) -> Iterator[HostileBureau]:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._route)
        runner = web.AppRunner(app, access_log=None)
        thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        thread.start()

        async def start() -> int:
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            for sock in getattr(site._server, "sockets", ()):
                return int(sock.getsockname()[1])
            raise RuntimeError("the test bureau is not listening")

        port = asyncio.run_coroutine_threadsafe(start(), self.loop).result(30)
        self.url = f"http://127.0.0.1:{port}"
        try:
            yield self
        finally:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), self.loop).result(30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            thread.join(30)
            self.loop.close()


def rotated_ledger(size: int = 40, rotate_at: int = 21) -> Ledger:
    """A ledger of ``size`` entries whose key was rotated by a ``keys`` entry at seq
    ``rotate_at - 1``, epochs sealed at seqs 10, 20, 30 and ``size``."""
    keys = Keys([(1, nacl.signing.SigningKey(b"\x01" * 32)),
                 (rotate_at, nacl.signing.SigningKey(b"\x02" * 32))])
    return Ledger(Tree.random(size, os.urandom(8)), {0: 10, 1: 20, 2: 30, 3: size}, keys)
