"""The bytes the bureau signs for readers (SPEC §8): report and checkpoint envelopes.

Payloads are canonical JSON; Ed25519 is deterministic; so any process signing the same
epoch writes the same bytes. Signing is spread over threads for big epochs (libsodium
releases the GIL).
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import nacl.signing

from reporters import wire

REPORT_TYPE = wire.payload_type("report")
CHECKPOINT_TYPE = wire.payload_type("checkpoint")

def _b64(data: bytes) -> bytes:
    return binascii.b2a_base64(data, newline=False)


def sign_payload_bytes(key: nacl.signing.SigningKey, kid: bytes, ptype: str,
                       body: bytes) -> bytes:
    """Canonical JSON of the DSSE envelope over ``body`` — the stored, served bytes.
    Equal to ``wire.canonical_json(wire.sign_envelope(key, ptype, body))`` (tested):
    every field is ASCII and the keys are already in sorted order."""
    sig = key.sign(wire.pae(ptype, body)).signature
    return (b'{"payload":"' + _b64(body) + b'","payloadType":"' + ptype.encode()
            + b'","signatures":[{"keyid":"' + kid + b'","sig":"' + _b64(sig) + b'"}]}')


def sign_many(key: nacl.signing.SigningKey, ptype: str, bodies: Sequence[bytes],
              pool: ThreadPoolExecutor | None = None) -> list[bytes]:
    """Sign ``bodies`` in order; libsodium releases the GIL, so threads use every core."""
    kid = wire.signing_key_id(key).encode()
    if pool is None or len(bodies) < 2000:
        return [sign_payload_bytes(key, kid, ptype, b) for b in bodies]
    step = -(-len(bodies) // 4)
    parts = pool.map(lambda i: [sign_payload_bytes(key, kid, ptype, b)
                                for b in bodies[i:i + step]], range(0, len(bodies), step))
    return [env for part in parts for env in part]


def checkpoint_payload(epoch: int, seq: int, head: str) -> dict[str, Any]:
    """SPEC §8. Seqs count from 1 with no gap, so ``entries`` (how many entries there
    are up to and including ``seq``) is ``seq`` itself."""
    return {"epoch": epoch, "seq": seq, "head": head, "entries": seq}


