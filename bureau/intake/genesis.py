"""The genesis entry: entry 1 of every ledger, written by the bureau itself (SPEC §3, §10).

Its body, ``{"policy", "epoch_seconds", "origin", "key", "admins"}``, is the settings
the ledger was created with: the scoring policy (by hash) that scores its epochs until a
``policy`` entry says otherwise, the epoch length, the log's origin line, and *(r3)* the
bureau's signing key and the admin set (sorted) until a ``keys`` entry rotates them
(:mod:`bureau.ledger_keys`). The ledger describes itself: rebuilding, verifying and
reading it need nothing else.

:func:`establish` runs once at every start, under the ledger head lock (so processes
starting together write one genesis between them). On an empty ledger it appends the
genesis entry from the configuration; on an existing one it reads it back, refuses a
start whose *pinned* settings (set explicitly by the operator, ``Config.pinned``)
differ — a silent change would misdate every epoch — or whose signing key or
``BUREAU_ADMIN_KEYS`` is not the one in force (SPEC §10 r3), and returns the
configuration with the ledger's values in place of the unpinned ones (the admin set in
force among them).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass, replace
from typing import Any

import nacl.signing

from bureau import ledger_keys
from bureau.config import Config
from bureau.errors import InternalError
from bureau.intake.chaining import GroupTx
from bureau.intake.flush import flush
from bureau.intake.state import FIRST, GroupState
from bureau.kinds import GENESIS
from bureau.scoring.policy import KNOWN_POLICIES, policy_hash, policy_name_of
from bureau.storage import chain, db, keys
from reporters import wire
from reporters.models import MAX_ADMINS
from reporters.tlog.checkpoint import check_origin, default_origin

log = logging.getLogger(__name__)


class StartRefused(InternalError):
    """The bureau will not start on this ledger as configured; ``detail`` says why and
    what the ledger has."""


@dataclass(frozen=True, slots=True)
class LedgerSettings:
    """What a genesis entry holds."""

    policy: str  # the BLAKE3 hash of the policy document
    epoch_seconds: int
    origin: str
    key: str  # the bureau's signing key id at entry 1
    admins: tuple[str, ...]  # the admin set at entry 1, sorted

    def body(self) -> dict[str, Any]:
        return {"policy": self.policy, "epoch_seconds": self.epoch_seconds,
                "origin": self.origin, "key": self.key, "admins": list(self.admins)}

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> LedgerSettings:
        return cls(policy=body["policy"], epoch_seconds=body["epoch_seconds"],
                   origin=body["origin"], key=body["key"], admins=tuple(body["admins"]))


def requested(config: Config, bureau_key: nacl.signing.VerifyKey) -> LedgerSettings:
    """The settings a new ledger gets from this configuration."""
    origin = config.origin or default_origin(bytes(bureau_key))
    try:
        check_origin(origin)
    except ValueError as exc:
        raise StartRefused(f"BUREAU_ORIGIN {origin!r} is not a log origin: {exc}") from None
    if not 1 <= len(config.admin_keys) <= MAX_ADMINS:
        raise StartRefused(f"a new ledger needs 1 to {MAX_ADMINS} admin keys "
                           "(BUREAU_ADMIN_KEYS)")
    return LedgerSettings(policy_hash(KNOWN_POLICIES[config.policy]), config.epoch_seconds,
                          origin, wire.key_id(bytes(bureau_key)),
                          tuple(sorted(config.admin_keys)))


def check_signers(config: Config, in_force: ledger_keys.KeyPeriod, key_id: str) -> Config:
    """SPEC §10 r3: on an existing ledger its key and admin set rule. ``config`` with
    the admin set in force, or :class:`StartRefused` naming the ledger's value."""
    if key_id != in_force.bureau:
        raise StartRefused(
            f"the signing key is {key_id} but the key in force on this ledger is "
            f"{in_force.bureau} (since entry {in_force.from_seq}): start this node with "
            "that key's file (BUREAU_SIGNING_KEY)")
    admins = frozenset(in_force.admins)
    if config.admin_keys and config.admin_keys != admins:
        raise StartRefused(
            f"BUREAU_ADMIN_KEYS is {','.join(sorted(config.admin_keys))} but the admin set "
            f"in force on this ledger is {','.join(in_force.admins)} (since entry "
            f"{in_force.from_seq}): the ledger's set rules; unset BUREAU_ADMIN_KEYS to use "
            "it, or rotate it with an admin keys entry")
    return replace(config, admin_keys=admins)


#: setting -> (its environment variable, how a value is shown)
_SHOWN = {"policy": "BUREAU_POLICY", "epoch_seconds": "BUREAU_EPOCH_SECONDS",
          "origin": "BUREAU_ORIGIN"}


def reconcile(config: Config, ledger: LedgerSettings,
              bureau_key: nacl.signing.VerifyKey) -> Config:
    """``config`` with the ledger's settings, or :class:`StartRefused` naming the first
    pinned setting that differs from the ledger's."""
    name = policy_name_of(ledger.policy)
    if name is None:
        raise StartRefused(f"this ledger is scored by policy {ledger.policy}, which this "
                           "bureau does not know (known: " + ", ".join(KNOWN_POLICIES) + ")")
    wanted = requested(config, bureau_key) if "origin" in config.pinned else None
    asked = {"policy": config.policy, "epoch_seconds": config.epoch_seconds,
             "origin": wanted.origin if wanted else None}
    has = {"policy": name, "epoch_seconds": ledger.epoch_seconds, "origin": ledger.origin}
    for setting in ("policy", "epoch_seconds", "origin"):
        if setting in config.pinned and asked[setting] != has[setting]:
            raise StartRefused(
                f"{_SHOWN[setting]} is {asked[setting]!r} but this ledger was created with "
                f"{has[setting]!r} (its genesis entry): the ledger's value rules; unset "
                f"{_SHOWN[setting]} to use it")
    return replace(config, policy=name, epoch_seconds=ledger.epoch_seconds,
                   origin=ledger.origin)


async def read(conn: db.Connection) -> LedgerSettings | None:
    """The ledger's settings, or None when it has no entry yet."""
    first = await keys.first_entry(conn)
    if first is None:
        return None
    kind, entry = first
    body = json.loads(entry).get("body", {})
    if kind != GENESIS.name or "key" not in body:
        raise StartRefused(f"entry 1 of this ledger is a {kind!r} without the "
                           "bureau's key: it was made by an earlier revision of the bureau")
    return LedgerSettings.from_body(body)


async def establish(conn: db.Connection, config: Config,
                    bureau_key: nacl.signing.VerifyKey, now: dt.datetime) -> Config:
    """Write the genesis entry of an empty ledger, or check the existing one; return the
    configuration the process runs with (the ledger's settings in place)."""
    async with db.transaction(conn, "genesis"):
        head_seq = (await chain.lock_head(conn))["seq"]
        found = await read(conn)
        if found is not None:
            in_force = (await ledger_keys.history(conn))[-1]
            checked = check_signers(config, in_force, wire.key_id(bytes(bureau_key)))
            return reconcile(checked, found, bureau_key)
        if head_seq != 0:  # pragma: no cover - entries without entry 1
            raise StartRefused("the ledger head has moved but entry 1 is missing")
        settings = requested(config, bureau_key)
        tx = GroupTx(conn, GroupState(), FIRST, now, settings.epoch_seconds)
        tx.append(GENESIS.name, body=settings.body())
        tx.writes.ledger_keys.append((1, 1, settings.key, list(settings.admins), None))
        await flush(tx)
    log.info("new ledger: genesis entry written (policy %s, epochs of %d s, origin %s)",
             config.policy, settings.epoch_seconds, settings.origin)
    return replace(config, origin=settings.origin)


async def signers_of(url: str) -> ledger_keys.KeyPeriod | None:
    """Before anything is created (``bureau serve``): the key and admin set in force on
    the ledger at ``url``, or None when it has no ledger yet (a new one may be made)."""
    conn = await db.connect(url)
    try:
        if not await keys.has_table(conn):
            return None
        periods = await ledger_keys.history(conn)
    finally:
        await conn.close()
    return periods[-1] if periods else None
