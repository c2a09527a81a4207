"""Service configuration, read once from the environment (SPEC §10).

Three settings belong to the ledger rather than to a process: the scoring policy, the
epoch length and the log's origin. They seed the ``genesis`` entry of a new ledger
(:mod:`bureau.intake.genesis`); afterwards the ledger's values rule. ``pinned`` says
which of them the operator set explicitly: a pinned value that differs from the
ledger's refuses the start, an unpinned one is replaced by the ledger's.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from bureau.scoring.policy import DEFAULT_POLICY_NAME, KNOWN_POLICIES
from reporters.tlog.errors import TlogError
from reporters.tlog.witness import Witness, parse_witnesses

DEFAULT_EPOCH_SECONDS = 21600
#: the names of the settings a ledger's genesis entry fixes (see ``Config.pinned``)
LEDGER_SETTINGS = ("policy", "epoch_seconds", "origin")
#: SPEC §8.1: a new tree head at least every 10 s while the ledger grows.
MAX_CHECKPOINT_INTERVAL = 10.0
#: BUREAU_READ_WAIT's default: a healthy replica on the same network replays a commit
#: in milliseconds; one further behind than this is skipped rather than waited for
DEFAULT_READ_WAIT = 0.2
#: BUREAU_HEADER_SECONDS's default: a request's head (request line and header fields)
#: must be in within this many seconds, and an idle connection is kept no longer
DEFAULT_HEADER_SECONDS = 10.0
#: BUREAU_SEAL_INTERVAL's name before issue 33, still read (with one deprecation line
#: in the log) when the new name is not set
OLD_SEAL_INTERVAL = "BUREAU_SETTLE_INTERVAL"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Config:
    home: Path = Path(".bureau")
    database_url: str | None = None
    admin_keys: frozenset[str] = field(default_factory=frozenset)
    signing_key_path: Path | None = None
    epoch_seconds: int = DEFAULT_EPOCH_SECONDS
    #: the name of the scoring policy a new ledger starts with (``KNOWN_POLICIES``)
    policy: str = DEFAULT_POLICY_NAME
    #: the log's origin line for a new ledger; None: the default for the bureau's key
    origin: str | None = None
    #: which of ``LEDGER_SETTINGS`` the operator set explicitly (see the module doc)
    pinned: frozenset[str] = frozenset()
    #: envelopes waiting for the committer before intake answers 503
    max_pending: int = 20_000
    #: envelopes judged in one group-commit transaction at most
    max_group: int = 5_000
    #: how often the sealer looks for elapsed epochs, in seconds (BUREAU_SEAL_INTERVAL)
    seal_interval: float = 5.0
    #: processes that derive and sign reports (1: in the serving process itself)
    report_workers: int = 1
    #: witnesses that are sent each new tree head (BUREAU_WITNESSES)
    witnesses: tuple[Witness, ...] = ()
    #: how often a new tree head is published while the ledger grows, in seconds
    checkpoint_interval: float = 5.0
    #: the bureau's public address (``BUREAU_PUBLIC_URL``), written into the pages'
    #: verification snippet; None: the pages name no address (they never echo ``Host``)
    public_url: str | None = None
    #: a streaming replica of the database (``BUREAU_READ_DATABASE_URL``) that serves
    #: the reads (bureau.replica); None: every read goes to the primary
    read_database_url: str | None = None
    #: how long a party's read waits for the replica to replay the party's own latest
    #: write before it is served by the primary instead, in seconds
    read_wait: float = DEFAULT_READ_WAIT
    #: the bureau's Ethereum address (``BUREAU_ETH_ADDRESS``, EIP-55 checksummed): the
    #: ``clientAddress`` of its ERC-8004 feedback. Only an address: the bureau holds no
    #: Ethereum key and sends nothing on chain (docs/interop.md). None: no feedback
    eth_address: str | None = None
    #: hosts (``host`` or ``host:port``) an ERC-8004 registration file may be fetched
    #: from to confirm a link (``BUREAU_ERC8004_HOSTS``; bureau.interop.confirm)
    erc8004_hosts: frozenset[str] = frozenset()
    #: offer ``giveFeedback`` calldata for links the bureau has not confirmed too
    #: (``BUREAU_ERC8004_UNCONFIRMED_CALLDATA=1``); by default only confirmed links get it
    erc8004_unconfirmed_calldata: bool = False
    #: a request's head must be in within this many seconds of its first byte (or of the
    #: connection's opening), else the connection is closed; an idle connection is kept
    #: as long and no longer (``BUREAU_HEADER_SECONDS``; reporters.daemon.deadlines)
    header_seconds: float = DEFAULT_HEADER_SECONDS
    #: ``bureau serve --mirror DIR``: the directory the static mirror is kept current in
    #: after each seal and tree head (bureau.mirror); None: no mirror
    mirror_dir: Path | None = None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
        env = dict(os.environ) if env is None else env
        admins = frozenset(
            k.strip() for k in env.get("BUREAU_ADMIN_KEYS", "").split(",") if k.strip()
        )
        signing = env.get("BUREAU_SIGNING_KEY")
        epoch = int(env.get("BUREAU_EPOCH_SECONDS", str(DEFAULT_EPOCH_SECONDS)))
        if epoch < 1:
            raise ValueError("BUREAU_EPOCH_SECONDS must be a positive number of seconds")
        policy = env.get("BUREAU_POLICY") or DEFAULT_POLICY_NAME
        if policy not in KNOWN_POLICIES:
            raise ValueError(f"BUREAU_POLICY must be one of {', '.join(KNOWN_POLICIES)}, "
                             f"not {policy!r}")
        pinned = frozenset(name for name, var in (
            ("policy", "BUREAU_POLICY"), ("epoch_seconds", "BUREAU_EPOCH_SECONDS"),
            ("origin", "BUREAU_ORIGIN")) if env.get(var))
        workers = int(env.get("BUREAU_REPORT_WORKERS", str(default_report_workers())))
        if workers < 1:
            raise ValueError("BUREAU_REPORT_WORKERS must be at least 1")
        seal_interval = _seal_interval(env)
        try:
            witnesses = tuple(parse_witnesses(env.get("BUREAU_WITNESSES", "")))
        except TlogError as exc:
            raise ValueError(f"BUREAU_WITNESSES: {exc.detail}") from None
        interval = float(env.get("BUREAU_CHECKPOINT_INTERVAL", "5"))
        if not 0 < interval <= MAX_CHECKPOINT_INTERVAL:
            raise ValueError("BUREAU_CHECKPOINT_INTERVAL must be more than 0 and at most "
                             f"{MAX_CHECKPOINT_INTERVAL:g} seconds")
        header_seconds = float(env.get("BUREAU_HEADER_SECONDS") or DEFAULT_HEADER_SECONDS)
        if not 0 < header_seconds <= 3600:
            raise ValueError("BUREAU_HEADER_SECONDS must be more than 0 and at most 3600 "
                             "seconds")
        read_wait = float(env.get("BUREAU_READ_WAIT", str(DEFAULT_READ_WAIT)))
        if not 0 <= read_wait <= 10:
            raise ValueError("BUREAU_READ_WAIT must be from 0 to 10 seconds")
        return cls(
            read_database_url=env.get("BUREAU_READ_DATABASE_URL") or None,
            read_wait=read_wait,
            eth_address=eth_address(env.get("BUREAU_ETH_ADDRESS") or None),
            erc8004_hosts=frozenset(h.strip().lower() for h in env.get(
                "BUREAU_ERC8004_HOSTS", "").split(",") if h.strip()),
            erc8004_unconfirmed_calldata=_flag(env, "BUREAU_ERC8004_UNCONFIRMED_CALLDATA"),
            public_url=public_url(env.get("BUREAU_PUBLIC_URL") or None),
            seal_interval=seal_interval,
            home=Path(env.get("BUREAU_HOME", ".bureau")),
            database_url=env.get("BUREAU_DATABASE_URL") or None,
            admin_keys=admins,
            signing_key_path=Path(signing) if signing else None,
            epoch_seconds=epoch,
            policy=policy,
            origin=env.get("BUREAU_ORIGIN") or None,
            pinned=pinned,
            report_workers=workers,
            witnesses=witnesses,
            checkpoint_interval=interval,
            header_seconds=header_seconds,
        )


def _seal_interval(env: dict[str, str]) -> float:
    """``BUREAU_SEAL_INTERVAL``; or, when only its old name is set, that one, said in one
    deprecation line (an old unit file keeps working, and its operator hears why to
    change it)."""
    name = "BUREAU_SEAL_INTERVAL"
    if env.get(OLD_SEAL_INTERVAL):
        if env.get(name):
            _deprecated(f"{OLD_SEAL_INTERVAL} is deprecated and ignored: {name} is set")
        else:
            _deprecated(f"{OLD_SEAL_INTERVAL} is deprecated: set {name} instead")
            name = OLD_SEAL_INTERVAL
    seconds = float(env.get(name) or "5")
    if not seconds > 0:
        raise ValueError(f"{name} must be a positive number of seconds")
    return seconds


@functools.cache
def _deprecated(line: str) -> None:
    """``line`` in the log once per process, however often the environment is read (a
    command may read it twice)."""
    log.warning("%s", line)


def child_environment(config: Config, **extra: str) -> dict[str, str]:
    """This process's environment for a process it starts (``serve``'s workers and
    sequencer), ``extra`` laid over it, with the seal interval under its current name
    only: a deprecated name is said once, by the process the operator started."""
    env = {k: v for k, v in os.environ.items() if k != OLD_SEAL_INTERVAL}
    return {**env, "BUREAU_SEAL_INTERVAL": repr(config.seal_interval), **extra}


def _flag(env: dict[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value not in ("", "0", "1", "false", "true"):
        raise ValueError(f"{name} must be 1 or 0 (true or false), not {value!r}")
    return value in ("1", "true")


_PUBLIC_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$")


def public_url(text: str | None) -> str | None:
    """``BUREAU_PUBLIC_URL``, checked: an http(s) URL of a host, an optional port and an
    optional path, nothing that would need quoting in HTML or in Python; no trailing
    slash."""
    if text is None:
        return None
    if not _PUBLIC_URL.fullmatch(text):
        raise ValueError("BUREAU_PUBLIC_URL must be http(s)://host[:port][/path], e.g. "
                         f"https://bureau.example, not {text!r}")
    return text.rstrip("/")


def eth_address(text: str | None) -> str | None:
    """``BUREAU_ETH_ADDRESS``, checked: ``0x`` and 40 hex digits, written back in its
    EIP-55 checksummed form (by ``eth-utils``, the ``erc8004`` extra); an address in
    mixed case must carry a correct checksum."""
    if text is None:
        return None
    try:
        from eth_utils.address import is_checksum_address, to_checksum_address
    except ImportError:
        raise ValueError("BUREAU_ETH_ADDRESS needs the erc8004 extra: "
                         "pip install 'agent-reputation-bureau[erc8004]'") from None
    mixed = text[2:] not in (text[2:].lower(), text[2:].upper())
    if not re.fullmatch(r"0x[0-9a-fA-F]{40}", text) or (mixed and not is_checksum_address(text)):
        raise ValueError("BUREAU_ETH_ADDRESS must be 0x and 40 hex digits, with a correct "
                         f"EIP-55 checksum if in mixed case, not {text!r}")
    checksummed: str = to_checksum_address(text)
    return checksummed


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system has one (a
    container or ``taskset`` may allow fewer than the machine has), else the count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def default_serve_workers() -> int:
    """``serve --workers``: one process per core, up to 8 (SPEC §10: each process holds
    database connections, and the embedded PostgreSQL allows 100)."""
    return min(8, usable_cores())


def default_report_workers() -> int:
    """One report worker process per core, up to 4 (a seal is the only time they work)."""
    return min(4, usable_cores())
