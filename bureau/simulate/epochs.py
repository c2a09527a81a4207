"""Ending an epoch, as any admin of a running bureau can: wait for the bureau's current
epoch to elapse, ask for a seal, and wait until that epoch's checkpoint (and so its
reports) is out. Shared by both simulations."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import aiohttp

from reporters import Admin


async def checkpoint_epoch(http: aiohttp.ClientSession, url: str) -> int | None:
    """The epoch of the latest checkpoint, None before the first."""
    async with http.get(url + "/v1/checkpoints/latest") as resp:
        if resp.status != 200:
            return None
        envelope = json.loads(await resp.read())
    epoch: int = json.loads(base64.b64decode(envelope["payload"]))["epoch"]
    return epoch


async def seal_current(http: aiohttp.ClientSession, url: str, admin: Admin,
                       epoch_seconds: int, max_wait: float) -> int:
    """Seal the epoch running now once it has elapsed; returns it once its checkpoint is
    served. ``TimeoutError`` after ``max_wait`` seconds of asking."""
    now = time.time()
    current = int(now // epoch_seconds)
    await asyncio.sleep((current + 1) * epoch_seconds - now + 0.05)
    deadline = time.monotonic() + max_wait
    while time.monotonic() < deadline:
        await admin.seal()
        for _ in range(20):
            if (await checkpoint_epoch(http, url) or -1) >= current:
                return current
            await asyncio.sleep(0.1)
    raise TimeoutError(f"epoch {current} was not sealed and reported in time")
