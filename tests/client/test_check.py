"""``bureau-check`` against a live bureau over real HTTP, as a separate process: a good
report, proof and file verify; one changed byte, a wrong key, an evidence root that does
not match the agent's file, and a bureau that rewinds its tree (a test double) are each
caught with a clear message and a non-zero exit status."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiohttp import web

from bureau.http.keys import PUBLISHER
from reporters import wire
from reporters.tlog.checkpoint import Checkpoint, sign_checkpoint_note
from reporters.tlog.merkle import leaf_hash
from tests.support import BureauUnderTest, kid, serving, start_bureau
from tests.transparency.service import entry_ids, get_text
from tests.transparency.witness import TestWitness
from tests.views.support import EPOCH_SECONDS, World, next_epoch

pytestmark = pytest.mark.slow


@dataclass
class Ran:
    status: int
    out: str

    def json(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.out.splitlines()[-1])
        return doc


async def check(*args: str) -> Ran:
    """``bureau-check ARGS`` in its own process (the bureau keeps serving meanwhile)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "reporters.check.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode())


@dataclass
class Sealed:
    bureau: BureauUnderTest
    agent_key_file: Path
    agent: str
    world: World


@pytest.fixture
async def sealed(database_url: str, tmp_path: Path) -> AsyncIterator[Sealed]:
    """A bureau with an agent, facts about it (one it called), and a sealed epoch."""
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS) as bureau:
        yield await _sealed(bureau, tmp_path)


async def _sealed(bureau: BureauUnderTest, tmp_path: Path) -> Sealed:
    world = await World.make(bureau)
    agent, other = await world.agent("alpha"), await world.agent("beta")
    for _ in range(3):
        await world.fact(agent)
    await world.fact(other, caller=agent)
    await next_epoch(bureau)
    # back to real time: the agent's signed reads are stamped with the real clock
    bureau.clock.offset = dt.timedelta(0)
    key_file = tmp_path / "alpha.key"
    key_file.write_text(wire.key_to_pem(agent))
    return Sealed(bureau, key_file, kid(agent), world)


async def test_a_good_report_verifies_and_says_where_the_key_came_from(sealed: Sealed) -> None:
    url, agent = sealed.bureau.url, sealed.agent
    ran = await check("report", url, agent)
    assert ran.status == 0, ran.out
    assert "bureau-check report: OK" in ran.out and "NOT pinned" in ran.out
    assert "is the last leaf of that tree" in ran.out
    ran = await check("report", url, agent, "--bureau-key", kid(sealed.bureau.signing_key),
                      "--json")
    assert ran.status == 0, ran.out
    doc = ran.json()
    assert doc["ok"] and doc["trust"]["pinned"] and doc["agent"] == agent
    ran = await check("report", url, agent, "--vkey", sealed.bureau.log_key.vkey)
    assert ran.status == 0 and "pinned (--vkey)" in ran.out, ran.out


async def test_one_changed_byte_is_caught(sealed: Sealed, tmp_path: Path) -> None:
    url, agent = sealed.bureau.url, sealed.agent
    async with sealed.bureau.session.get(f"{url}/v1/agents/{agent}/report") as resp:
        envelope = await resp.read()
    good = tmp_path / "report.json"
    good.write_bytes(envelope)
    assert (await check("report", url, agent, "--envelope", str(good))).status == 0
    doc = json.loads(envelope)
    payload = bytearray(base64.b64decode(doc["payload"]))
    payload[payload.index(b'"epoch":') + 8] ^= 1  # one bit of one byte of the payload
    doc["payload"] = base64.b64encode(bytes(payload)).decode()
    bad = tmp_path / "changed.json"
    bad.write_text(json.dumps(doc))
    ran = await check("report", url, agent, "--envelope", str(bad))
    assert ran.status == 1, ran.out
    assert "FAILED" in ran.out and "BAD_SIGNATURE" in ran.out
    raw = bytearray(envelope)
    raw[raw.index(b'"sig":"') + 10] ^= 1  # one byte of the signature's text
    bad.write_bytes(bytes(raw))
    ran = await check("report", url, agent, "--envelope", str(bad), "--json")
    assert ran.status == 1 and ran.json()["result"] == "failed", ran.out


async def test_a_wrong_key_is_caught(sealed: Sealed) -> None:
    url, agent = sealed.bureau.url, sealed.agent
    other = wire.generate_key()
    ran = await check("report", url, agent, "--bureau-key", kid(other))
    assert ran.status == 1, ran.out
    assert f"without the pinned key {kid(other)}" in ran.out
    imposter = sealed.bureau.log_key.__class__.of(sealed.bureau.log_key.origin, other)
    ran = await check("report", url, agent, "--vkey", imposter.vkey)
    assert ran.status == 1, ran.out
    assert f"without the pinned key {imposter.vkey}" in ran.out
    ran = await check("inclusion", url, (await entry_ids(sealed.bureau.database_url))[0],
                      "--vkey", imposter.vkey)
    assert ran.status == 1 and "without the pinned key" in ran.out, ran.out


async def test_the_agent_checks_its_report_against_its_own_file(sealed: Sealed) -> None:
    ran = await check("file", sealed.bureau.url, "--key", str(sealed.agent_key_file), "--json")
    assert ran.status == 0, ran.out
    doc = ran.json()
    assert doc["file"]["root"] == doc["evidence"]["root"]
    assert doc["file"]["up_to_seal"] == 5  # its enrollment, three facts, one as caller


async def test_an_evidence_root_that_is_not_the_agents_file_is_caught(sealed: Sealed) -> None:
    """The bureau signs a report whose evidence root is not that of the file it shows
    the agent (re-signed here with the bureau's own key, as a lying bureau would)."""
    bureau, agent = sealed.bureau, sealed.agent
    conn = await asyncpg.connect(bureau.database_url)
    try:
        row = await conn.fetchrow("SELECT epoch, envelope FROM reports WHERE agent = $1"
                                  " ORDER BY epoch DESC LIMIT 1", agent)
        payload = json.loads(base64.b64decode(json.loads(row["envelope"])["payload"]))
        payload["evidence"]["root"] = leaf_hash(b"a file with one entry less").hex()
        forged = wire.sign_envelope_bytes(bureau.signing_key, wire.payload_type("report"),
                                          wire.canonical_json(payload))
        await conn.execute("UPDATE reports SET envelope = $1 WHERE agent = $2 AND epoch = $3",
                           forged, agent, row["epoch"])
    finally:
        await conn.close()
    assert (await check("report", bureau.url, agent)).status == 0  # signed, so it passes...
    ran = await check("file", bureau.url, "--key", str(sealed.agent_key_file))
    assert ran.status == 1, ran.out  # ...until the agent holds it against its file
    assert "is not the root" in ran.out and "of the 5 entries" in ran.out


async def test_inclusion_and_consistency_of_kept_notes(sealed: Sealed, tmp_path: Path) -> None:
    bureau = sealed.bureau
    await bureau.app[PUBLISHER].tick()
    _, _, old_note = await get_text(bureau, "/checkpoint")
    old_file = tmp_path / "old.note"
    old_file.write_text(old_note)
    await sealed.world.fact(await sealed.world.agent("gamma"))
    await bureau.app[PUBLISHER].tick()
    _, _, new_note = await get_text(bureau, "/checkpoint")
    new_file = tmp_path / "new.note"
    new_file.write_text(new_note)
    ids = await entry_ids(bureau.database_url)
    ran = await check("inclusion", bureau.url, ids[2], "--note", str(old_file))
    assert ran.status == 0 and "is leaf 2 (seq 3)" in ran.out, ran.out
    ran = await check("inclusion", bureau.url, ids[-1])
    assert ran.status == 0, ran.out
    ran = await check("consistency", bureau.url, str(old_file), str(new_file))
    assert ran.status == 0 and "is a prefix of" in ran.out, ran.out
    ran = await check("inclusion", bureau.url, "ab" * 32)
    assert ran.status == 2 and "NOT_FOUND" in ran.out, ran.out
    # a note of another history, signed with the bureau's key: two histories
    forked = sign_checkpoint_note(Checkpoint(bureau.log_key.origin, 2, leaf_hash(b"fork")),
                             bureau.log_key.signer)
    fork_file = tmp_path / "fork.note"
    fork_file.write_text(forked)
    ran = await check("consistency", bureau.url, str(fork_file), str(new_file))
    assert ran.status == 1 and "two histories" in ran.out, ran.out


# --------------------------------------------------------------------------- monitoring


@dataclass
class Double:
    """A bureau that shows another head: the real /v1/bureau, a note of our choosing
    signed with the real key, and proofs of our choosing."""

    note: str = ""
    proof: list[str] | None = None
    info: bytes = b""


@pytest.fixture
async def double() -> AsyncIterator[tuple[Double, str]]:
    state = Double()

    async def info(request: web.Request) -> web.Response:
        return web.Response(body=state.info, content_type="application/json")

    async def checkpoint(request: web.Request) -> web.Response:
        return web.Response(text=state.note, content_type="text/plain")

    async def consistency(request: web.Request) -> web.Response:
        return web.json_response({"from": int(request.query["from"]),
                                  "to": int(request.query["to"]), "hashes": state.proof})

    app = web.Application()
    app.router.add_get("/v1/bureau", info)
    app.router.add_get("/checkpoint", checkpoint)
    app.router.add_get("/v1/proofs/consistency", consistency)
    async with serving(app) as url:
        yield state, url


async def test_monitor_follows_a_growing_log(sealed: Sealed, tmp_path: Path) -> None:
    bureau, state = sealed.bureau, tmp_path / "monitor.json"
    await bureau.app[PUBLISHER].tick()
    ran = await check("monitor", bureau.url, "--state", str(state), "--once")
    assert ran.status == 0 and "first head seen" in ran.out, ran.out
    first = json.loads(state.read_text())["size"]
    for name in ("gamma", "delta"):
        await sealed.world.agent(name)
    await bureau.app[PUBLISHER].tick()
    ran = await check("monitor", bureau.url, "--state", str(state), "--count", "2",
                      "--interval", "0.01", "--json")
    assert ran.status == 0, ran.out
    lines = [json.loads(line) for line in ran.out.splitlines()]
    assert [doc["size"] for doc in lines] == [first + 2, first + 2]
    assert "consistent" in lines[0]["steps"][0] and "no new head" in lines[1]["steps"][0]


@pytest.mark.parametrize("how", ["rewound", "same size, other root", "no proof"])
async def test_monitor_catches_a_bureau_that_rewinds(sealed: Sealed, tmp_path: Path,
                                                     double: tuple[Double, str],
                                                     how: str) -> None:
    bureau, state = sealed.bureau, tmp_path / "monitor.json"
    fake, fake_url = double
    await bureau.app[PUBLISHER].tick()
    ran = await check("monitor", bureau.url, "--state", str(state), "--once",
                      "--vkey", bureau.log_key.vkey)
    assert ran.status == 0, ran.out
    kept = json.loads(state.read_text())
    async with bureau.session.get(bureau.url + "/v1/bureau") as resp:
        fake.info = await resp.read()
    size = {"rewound": kept["size"] - 2, "same size, other root": kept["size"],
            "no proof": kept["size"] + 3}[how]
    fake.note = sign_checkpoint_note(Checkpoint(bureau.log_key.origin, size,
                                           leaf_hash(b"another history")),
                                bureau.log_key.signer)
    fake.proof = [leaf_hash(b"junk").hex()]
    ran = await check("monitor", fake_url, "--state", str(state), "--once",
                      "--vkey", bureau.log_key.vkey)
    assert ran.status == 1, ran.out
    assert "INCONSISTENT" in ran.out
    assert {"rewound": "rewound its tree", "same size, other root": "two roots at size",
            "no proof": "does not extend"}[how] in ran.out
    assert json.loads(state.read_text()) == kept  # the state did not move
    evidence = json.loads((tmp_path / "monitor.json.evidence.json").read_text())
    assert evidence["earlier"] == kept["note"] and evidence["later"] == fake.note


async def test_a_witness_threshold_the_notes_do_not_meet_is_caught(sealed: Sealed) -> None:
    """No witness cosigned this bureau's heads: a reader who demands one is told so."""
    vkey = TestWitness("witness.test/w", wire.generate_key(), {}).vkey
    ran = await check("report", sealed.bureau.url, sealed.agent, "--witness", vkey,
                      "--threshold", "1")
    assert ran.status == 1 and "TOO_FEW_COSIGNATURES" in ran.out, ran.out
    ran = await check("report", sealed.bureau.url, sealed.agent, "--threshold", "1")
    assert ran.status == 2 and "needs as many --witness keys" in ran.out, ran.out
