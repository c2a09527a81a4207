"""A bureau as ``bureau-check`` sees it: public routes over HTTP, and the keys it trusts.

Two outcomes that are not success, kept apart because a script must tell them apart:

* :class:`CheckFailed` — the bureau served something that does not verify: a bad
  signature, a proof that does not hold, a head that rewinds, a report that does not
  match the file, an answer of the wrong shape (exit status 1);
* :class:`CannotCheck` — nothing could be verified: the bureau is unreachable, answered
  an error, too much or too slowly, or the input is not usable (exit status 2).

Every answer is read with a cap fitting its kind (:data:`CAPS`) and within one
deadline (``--timeout``) for the whole request, body included: a hostile bureau can
make a check fail, never make it hang or fill memory.

The base URL may also be a **static mirror** of the bureau (``bureau mirror DIR`` behind
any web server; SPEC §9.1 r4): one that answers ``404`` to the proof routes. Then the
proofs are computed from its tiles, every tile checked against the signed checkpoint
(:mod:`reporters.tlog.tilereader`), and a read of one epoch is asked for at the path the
mirror keeps it under (:mod:`reporters.layout`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from reporters import (
    KeyHistory,
    VerificationError,
    VerifiedCheckpoint,
    layout,
    strictjson,
    verify_note,
    wire,
)
from reporters._internal.capped import TooLarge, read_capped
from reporters.check.text import one_line
from reporters.tlog import proofs
from reporters.tlog.errors import TlogError
from reporters.tlog.note import ED25519, Verifier
from reporters.tlog.tilereader import TileNodes, tiles_needed, verify_tiles
from reporters.tlog.tiles import TILE_WIDTH, Tile

#: The largest answer read, by kind (bytes). A note is three lines and at most 100
#: signature lines of ~130 bytes; a proof at most 64 hashes of 67 bytes; a checkpoint
#: a DSSE envelope of ~400 bytes; /v1/bureau a key history (~200 bytes a key) and up to
#: 64 admins; a report a few KB, plus a row per reporter with 10 or more interactions,
#: 64 promises and 16 links at most (a report of 500 reporter rows is ~60 KB); a tile
#: 8,192 bytes, an entry bundle 8,704.
CAPS = {"note": 16 * 1024, "proof": 8 * 1024, "checkpoint": 16 * 1024, "settlement": 16 * 1024,
        "bureau": 1024 * 1024, "report": 256 * 1024, "error": 4 * 1024,
        "tile": 16 * 1024}


class CheckFailed(Exception):
    """What the bureau served does not verify."""


class CannotCheck(Exception):
    """Nothing could be verified (unreachable, an error answer, unusable input)."""


@dataclass(frozen=True)
class Trust:
    """The bureau's key history as trusted for this run, and why it is trusted."""

    history: KeyHistory
    source: str  # how the keys came to be trusted, in words (printed with every result)
    pinned: bool

    @property
    def key_id(self) -> str:
        """The key in force now."""
        return self.history.in_force.key_id

    @property
    def vkey(self) -> str:
        return self.history.in_force.vkey

    @property
    def origin(self) -> str:
        return self.history.origin

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key_id, "vkey": self.vkey, "origin": self.origin,
                "pinned": self.pinned, "source": self.source,
                "keys": self.history.as_json()}


class Bureau:
    """GETs against one bureau's public routes."""

    def __init__(self, url: str, session: aiohttp.ClientSession, timeout: float = 30) -> None:
        self.url = url.rstrip("/")
        self.session = session
        self.seconds = timeout
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._static: bool | None = None
        #: tiles fetched so far (from a static mirror)
        self.tiles_fetched = 0

    async def get(self, path: str, kind: str, *, missing_ok: bool = False) -> bytes | None:
        """The body of a ``200`` answer, at most ``CAPS[kind]`` bytes, read within the
        timeout; ``None`` for a ``404`` when ``missing_ok``."""
        where = self.url + path
        try:
            async with asyncio.timeout(self.seconds):
                async with self.session.get(where, timeout=self.timeout) as resp:
                    status = resp.status
                    body = await read_capped(resp, CAPS[kind] if status == 200
                                             else CAPS["error"])
        except TooLarge as exc:
            if status != 200:
                raise CannotCheck(f"{where}: HTTP {status}, and an answer of {exc}") from None
            raise CannotCheck(f"{where}: the answer is {exc}, larger than any {kind} "
                              "answer") from None
        except TimeoutError:
            raise CannotCheck(f"{where}: no whole answer within {self.seconds:g} s "
                              "(--timeout)") from None
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise CannotCheck(f"{where}: unreachable ({type(exc).__name__}: {exc})") from None
        if status == 404 and missing_ok:
            return None
        if status != 200:
            raise CannotCheck(f"{where}: HTTP {status}: {_detail(body)}")
        return body

    async def get_json(self, path: str, kind: str) -> Any:
        body = await self.get(path, kind)
        assert body is not None
        try:
            return strictjson.loads(body)
        except strictjson.StrictJSONError as exc:
            raise CheckFailed(f"{self.url}{path} did not answer JSON ({exc})") from None

    async def get_object(self, path: str, kind: str) -> dict[str, Any]:
        doc = await self.get_json(path, kind)
        if not isinstance(doc, dict):
            raise CheckFailed(f"{self.url}{path} did not answer a JSON object")
        return doc

    async def get_text(self, path: str, kind: str) -> str:
        body = await self.get(path, kind)
        assert body is not None
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            raise CheckFailed(f"{self.url}{path} did not answer UTF-8 text") from None

    async def history(self) -> KeyHistory:
        """The key history ``/v1/bureau`` serves, checked for shape."""
        doc = await self.get_json("/v1/bureau", "bureau")
        try:
            return KeyHistory.from_bureau(doc)
        except VerificationError as exc:
            raise CheckFailed(f"{self.url}/v1/bureau serves no usable key history: "
                              f"{exc.code}" + (f" at {exc.path}" if exc.path else "")
                              + f": {exc.detail}") from None

    async def trust(self, key_id: str | None = None, vkey: str | None = None) -> Trust:
        """The keys to verify with: the history ``/v1/bureau`` serves, which must hold
        the pinned key (``vkey``, or ``key_id``) when one is pinned; unpinned, trust on
        first use, and the result says so. Keys of the history other than the pinned
        one are the bureau's word, and the result names them."""
        pinned: Verifier | None = None
        if vkey is not None:
            pinned = _note_key(vkey, "--vkey")
            if key_id is not None and key_id != _key_id(pinned):
                raise CannotCheck(f"--bureau-key {key_id} and --vkey {vkey} are two keys")
        history = await self.history()
        where = f"{self.url}/v1/bureau"
        if pinned is None and key_id is None:
            return Trust(history, f"NOT pinned: the key history ({history.describe()}) "
                         f"taken from {where} (pin it with --bureau-key or --vkey)", False)
        found = (history.with_vkey(pinned.vkey) if pinned is not None
                 else history.with_key_id(key_id or ""))
        flag = "--vkey" if pinned is not None else "--bureau-key"
        if found is None:
            raise CheckFailed(f"the bureau at {self.url} serves a key history without the "
                              f"pinned key {vkey or key_id} ({flag}): {history.describe()}")
        others = [k for k in history.keys if k.key_id != found.key_id]
        return Trust(history, f"pinned ({flag})" + (
            f"; the rest of the key history is {where}'s word: "
            + ", ".join(f"{k.key_id} from seq {k.from_seq}" for k in others)
            if others else ""), True)

    async def checkpoint(self, trust: Trust, witnesses: tuple[str, ...],
                         threshold: int) -> VerifiedCheckpoint:
        """``GET /checkpoint``, verified."""
        note = await self.get_text("/checkpoint", "note")
        return open_note(note, trust, witnesses, threshold, f"{self.url}/checkpoint")

    async def static(self) -> bool:
        """Is the base URL a static mirror (no proof routes: ``404``)? Asked once."""
        if self._static is None:
            where = self.url + "/v1/proofs/consistency?from=0&to=0"
            try:
                async with asyncio.timeout(self.seconds):
                    async with self.session.get(where, timeout=self.timeout) as resp:
                        self._static = resp.status == 404
            except TimeoutError:
                raise CannotCheck(f"{where}: no answer within {self.seconds:g} s "
                                  "(--timeout)") from None
            except (aiohttp.ClientError, OSError, ValueError) as exc:
                raise CannotCheck(f"{where}: unreachable ({type(exc).__name__}: "
                                  f"{exc})") from None
        return self._static

    async def report_path(self, agent: str, epoch: int | None) -> str:
        if await self.static():
            return "/" + layout.agent_read(agent, "report", epoch)
        return f"/v1/agents/{agent}/report" + (f"?epoch={epoch}" if epoch is not None else "")

    async def epoch_note_path(self, epoch: int) -> str:
        if await self.static():
            return "/" + layout.epoch_note(epoch)
        return f"/v1/checkpoints/{epoch}/note"

    async def consistency(self, old: int, new: VerifiedCheckpoint) -> Any:
        """The consistency proof from size ``old`` to the verified tree ``new``: the
        bureau's answer, or computed from a mirror's tiles checked against ``new``."""
        if await self.static():
            plan = proofs.consistency_plan(old, new.size)
            return {"from": old, "to": new.size, "hashes": await self._from_tiles(plan, new)}
        return await self.get_json(f"/v1/proofs/consistency?from={old}&to={new.size}",
                                   "proof")

    async def inclusion(self, entry_id: str, tree: VerifiedCheckpoint,
                        index: int | None = None) -> Any:
        """The inclusion proof of ``entry_id`` in the verified ``tree``: the bureau's
        answer, or, from a mirror (which has no index of entry ids), the proof of leaf
        ``index`` computed from its tiles."""
        if await self.static():
            if index is None:
                raise CannotCheck(f"{self.url} is a static mirror: it finds no entry by "
                                  "its id; give the entry's seq (--seq, from its receipt)")
            plan = proofs.inclusion_plan(index, tree.size)
            return {"leaf_index": index, "tree_size": tree.size,
                    "hashes": await self._from_tiles(plan, tree)}
        return await self.get_json(f"/v1/proofs/inclusion?id={quote(entry_id)}"
                                   f"&size={tree.size}", "proof")

    async def _from_tiles(self, plan: proofs.ProofPlan, tree: VerifiedCheckpoint
                          ) -> list[str]:
        needed = sorted(tiles_needed(plan.nodes, tree.size))
        fetched = dict(zip(needed, await asyncio.gather(*(self._tile(t) for t in needed)),
                           strict=True))
        try:
            verify_tiles(tree.size, tree.root, fetched)
        except TlogError as exc:
            raise CheckFailed(f"{self.url}: {exc.detail}") from None
        return [h.hex() for h in plan.hashes(TileNodes(tree.size, fetched))]

    async def _tile(self, tile: Tile) -> bytes:
        """A tile; a partial one the mirror no longer has (tlog-tiles lets it go once
        the full tile exists) is the beginning of the full tile."""
        body = await self.get("/" + tile.path, "tile", missing_ok=not tile.full)
        if body is None:
            full = await self.get("/" + Tile(tile.level, tile.index, TILE_WIDTH).path, "tile")
            assert full is not None
            body = full[:tile.size]
        self.tiles_fetched += 1
        return body


def open_note(note: str, trust: Trust, witnesses: tuple[str, ...], threshold: int,
              where: str) -> VerifiedCheckpoint:
    """A note verified against the key in force at its size."""
    try:
        return verify_note(note, trust.history, witnesses=witnesses, threshold=threshold)
    except VerificationError as exc:
        raise CheckFailed(f"{where}: the checkpoint note does not verify: {exc.code}: "
                          f"{exc.detail}") from None


def _key_id(verifier: Verifier) -> str:
    return wire.key_id(verifier.public_key)


def _note_key(vkey: str, where: str) -> Verifier:
    try:
        verifier = Verifier.from_vkey(vkey)
    except TlogError as exc:
        raise CannotCheck(f"{where}: not a vkey: {exc.detail}") from None
    if verifier.sig_type != ED25519:
        raise CannotCheck(f"{where}: the bureau's vkey is a plain Ed25519 note key")
    return verifier


def _detail(body: bytes) -> str:
    try:
        doc = strictjson.loads(body)
        if isinstance(doc, dict) and isinstance(doc.get("detail"), str):
            return one_line(f"{doc.get('code')}: {doc['detail']}")
    except strictjson.StrictJSONError:
        pass
    return one_line(body[:200].decode("utf-8", "replace"))
