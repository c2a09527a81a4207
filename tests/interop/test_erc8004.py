"""ERC-8004 feedback of a sealed report: the files hold the ERC's fields, the
``feedbackHash`` is keccak-256 of the bytes served at ``feedbackURI`` (recomputed here
with pycryptodome, not the eth-hash the bureau uses), and the calldata decodes with
eth-abi, under the selector of ``giveFeedback(...)``, back to the same arguments."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from Crypto.Hash import keccak as pycryptodome_keccak
from eth_abi.abi import decode

from bureau.config import Config
from tests.interop.support import (
    BUREAU_ETH,
    IDENTITY,
    PUBLIC_URL,
    REPUTATION,
    Linked,
    get_json,
    linked_world,
)
from tests.support import BureauUnderTest, kid, start_bureau
from tests.views.support import EPOCH_SECONDS, bureau_key, open_envelope

SIGNATURE = b"giveFeedback(uint256,int128,uint8,string,string,string,string,bytes32)"
TYPES = ["uint256", "int128", "uint8", "string", "string", "string", "string", "bytes32"]

#: The off-chain feedback file as ERC-8004 lists its fields (the issue's list): the
#: required six, and the optional ones the bureau may write; anything else is allowed
#: (the ERC: "Other fields MAY").
FEEDBACK_FILE = {
    "type": "object",
    "required": ["agentRegistry", "agentId", "clientAddress", "createdAt", "value",
                 "valueDecimals"],
    "properties": {
        "agentRegistry": {"type": "string", "pattern": "^eip155:[0-9]+:0x[0-9a-fA-F]{40}$"},
        "agentId": {"type": ["integer", "string"], "minimum": 0, "pattern": "^[0-9]+$"},
        "clientAddress": {"type": "string", "pattern": "^eip155:[0-9]+:0x[0-9a-fA-F]{40}$"},
        "createdAt": {"type": "string",
                      "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"},
        "value": {"type": "integer", "minimum": -(10**38), "maximum": 10**38},
        "valueDecimals": {"type": "integer", "minimum": 0, "maximum": 18},
        "tag1": {"type": "string"}, "tag2": {"type": "string"},
        "endpoint": {"type": "string", "pattern": "^https://"},
        "a2a": {"type": "object"}, "mcp": {"type": "object"},
        "proofOfPayment": {"type": "object"},
    },
}


def keccak256(data: bytes) -> bytes:
    return pycryptodome_keccak.new(digest_bits=256, data=data).digest()


async def _feedback(linked: Linked, query: str = "") -> dict[str, Any]:
    status, doc = await get_json(linked.bureau, f"/v1/agents/{linked.key_id}/erc8004{query}")
    assert status == 200, doc
    return doc  # type: ignore[no-any-return]


async def _served(bureau: BureauUnderTest, uri: str) -> bytes:
    """The bytes at a feedbackURI (named under the public URL, served here)."""
    assert uri.startswith(PUBLIC_URL + "/")
    async with bureau.session.get(bureau.url + uri.removeprefix(PUBLIC_URL)) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.read()


async def _confirmed_by_operator(linked: Linked, registry: str = f"eip155:8453:{IDENTITY}",
                                 agent_id: str = "22") -> None:
    """Record the link as confirmed, as ``bureau erc8004 confirm`` does once the token's
    registration file names the agent (tests/interop/test_erc8004_confirm.py)."""
    import asyncpg

    from bureau.storage import erc8004 as store

    conn = await asyncpg.connect(linked.bureau.database_url)
    try:
        await store.record(conn, store.Confirmed(
            linked.key_id, registry, agent_id, "https://registry.example/22.json",
            b"\0" * 32, dt.datetime.now(dt.UTC)))
    finally:
        await conn.close()


async def test_feedback_files_hashes_and_calldata(linked: Linked) -> None:
    await _confirmed_by_operator(linked)
    doc = await _feedback(linked)
    assert doc["agent"] == linked.key_id and doc["epoch"] == linked.epoch
    assert doc["clientAddress"] == BUREAU_ETH
    by_tag = {f["tag1"]: f for f in doc["feedback"]}
    assert sorted(by_tag) == ["bureauScore", "reachable", "responseTime"]
    status, report_env = await get_json(linked.bureau, f"/v1/agents/{linked.key_id}/report")
    assert status == 200
    report = open_envelope(json.dumps(report_env).encode(), await bureau_key(linked.bureau))
    expected_values = {
        "bureauScore": (round(report["score"]["value"] * 10000), 2),
        "reachable": (10000, 2),  # every fact answered
        "responseTime": (report["reliability"]["latency_ms"]["p50"], 0),
    }
    assert expected_values["responseTime"] == (200, 0)  # 100, 200, 300, 400 ms: p50 200
    selector = keccak256(SIGNATURE)[:4]
    card = linked.links[1]["card"]
    for tag, fb in by_tag.items():
        file = fb["file"]
        jsonschema.validate(file, FEEDBACK_FILE)
        assert file["agentRegistry"] == f"eip155:8453:{IDENTITY}"
        assert file["agentId"] == 22
        assert file["clientAddress"] == f"eip155:8453:{BUREAU_ETH}"
        assert (file["value"], file["valueDecimals"]) == expected_values[tag]
        assert (file["tag1"], file["tag2"]) == (tag, str(linked.epoch))
        assert file["endpoint"] == card  # from the agent's A2A link
        created = dt.datetime.fromisoformat(file["createdAt"].replace("Z", "+00:00"))
        assert created.timestamp() == (linked.epoch + 1) * EPOCH_SECONDS  # the epoch's end
        # what makes it checkable: the signed report, the note, the inclusion proof
        pointers = file["bureau"]
        assert pointers["agent"] == linked.key_id
        assert pointers["ledger"] == report["ledger"]
        for name in ("report", "note", "inclusion"):
            assert (await _served(linked.bureau, pointers[name])), name
        proof = json.loads(await _served(linked.bureau, pointers["inclusion"]))
        assert proof["tree_size"] == report["ledger"]["seq"]

        # feedbackHash: keccak-256 of the bytes served at feedbackURI, and of the file
        body = await _served(linked.bureau, fb["feedbackURI"])
        assert json.loads(body) == file
        assert fb["feedbackHash"] == "0x" + keccak256(body).hex()

        # the calldata: the selector, then the arguments, decoded by eth-abi
        assert fb["confirmed"] is True
        tx = fb["transaction"]
        assert (tx["chainId"], tx["to"], tx["from"]) == (8453, REPUTATION, BUREAU_ETH)
        data = bytes.fromhex(tx["data"].removeprefix("0x"))
        assert data[:4] == selector
        args = decode(TYPES, data[4:])
        assert args == (22, file["value"], file["valueDecimals"], tag, str(linked.epoch),
                        card, fb["feedbackURI"], keccak256(body))


async def test_an_agent_without_an_a2a_link_has_no_endpoint(bureau: BureauUnderTest) -> None:
    from reporters import identity_links

    linked = await linked_world(bureau, links=[identity_links.erc8004(1, "0x" + "12" * 20,
                                                                     7)])
    await _confirmed_by_operator(linked, "eip155:1:0x" + "12" * 20, "7")
    doc = await _feedback(linked, f"?epoch={linked.epoch}")
    for fb in doc["feedback"]:
        assert "endpoint" not in fb["file"]
        assert fb["transaction"]["to"] is None  # not a registry this bureau knows
        args = decode(TYPES, bytes.fromhex(fb["transaction"]["data"][2:])[4:])
        assert args[0] == 7 and args[5] == ""


async def test_no_erc8004_link_no_report_bad_epoch(bureau: BureauUnderTest) -> None:
    from reporters import identity_links

    linked = await linked_world(bureau, links=[identity_links.mcp("io.github.x/y")])
    status, body = await get_json(bureau, f"/v1/agents/{linked.key_id}/erc8004")
    assert status == 404 and body["code"] == "NOT_FOUND" and "erc8004" in body["detail"]
    status, body = await get_json(bureau, f"/v1/agents/{'ed25519:' + 'B' * 43}/erc8004")
    assert status == 404 and body["code"] == "NOT_FOUND"
    for bad in ("?epoch=01", "?epoch=-1", "?epoch=1&epoch=2", "?other=1"):
        status, body = await get_json(bureau, f"/v1/agents/{linked.key_id}/erc8004{bad}")
        assert status == 422 and body["code"] == "SCHEMA", (bad, body)


async def test_without_an_ethereum_address_there_is_no_feedback(
        database_url: str, tmp_path: Path) -> None:
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS,
                            public_url=PUBLIC_URL) as bureau:
        linked = await linked_world(bureau)
        status, body = await get_json(bureau, f"/v1/agents/{linked.key_id}/erc8004")
        assert status == 404 and "BUREAU_ETH_ADDRESS" in body["detail"]
        status, info = await get_json(bureau, "/v1/bureau")
        assert info["eth_address"] is None


async def test_the_address_is_served_at_v1_bureau(bureau: BureauUnderTest) -> None:
    status, info = await get_json(bureau, "/v1/bureau")
    assert status == 200 and info["eth_address"] == BUREAU_ETH


def test_the_address_is_configuration_checked_and_checksummed() -> None:
    lower = BUREAU_ETH.lower()
    assert Config.from_env({"BUREAU_ETH_ADDRESS": lower}).eth_address == BUREAU_ETH
    assert Config.from_env({}).eth_address is None
    i = next(i for i, c in enumerate(BUREAU_ETH) if i > 1 and c.isalpha())
    bad_checksum = BUREAU_ETH[:i] + BUREAU_ETH[i].swapcase() + BUREAU_ETH[i + 1:]
    for bad in ("0x1234", BUREAU_ETH[2:], bad_checksum, lower + "0"):
        with pytest.raises(ValueError, match="BUREAU_ETH_ADDRESS"):
            Config.from_env({"BUREAU_ETH_ADDRESS": bad})


@pytest.mark.slow
async def test_export_writes_every_linked_agents_feedback(linked: Linked,
                                                          tmp_path: Path) -> None:
    from reporters import identity_links

    plain = await linked.world.agent("plain")  # no link: nothing exported
    other = (await linked_world(linked.bureau, links=[
        identity_links.erc8004(1, IDENTITY, 5), identity_links.erc8004(1, IDENTITY, 6)]))
    out = tmp_path / "export"
    env = {"BUREAU_DATABASE_URL": linked.bureau.database_url, "BUREAU_PUBLIC_URL": PUBLIC_URL,
           "BUREAU_ETH_ADDRESS": BUREAU_ETH, "PATH": "/usr/bin:/bin"}
    ran = subprocess.run([sys.executable, "-m", "bureau.cli", "erc8004", "export", "--epoch",
                          str(other.epoch), "--out", str(out)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    index = json.loads((out / "transactions.json").read_text())
    assert index["epoch"] == other.epoch and index["clientAddress"] == BUREAU_ETH
    agents = {t["agent"] for t in index["transactions"]}
    assert agents == {linked.key_id, other.key_id} and kid(plain) not in agents
    served = (await _feedback(other))["feedback"]
    assert len([t for t in index["transactions"] if t["agent"] == other.key_id]) == \
        len(served) == 2 * 3  # two links, three figures each
    by_uri = {fb["feedbackURI"]: fb for fb in served}
    for t in index["transactions"]:
        body = (out / t["file"]).read_bytes()
        assert t["feedbackHash"] == "0x" + keccak256(body).hex()
        if t["agent"] == other.key_id:
            fb = by_uri[t["feedbackURI"]]
            assert body == await _served(other.bureau, t["feedbackURI"])
            assert t["data"] == fb["transaction"]["data"] and t["to"] == REPUTATION
    # an epoch not sealed: exit 1, nothing written
    ran = subprocess.run([sys.executable, "-m", "bureau.cli", "erc8004", "export", "--epoch",
                          str(other.epoch + 5), "--out", str(tmp_path / "none")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1 and "not sealed" in ran.stderr
    assert not (tmp_path / "none").exists()
