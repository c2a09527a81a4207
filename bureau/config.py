"""Service configuration, read once from the environment (SPEC §10)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_EPOCH_SECONDS = 21600


@dataclass(frozen=True)
class Config:
    home: Path = Path(".bureau")
    database_url: str | None = None
    admin_keys: frozenset[str] = field(default_factory=frozenset)
    signing_key_path: Path | None = None
    epoch_seconds: int = DEFAULT_EPOCH_SECONDS
    #: envelopes waiting for the committer before intake answers 503
    max_pending: int = 20_000
    #: envelopes judged in one group-commit transaction at most
    max_group: int = 5_000
    #: how often the settler looks for elapsed epochs, in seconds
    settle_interval: float = 5.0
    #: processes that derive and sign reports (1: in the serving process itself)
    report_workers: int = 1

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
        workers = int(env.get("BUREAU_REPORT_WORKERS", str(default_report_workers())))
        if workers < 1:
            raise ValueError("BUREAU_REPORT_WORKERS must be at least 1")
        settle = float(env.get("BUREAU_SETTLE_INTERVAL", "5"))
        if not settle > 0:
            raise ValueError("BUREAU_SETTLE_INTERVAL must be a positive number of seconds")
        return cls(
            settle_interval=settle,
            home=Path(env.get("BUREAU_HOME", ".bureau")),
            database_url=env.get("BUREAU_DATABASE_URL") or None,
            admin_keys=admins,
            signing_key_path=Path(signing) if signing else None,
            epoch_seconds=epoch,
            report_workers=workers,
        )


def default_report_workers() -> int:
    """One report worker process per core, up to 4 (a seal is the only time they work)."""
    return max(1, min(4, os.cpu_count() or 1))
