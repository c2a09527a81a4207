"""GET /v1/bureau and GET /v1/policy: public, and consistent with each other."""

from __future__ import annotations

from bureau.http.shapes import BureauInfo
from bureau.scoring.policy import KNOWN_POLICIES, policy_bytes, policy_hash
from reporters import wire
from reporters.tlog.note import Verifier
from tests.support import BureauUnderTest, kid


async def test_bureau_names_its_key_policy_and_epoch(bureau: BureauUnderTest) -> None:
    async with bureau.session.get(bureau.url + "/v1/bureau") as resp:
        assert resp.status == 200
        body = await resp.json()
    BureauInfo.model_validate(body)
    public = bytes(bureau.signing_key.verify_key)
    origin = "bureau-" + wire.blake3_hex(public)[:16]  # SPEC §10's default origin
    vkey = Verifier(origin, 0x01, public).vkey  # the bureau's key as a note verifier
    assert body == {"key": kid(bureau.signing_key),
                    "policy": policy_hash(KNOWN_POLICIES["v4"]),  # a new ledger's default
                    "epoch_seconds": bureau.config.epoch_seconds, "origin": origin,
                    "vkey": vkey, "keys": [{"key": kid(bureau.signing_key), "vkey": vkey,
                                            "from_seq": 1}],
                    "admins": [kid(bureau.admin)],
                    "eth_address": None}  # no BUREAU_ETH_ADDRESS here


async def test_policy_is_the_bytes_its_hash_names(bureau: BureauUnderTest) -> None:
    async with bureau.session.get(bureau.url + "/v1/policy") as resp:
        assert resp.status == 200
        assert resp.content_type == "application/json"
        raw = await resp.read()
    async with bureau.session.get(bureau.url + "/v1/bureau") as resp:
        info = await resp.json()
    assert raw == policy_bytes(KNOWN_POLICIES["v4"])
    assert wire.blake3_hex(raw) == info["policy"]
