"""A bureau as ``bureau-check`` sees it: public routes over HTTP, and the keys it trusts.

Two outcomes that are not success, kept apart because a script must tell them apart:

* :class:`CheckFailed` — the bureau served something that does not verify: a bad
  signature, a proof that does not hold, a head that rewinds, a report that does not
  match the file (exit status 1);
* :class:`CannotCheck` — nothing could be verified: the bureau is unreachable, answered
  an error, or the input is not usable (exit status 2).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from reporters import VerificationError, VerifiedCheckpoint, verify_note, wire
from reporters.tlog.errors import TlogError
from reporters.tlog.note import ED25519, Verifier


class CheckFailed(Exception):
    """What the bureau served does not verify."""


class CannotCheck(Exception):
    """Nothing could be verified (unreachable, an error answer, unusable input)."""


@dataclass(frozen=True)
class Trust:
    """The bureau's key as trusted for this run, and why it is trusted."""

    key_id: str  # the Ed25519 key id that signs reports and checkpoints
    vkey: str  # the same key as a signed-note verifier, under the log's origin
    origin: str
    source: str  # how the key came to be trusted, in words (printed with every result)
    pinned: bool

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key_id, "vkey": self.vkey, "origin": self.origin,
                "pinned": self.pinned, "source": self.source}


class Bureau:
    """GETs against one bureau's public routes."""

    def __init__(self, url: str, session: aiohttp.ClientSession, timeout: float = 30) -> None:
        self.url = url.rstrip("/")
        self.session = session
        self.timeout = aiohttp.ClientTimeout(total=timeout)

    async def get(self, path: str, *, missing_ok: bool = False) -> bytes | None:
        try:
            async with self.session.get(self.url + path, timeout=self.timeout) as resp:
                body = await resp.read()
                status = resp.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise CannotCheck(f"{self.url}{path}: unreachable ({exc!r})") from None
        if status == 404 and missing_ok:
            return None
        if status != 200:
            raise CannotCheck(f"{self.url}{path}: HTTP {status}: {_detail(body)}")
        return body

    async def get_json(self, path: str) -> Any:
        body = await self.get(path)
        assert body is not None
        try:
            return json.loads(body)
        except ValueError:
            raise CheckFailed(f"{self.url}{path} did not answer JSON") from None

    async def get_text(self, path: str) -> str:
        body = await self.get(path)
        assert body is not None
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            raise CheckFailed(f"{self.url}{path} did not answer UTF-8 text") from None

    async def trust(self, key_id: str | None = None, vkey: str | None = None) -> Trust:
        """The key to verify with: ``vkey`` if pinned; else ``key_id`` if pinned, with the
        origin from ``/v1/bureau`` (which must serve that very key); else whatever
        ``/v1/bureau`` serves — trust on first use, and the result says so."""
        if vkey is not None:
            verifier = _note_key(vkey, "--vkey")
            pinned_id = wire.key_id(verifier.public_key)
            if key_id is not None and key_id != pinned_id:
                raise CannotCheck(f"--bureau-key {key_id} and --vkey {vkey} are two keys")
            return Trust(pinned_id, vkey, verifier.name, "pinned (--vkey)", True)
        info = await self.get_json("/v1/bureau")
        served_id, served_vkey = info.get("key"), info.get("vkey")
        if not isinstance(served_id, str) or not isinstance(served_vkey, str):
            raise CheckFailed(f"{self.url}/v1/bureau names no key and vkey")
        verifier = _note_key(served_vkey, f"{self.url}/v1/bureau")
        if wire.key_id(verifier.public_key) != served_id:
            raise CheckFailed(f"{self.url}/v1/bureau serves a vkey of another key than "
                              f"{served_id}")
        if key_id is not None:
            if served_id != key_id:
                raise CheckFailed(f"the bureau at {self.url} serves key {served_id}, not the "
                                  f"pinned key {key_id}")
            return Trust(key_id, served_vkey, verifier.name,
                         "pinned (--bureau-key); origin from /v1/bureau", True)
        return Trust(served_id, served_vkey, verifier.name,
                     f"NOT pinned: taken from {self.url}/v1/bureau (pin it with "
                     "--bureau-key or --vkey)", False)

    async def checkpoint(self, trust: Trust, witnesses: Sequence[str],
                         threshold: int) -> VerifiedCheckpoint:
        """``GET /checkpoint``, verified."""
        note = await self.get_text("/checkpoint")
        return open_note(note, trust, witnesses, threshold, f"{self.url}/checkpoint")

    async def consistency(self, old: int, new: int) -> Any:
        return await self.get_json(f"/v1/proofs/consistency?from={old}&to={new}")

    async def inclusion(self, entry_id: str, size: int) -> Any:
        return await self.get_json(f"/v1/proofs/inclusion?id={quote(entry_id)}&size={size}")


def open_note(note: str, trust: Trust, witnesses: Sequence[str], threshold: int,
              where: str) -> VerifiedCheckpoint:
    try:
        return verify_note(note, trust.vkey, witnesses=witnesses, threshold=threshold)
    except VerificationError as exc:
        raise CheckFailed(f"{where}: the checkpoint note does not verify: {exc.code}: "
                          f"{exc.detail}") from None


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
        doc = json.loads(body)
        if isinstance(doc, dict) and isinstance(doc.get("detail"), str):
            return f"{doc.get('code')}: {doc['detail']}"
    except ValueError:
        pass
    return body[:200].decode("utf-8", "replace").strip()
