"""A bureau in this process, for ``bureau simulate`` without ``--url``: the embedded
PostgreSQL in a temporary BUREAU_HOME, short epochs, thrown away afterwards."""

from __future__ import annotations

import asyncio
import tempfile
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bureau.config import Config
from bureau.http.app import create_app
from bureau.scoring.policy import DEFAULT_POLICY_NAME
from bureau.simulate.driver import Target
from bureau.simulate.loopback import serving
from reporters import wire


def _start_postgres(home: Path) -> Any:
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver

    return pgserver.get_server(home / "pgdata", cleanup_mode="stop")  # type: ignore[attr-defined]


@asynccontextmanager
async def local_bureau(epoch_seconds: int, policy: str | None = None
                       ) -> AsyncIterator[Target]:
    """A bureau on a new embedded database; ``policy`` names the policy its ledger is
    created with (``bureau.scoring.policy.KNOWN_POLICIES``; None: the default)."""
    with tempfile.TemporaryDirectory(prefix="bureau-sim-home-") as tmp:
        home = Path(tmp)
        server = await asyncio.to_thread(_start_postgres, home)
        try:
            url: str = server.get_uri()
            admin, signing = wire.generate_key(), wire.generate_key()
            config = Config(home=home, database_url=url,
                            admin_keys=frozenset({wire.signing_key_id(admin)}),
                            epoch_seconds=epoch_seconds,
                            seal_interval=min(1.0, epoch_seconds / 4),
                            policy=policy or DEFAULT_POLICY_NAME)
            async with serving(create_app(config, url, signing), access_log=False) as base:
                yield Target(base, admin)
        finally:
            await asyncio.to_thread(server.cleanup)
