"""The bureau's key history (SPEC §3 "Who signs for the ledger", §9 ``/v1/bureau``).

The key in force at entry ``n`` is the genesis key or that of the latest ``keys`` entry
before ``n``; ``/v1/bureau`` lists them oldest first as ``{"key", "vkey", "from_seq"}``,
the genesis key from seq 1. Whatever the bureau signs is signed by the key in force at
the ledger position it covers: a report at its ``ledger.seq``, a checkpoint at its
``seq``, a note at its tree size. :class:`KeyHistory` answers "which key, there?" and
refuses a served history that is not one (:meth:`KeyHistory.from_bureau`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reporters import wire
from reporters._internal.errors import VerificationError
from reporters.tlog.errors import TlogError
from reporters.tlog.note import ED25519, Verifier

#: A history longer than this is not a bureau's (a rotation a day for a decade fits).
MAX_KEYS = 4096


@dataclass(frozen=True)
class BureauKey:
    """One key of the history: in force from entry ``from_seq`` until the next one's."""

    key_id: str
    vkey: str
    from_seq: int

    @property
    def verifier(self) -> Verifier:
        return Verifier.from_vkey(self.vkey)


def _bad(path: str, detail: str) -> VerificationError:
    return VerificationError("BAD_KEY", path, detail)


def _key(key_id: Any, vkey: Any, from_seq: Any, path: str) -> BureauKey:
    """A key of the history: a key id, the same key as an Ed25519 note vkey."""
    if not isinstance(key_id, str) or not isinstance(vkey, str):
        raise _bad(path, "a key is a key id and a vkey, both strings")
    if type(from_seq) is not int or from_seq < 1:
        raise _bad(f"{path}/from_seq", "from_seq is an entry seq (1 or more)")
    try:
        verifier = Verifier.from_vkey(vkey)
    except TlogError as exc:
        raise _bad(f"{path}/vkey", exc.detail) from None
    if verifier.sig_type != ED25519:
        raise _bad(f"{path}/vkey", "the bureau's vkey is a plain Ed25519 note key")
    if wire.key_id(verifier.public_key) != key_id:
        raise _bad(f"{path}/vkey", f"the vkey is not the key {key_id[:60]}")
    return BureauKey(key_id, vkey, from_seq)


@dataclass(frozen=True)
class KeyHistory:
    """The bureau's keys, oldest first; ``keys[0].from_seq`` is 1 and ``from_seq``
    increases strictly. All share one note key name: the ledger's origin."""

    keys: tuple[BureauKey, ...]

    def __post_init__(self) -> None:
        if not self.keys or self.keys[0].from_seq != 1:
            raise ValueError("a key history starts with the genesis key, from seq 1")
        if any(b.from_seq <= a.from_seq for a, b in zip(self.keys, self.keys[1:], strict=False)):
            raise ValueError("from_seq increases along a key history")

    @classmethod
    def of_one(cls, key_id: str, vkey: str) -> KeyHistory:
        """A ledger that never rotated its key."""
        return cls((_key(key_id, vkey, 1, ""),))

    @classmethod
    def from_bureau(cls, doc: Any) -> KeyHistory:
        """The history ``GET /v1/bureau`` serves, checked: ``keys`` a list of keys
        oldest first from seq 1, every vkey the key id's and named by the origin, the
        last one ``key``/``vkey`` (the key in force). A bureau that serves no ``keys``
        (revision 2) has had one key: its ``key``. Raises ``VerificationError``
        (``BAD_KEY``, ``path`` into the document)."""
        if not isinstance(doc, Mapping):
            raise _bad("", "the bureau's description is a JSON object")
        current = _key(doc.get("key"), doc.get("vkey"), 1, "")
        served = doc.get("keys")
        if served is None and "keys" not in doc:
            keys: tuple[BureauKey, ...] = (current,)
        else:
            if not isinstance(served, list) or not 1 <= len(served) <= MAX_KEYS:
                raise _bad("/keys", f"keys is a list of 1 to {MAX_KEYS} keys")
            found = []
            for i, item in enumerate(served):
                if not isinstance(item, Mapping):
                    raise _bad(f"/keys/{i}", "a key is a JSON object")
                found.append(_key(item.get("key"), item.get("vkey"), item.get("from_seq"),
                                  f"/keys/{i}"))
            keys = tuple(found)
            if keys[0].from_seq != 1:
                raise _bad("/keys/0/from_seq", "the genesis key is in force from seq 1")
            for i in range(1, len(keys)):
                if keys[i].from_seq <= keys[i - 1].from_seq:
                    raise _bad(f"/keys/{i}/from_seq", "from_seq increases along the history")
            if (keys[-1].key_id, keys[-1].vkey) != (current.key_id, current.vkey):
                raise _bad("/key", "key and vkey are the last key of the history")
        names = {Verifier.from_vkey(k.vkey).name for k in keys}
        origin = doc.get("origin")
        if len(names) != 1 or (origin is not None and {origin} != names):
            raise _bad("/keys", "every key of the history is named by the ledger's origin")
        admins = doc.get("admins")
        if admins is not None and (not isinstance(admins, list)
                                   or not all(isinstance(a, str) for a in admins)):
            raise _bad("/admins", "admins is a list of key ids")
        return cls(keys)

    @property
    def origin(self) -> str:
        return self.keys[0].verifier.name

    @property
    def in_force(self) -> BureauKey:
        """The key in force now (the last one)."""
        return self.keys[-1]

    def at(self, position: int) -> BureauKey:
        """The key in force at entry ``position`` (a tree of size 0 is the genesis
        key's: nothing came before it)."""
        chosen = self.keys[0]
        for key in self.keys:
            if key.from_seq > position:
                break
            chosen = key
        return chosen

    def with_key_id(self, key_id: str) -> BureauKey | None:
        """The first key of the history with this key id (``None``: never the ledger's)."""
        return next((k for k in self.keys if k.key_id == key_id), None)

    def with_vkey(self, vkey: str) -> BureauKey | None:
        return next((k for k in self.keys if k.vkey == vkey), None)

    def extends(self, older: KeyHistory) -> bool:
        """Is ``older`` a prefix of this history (a later one only adds keys)?"""
        return self.keys[:len(older.keys)] == older.keys

    def describe(self) -> str:
        return ", ".join(f"{k.key_id} from seq {k.from_seq}" for k in self.keys)

    def as_json(self) -> list[dict[str, Any]]:
        return [{"key": k.key_id, "vkey": k.vkey, "from_seq": k.from_seq} for k in self.keys]

    @classmethod
    def from_json(cls, doc: Any) -> KeyHistory:
        """What :meth:`as_json` wrote (a monitor's state file)."""
        if not isinstance(doc, list):
            raise _bad("", "a key history is a list")
        keys = tuple(_key(k.get("key"), k.get("vkey"), k.get("from_seq"), f"/{i}")
                     if isinstance(k, Mapping) else _key(None, None, 1, f"/{i}")
                     for i, k in enumerate(doc))
        try:
            return cls(keys)
        except ValueError as exc:
            raise _bad("", str(exc)) from None
