"""``bureau-check settlement`` against a live bureau over real HTTP, as a separate
process: a good settlement and an evaluator's own share verify; a wrong key, a row the
bureau changed after signing, and an epoch without a pool are each caught with a clear
message and a non-zero exit status."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import asyncpg
import pytest

from bureau.intake.clock import epoch_of
from reporters import wire
from tests.client.test_check import check
from tests.support import BureauUnderTest, kid
from tests.views.support import EPOCH_SECONDS, World, next_epoch

pytestmark = pytest.mark.slow


async def _settled(bureau: BureauUnderTest, tmp_path: Path) -> tuple[int, Path, Path, Path]:
    """An epoch with a pool of 1000: one evaluator graded by probes after its verdicts,
    one that only copied a check. Returns the epoch and three key files (fair, copier,
    a key the bureau never saw)."""
    w = await World.make(bureau)
    seller, fair, copier = (await w.agent("seller"), await w.agent("fair"),
                            await w.agent("copier"))
    epoch = epoch_of(bureau.clock(), EPOCH_SECONDS)
    await bureau.accepted(bureau.admin, "pool", {"units": 1000, "from_epoch": epoch,
                                                 "issued_at": wire_issued()})
    for passed in (True, False, True):
        ia = await w.fact(seller, fair)
        await w.attest(fair, ia, seller, "ACCEPTED" if passed else "FAILED_DISCOVERED")
        await w.probe(seller, passed, ia)
    ia = await w.fact(seller, copier, check="PASS")
    await w.attest(copier, ia, seller, "ACCEPTED")
    await next_epoch(bureau)
    bureau.clock.offset = dt.timedelta(0)  # the checker signs its reads with real time
    files = []
    for name, key in (("fair", fair), ("copier", copier), ("never", wire.generate_key())):
        path = tmp_path / f"{name}.key"
        path.write_text(wire.key_to_pem(key))
        files.append(path)
    return epoch, files[0], files[1], files[2]


def wire_issued() -> str:
    from tests.support import issued

    return issued()


async def test_a_settlement_and_an_evaluators_share_verify(bureau: BureauUnderTest,
                                                           tmp_path: Path) -> None:
    epoch, fair, copier, never = await _settled(bureau, tmp_path)
    url = bureau.url
    ran = await check("settlement", url, str(epoch))
    assert ran.status == 0, ran.out
    assert "bureau-check settlement: OK" in ran.out
    assert "pool 1000, paid 1000 to 1 evaluators, unpaid 0" in ran.out
    ran = await check("settlement", url, str(epoch), "--key", str(fair), "--json",
                      "--bureau-key", kid(bureau.signing_key))
    assert ran.status == 0, ran.out
    doc = ran.json()
    assert doc["ok"] and doc["trust"]["pinned"] and doc["units"] == 1000
    assert doc["share"]["leaf_index"] == 0 and doc["settlement"]["evaluators"] == 1
    for nobody in (copier, never):
        ran = await check("settlement", url, str(epoch), "--key", str(nobody))
        assert ran.status == 0, ran.out
        assert "has no row: it earned nothing" in ran.out

    ran = await check("settlement", url, str(epoch), "--bureau-key",
                      kid(wire.generate_key()))
    assert ran.status == 1 and "without the pinned key" in ran.out, ran.out
    ran = await check("settlement", url, str(epoch + 1))  # no pool, nothing sealed
    assert ran.status == 2 and "CANNOT CHECK" in ran.out, ran.out

    # the bureau pays the evaluator one unit less than it signed for: its proof fails
    conn = await asyncpg.connect(bureau.database_url)
    try:
        row = await conn.fetchval("SELECT row FROM settlement_rows WHERE epoch = $1", epoch)
        await conn.execute("UPDATE settlement_rows SET row = $1 WHERE epoch = $2",
                           bytes(row).replace(b'"units":1000', b'"units":999'), epoch)
    finally:
        await conn.close()
    ran = await check("settlement", url, str(epoch), "--key", str(fair), "--json")
    assert ran.status == 1, ran.out
    assert ran.json()["result"] == "failed" and "BAD_PROOF" in ran.json()["error"]

    # a document signed by some other key than the bureau's
    conn = await asyncpg.connect(bureau.database_url)
    try:
        env = await conn.fetchval("SELECT envelope FROM settlements WHERE epoch = $1", epoch)
        payload = wire.b64decode_canonical(json.loads(env)["payload"])
        await conn.execute("UPDATE settlements SET envelope = $1 WHERE epoch = $2",
                           wire.sign_envelope_bytes(wire.generate_key(),
                                                    wire.payload_type("settlement"), payload),
                           epoch)
    finally:
        await conn.close()
    ran = await check("settlement", url, str(epoch))
    assert ran.status == 1 and "BAD_KEY" in ran.out, ran.out
