"""Helpers of the interop tests: an agent with links, evidence about it, a sealed epoch."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import nacl.signing

from reporters import identity_links
from tests import support
from tests.support import BureauUnderTest, kid
from tests.views.support import World, enrollment, next_epoch

PUBLIC_URL = "https://bureau.example.test"
#: the bureau's Ethereum address as configured (EIP-55 checksummed)
BUREAU_ETH = "0x52908400098527886E0F7030069857D2E4169EE7"
#: the ERC-8004 v2.0.0 mainnet Identity Registry (erc-8004-contracts README)
IDENTITY = "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432"
REPUTATION = "0x8004BAa17C55a88189AE136b182e5fdA19dE9b63"


@dataclass
class Linked:
    bureau: BureauUnderTest
    world: World
    agent: nacl.signing.SigningKey
    links: list[dict[str, str]]
    epoch: int

    @property
    def key_id(self) -> str:
        return kid(self.agent)


def links_for(card: str = "https://agent.example/.well-known/agent-card.json",
              server: str | None = None, agent_id: int = 22) -> list[dict[str, str]]:
    return [identity_links.erc8004(8453, IDENTITY, agent_id), identity_links.a2a(card),
            identity_links.mcp(server or f"io.github.agent-{secrets.token_hex(3)}/weather")]


async def enroll_linked(bureau: BureauUnderTest, name: str, links: list[dict[str, str]]
                        ) -> nacl.signing.SigningKey:
    return await support.enroll(bureau, {**enrollment(name), "links": links})


async def linked_world(bureau: BureauUnderTest, links: list[dict[str, str]] | None = None,
                       facts: int = 4) -> Linked:
    """An agent enrolled with ``links``, ``facts`` answered facts about it, and the
    epoch sealed."""
    world = await World.make(bureau)
    links = links if links is not None else links_for()
    agent = await enroll_linked(bureau, "linked agent", links)
    for i in range(facts):
        await world.fact(agent, latency_ms=100 * (i + 1), check="PASS")
    epochs = await next_epoch(bureau)
    return Linked(bureau, world, agent, links, epochs[-1])


async def get_json(bureau: BureauUnderTest, path: str) -> tuple[int, Any]:
    """GET ``path`` as JSON, whatever its declared type (cards, registration files)."""
    return await support.get_json(bureau, path, content_type=None)
