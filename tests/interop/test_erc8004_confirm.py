"""ERC-8004 claims labelled as claims (SPEC §9.1 r4, issue 35): an export for a link the
bureau has not confirmed says ``"confirmed": false`` and offers no calldata unless the
operator asks; ``bureau erc8004 confirm`` confirms a link from the token's registration
file, fetched only from a configured host, with bounds, and checked."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reporters import identity_links
from tests.interop.cards import self_signed, serving
from tests.interop.support import BUREAU_ETH, IDENTITY, PUBLIC_URL, Linked, get_json, linked_world
from tests.support import BureauUnderTest, start_bureau
from tests.views.support import EPOCH_SECONDS

REGISTRY = f"eip155:8453:{IDENTITY}"


async def _feedback(linked: Linked) -> list[dict[str, Any]]:
    status, doc = await get_json(linked.bureau, f"/v1/agents/{linked.key_id}/erc8004")
    assert status == 200, doc
    return doc["feedback"]  # type: ignore[no-any-return]


def registration(agent: str, agent_id: int = 22) -> dict[str, Any]:
    """A registration file in the ERC's shape, naming the agent among its services."""
    return {"type": "https://eips.ethereum.org/EIPS/eip-8004#registration-v1",
            "name": "weather", "description": "forecasts",
            "services": [{"name": "A2A", "endpoint": "https://agent.example/card.json"},
                         {"name": "bureau", "endpoint": PUBLIC_URL, "agent": agent}],
            "registrations": [{"agentId": agent_id, "agentRegistry": REGISTRY}]}


async def _confirm(linked: Linked, url: str, hosts: str, cafile: Path,
                   link: tuple[str, str] = (REGISTRY, "22")) -> subprocess.CompletedProcess[str]:
    """The command in a thread (the file is served by this test's event loop); ``link``:
    the registry and token id to confirm."""
    return await asyncio.to_thread(_run, linked, url, hosts, cafile, link)


def _run(linked: Linked, url: str, hosts: str, cafile: Path,
         link: tuple[str, str]) -> subprocess.CompletedProcess[str]:
    env = {"BUREAU_DATABASE_URL": linked.bureau.database_url, "PATH": "/usr/bin:/bin",
           "BUREAU_ERC8004_HOSTS": hosts}
    return subprocess.run([sys.executable, "-m", "bureau.cli", "erc8004", "confirm",
                           "--agent", linked.key_id, "--registry", link[0], "--agent-id",
                           link[1], "--url", url, "--cafile", str(cafile)],
                          env=env, capture_output=True, text=True, timeout=120)


async def test_an_unconfirmed_link_says_so_and_offers_no_calldata(linked: Linked) -> None:
    feedback = await _feedback(linked)
    assert feedback and all(f["confirmed"] is False for f in feedback)
    assert all(f["transaction"]["data"] is None for f in feedback)  # before: ready calldata
    assert all(f["feedbackHash"].startswith("0x") for f in feedback)  # the files stand


async def test_the_operator_may_ask_for_calldata_of_unconfirmed_links(
        database_url: str, tmp_path: Path) -> None:
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS,
                            public_url=PUBLIC_URL, eth_address=BUREAU_ETH,
                            erc8004_unconfirmed_calldata=True) as bureau:
        linked = await linked_world(bureau)
        feedback = await _feedback(linked)
        assert all(f["confirmed"] is False and f["transaction"]["data"].startswith("0x")
                   for f in feedback)


@pytest.mark.slow  # runs the CLI
async def test_a_link_is_confirmed_by_its_registration_file(linked: Linked,
                                                            tmp_path: Path) -> None:
    context, cafile = self_signed(tmp_path)
    documents: dict[str, Any] = {"/good.json": registration(linked.key_id),
                                 "/other.json": registration("ed25519:" + "B" * 43),
                                 "/token5.json": registration(linked.key_id, agent_id=5)}
    async with serving(documents, context) as base:
        hostport = base.split("//")[1]
        # not a configured host: never fetched; a name resolving to loopback: refused
        ran = await _confirm(linked, base + "/good.json", "registry.example", cafile)
        assert ran.returncode == 1 and "BUREAU_ERC8004_HOSTS" in ran.stderr, ran.stderr
        port = hostport.split(":")[1]
        ran = await _confirm(linked, f"https://localhost:{port}/good.json", f"localhost:{port}",
                       cafile)
        assert ran.returncode == 1 and "not a public address" in ran.stderr, ran.stderr
        # a file that names another agent, or another token: not confirmed
        for path in ("/other.json", "/token5.json", "/missing.json"):
            ran = await _confirm(linked, base + path, hostport, cafile)
            assert ran.returncode == 1 and "NOT CONFIRMED" in ran.stderr, (path, ran.stderr)
        assert all(f["confirmed"] is False for f in await _feedback(linked))
        # the token's own file, from the listed address: confirmed, calldata offered
        ran = await _confirm(linked, base + "/good.json", hostport, cafile)
        assert ran.returncode == 0 and "CONFIRMED" in ran.stdout, ran.stderr
    feedback = await _feedback(linked)
    assert all(f["confirmed"] is True and f["transaction"]["data"].startswith("0x")
               for f in feedback)
    await linked.bureau.verify()


@pytest.mark.slow  # runs the CLI
async def test_a_huge_registration_file_is_refused_at_its_cap(linked: Linked,
                                                              tmp_path: Path) -> None:
    context, cafile = self_signed(tmp_path)
    big = registration(linked.key_id)
    big["description"] = "x" * (300 * 1024)
    async with serving({"/big.json": big}, context) as base:
        ran = await _confirm(linked, base + "/big.json", base.split("//")[1], cafile)
    assert ran.returncode == 1 and "more than 262144 bytes" in ran.stderr, ran.stderr


async def test_another_agents_link_to_the_token_stays_unconfirmed(
        bureau: BureauUnderTest, linked: Linked) -> None:
    """Confirmation is per agent: a squatter linking the same token is not confirmed by
    the owner's file."""
    squatter = await linked_world(bureau, links=[identity_links.erc8004(8453, IDENTITY, 22)])
    assert all(f["confirmed"] is False for f in await _feedback(squatter))


@pytest.mark.slow  # runs the CLI
async def test_a_link_is_confirmed_whatever_case_its_address_is_written_in(
        linked: Linked, tmp_path: Path) -> None:
    """The operator copies the registry from a block explorer (checksum case) or types it
    in lower case; the link and the file may each use either: one registry. Before, a
    confirmation recorded in another case than the link's said CONFIRMED and left the
    link unconfirmed."""
    assert REGISTRY.lower() != REGISTRY  # the link is written in checksum case
    context, cafile = self_signed(tmp_path)
    async with serving({"/good.json": registration(linked.key_id)}, context) as base:
        ran = await _confirm(linked, base + "/good.json", base.split("//")[1], cafile,
                             (REGISTRY.lower(), "22"))
        assert ran.returncode == 0 and "CONFIRMED" in ran.stdout, ran.stderr
    feedback = await _feedback(linked)
    assert feedback and all(f["confirmed"] is True for f in feedback)
    await linked.bureau.verify()
