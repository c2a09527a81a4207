"""GET /v1/bureau and GET /v1/policy: public, and consistent with each other."""

from __future__ import annotations

from bureau.http.shapes import BureauInfo
from bureau.scoring.policy import KNOWN_POLICIES, policy_bytes, policy_hash
from reporters import wire
from tests.support import BureauUnderTest, kid


async def test_bureau_names_its_key_policy_and_epoch(bureau: BureauUnderTest) -> None:
    async with bureau.session.get(bureau.url + "/v1/bureau") as resp:
        assert resp.status == 200
        body = await resp.json()
    BureauInfo.model_validate(body)
    assert body == {"key": kid(bureau.signing_key),
                    "policy": policy_hash(KNOWN_POLICIES["v2"]),  # a new ledger's default
                    "epoch_seconds": bureau.config.epoch_seconds}


async def test_policy_is_the_bytes_its_hash_names(bureau: BureauUnderTest) -> None:
    async with bureau.session.get(bureau.url + "/v1/policy") as resp:
        assert resp.status == 200
        assert resp.content_type == "application/json"
        raw = await resp.read()
    async with bureau.session.get(bureau.url + "/v1/bureau") as resp:
        info = await resp.json()
    assert raw == policy_bytes(KNOWN_POLICIES["v2"])
    assert wire.blake3_hex(raw) == info["policy"]
