"""Commands that read a running bureau over HTTP, as any client does (``bureau report
--url``, ``bureau status --url``): public routes only, through ``bureau-check``'s
client, and a report is shown only once its signature checks against the key the bureau
names (issue 24)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import aiohttp

from reporters import VerificationError, verify_report
from reporters.check.bureau import Bureau, CannotCheck, CheckFailed

#: what a remote read raises: the bureau unreachable or answering an error, or serving
#: something that does not check (``str()`` is the one line the command prints)
RemoteError = (CannotCheck, CheckFailed)


def bureau_line(url: str, info: dict[str, Any]) -> str:
    """The first line of a remote command: which bureau it reads."""
    return (f"bureau at {url.rstrip('/')}, {info.get('epoch_seconds')} s epochs, "
            f"key {info.get('key')}")


async def signed_report(url: str, agent: str, epoch: int | None
                        ) -> tuple[dict[str, Any], bytes | None]:
    """``/v1/bureau`` and the agent's report envelope (None when there is none), the
    report checked against the key in force."""
    async with aiohttp.ClientSession() as session:
        bureau = Bureau(url, session)
        info: dict[str, Any] = await bureau.get_object("/v1/bureau", "bureau")
        query = "" if epoch is None else f"?epoch={epoch}"
        envelope = await bureau.get(f"/v1/agents/{quote(agent)}/report{query}", "report",
                                    missing_ok=True)
    if envelope is not None:
        try:
            verify_report(json.loads(envelope), str(info.get("key")))
        except (VerificationError, ValueError) as exc:
            raise CheckFailed(f"the report {url} served is not signed by the bureau's key "
                              f"{info.get('key')}: {exc}") from None
    return info, envelope
