"""Regenerate tests/vectors/*.json, the known-answer vectors of the wire format, and
tests/vectors/probing/batches.json, those of the probe task generator.

Ed25519 is deterministic, so a fixed seed and payload give fixed PAE bytes, signature,
content key and entry id; the task generator is a pure function of its seed and epoch.
Run by hand only when the wire format changes on purpose (the generator never changes:
a new one is a new version, with vectors of its own):

    python ops/make_vectors.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import blake3

from reporters import wire
from reporters.probing import GENERATOR, batch
from reporters.probing.tasks import batch_bytes

OUT = Path(__file__).resolve().parent.parent / "tests" / "vectors"

CASES: list[dict[str, Any]] = [
    {"name": "fact", "seed": "01" * 32, "payload_name": "fact", "payload": {
        "interaction": "gw-7f3a:000917",
        "subject": "ed25519:A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg",
        "caller": None, "observed_at": "2026-11-29T23:00:00Z", "answered": True,
        "latency_ms": 840, "well_formed": True,
        "promises": [{"promise": "p95-under-2s", "kept": True}],
        "claimed": "SUCCESS", "check": "PASS", "derived": None, "engagement": None}},
    {"name": "enrollment-unicode", "seed": "02" * 32, "payload_name": "enrollment",
     "payload": {"name": "Zoë — 翻訳エージェント 🦉", "operator": "Ünïcode GmbH",
                 "anchor": {"kind": "domain", "value": "example.org"}, "promises": []}},
    {"name": "report-floats", "seed": "03" * 32, "payload_name": "report",
     "payload": {"score": {"value": 0.833333, "low": 0.000001, "high": 1.0, "weight": 12.5},
                 "share": 1e-7, "big": 1e21, "neg": -0.5}},
]


def vector(case: dict[str, Any]) -> dict[str, Any]:
    key = wire.signing_key_from_seed(bytes.fromhex(case["seed"]))
    body = wire.canonical_json(case["payload"])
    ptype = wire.payload_type(case["payload_name"])
    env = wire.sign_envelope(key, ptype, body)
    entry = {"seq": 1, "prev": wire.ZERO_ID, "kind": case["payload_name"],
             "recorded_at": "2026-11-30T00:00:00.000000Z", "epoch": 82620, "envelope": env}
    return {
        **case,
        "key_id": wire.signing_key_id(key),
        "pem": wire.key_to_pem(key),
        "payload_type": ptype,
        "canonical_payload": body.decode("utf-8"),
        "pae_hex": wire.pae(ptype, body).hex(),
        "signature_b64": env["signatures"][0]["sig"],
        "content_key": wire.content_key(wire.signing_key_id(key), ptype, body),
        "entry": entry,
        "entry_id": wire.entry_id(entry),
    }


#: (seed, epoch, size): the probe batches pinned.
PROBE_CASES: list[tuple[bytes, int, int]] = [
    (bytes(32), 0, 10),
    (bytes.fromhex("a5" * 32), 82620, 25),
    (b"bureau-simulate", 4, 5),
    (bytes(range(64)), 2**40, 10),
]


def probe_vectors() -> dict[str, Any]:
    return {"generator": GENERATOR, "cases": [
        {"seed": seed.hex(), "epoch": epoch, "size": size,
         "blake3": blake3.blake3(batch_bytes(epoch, seed, size)).hexdigest(),
         "tasks": [t.to_json() for t in batch(epoch, seed, size)]}
        for seed, epoch, size in PROBE_CASES]}


def main() -> None:
    (OUT / "probing").mkdir(parents=True, exist_ok=True)
    probes = OUT / "probing" / "batches.json"
    probes.write_text(json.dumps(probe_vectors(), indent=2, ensure_ascii=True) + "\n")
    print(f"wrote {probes}")
    for case in CASES:
        path = OUT / f"{case['name']}.json"
        path.write_text(json.dumps(vector(case), indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
