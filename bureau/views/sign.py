"""The bytes the bureau signs for readers (SPEC §8): report and checkpoint envelopes.

Payloads are canonical JSON; Ed25519 is deterministic; so any process signing the same
epoch writes the same bytes. Signing is spread over threads for big epochs (libsodium
releases the GIL).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import nacl.signing

from reporters import wire

REPORT_TYPE = wire.payload_type("report")
CHECKPOINT_TYPE = wire.payload_type("checkpoint")


def sign_many(key: nacl.signing.SigningKey, ptype: str, bodies: Sequence[bytes],
              pool: ThreadPoolExecutor | None = None) -> list[bytes]:
    """Each body's signed envelope, as the canonical bytes that are stored and served
    (:func:`reporters.wire.sign_envelope_bytes`), in order. libsodium releases the GIL,
    so with a ``pool`` big epochs are signed on every core."""
    kid = wire.signing_key_id(key)

    def sign(chunk: Sequence[bytes]) -> list[bytes]:
        return [wire.sign_envelope_bytes(key, ptype, b, key_id=kid) for b in chunk]

    if pool is None or len(bodies) < 2000:
        return sign(bodies)
    step = -(-len(bodies) // 4)
    parts = pool.map(sign, [bodies[i:i + step] for i in range(0, len(bodies), step)])
    return [env for part in parts for env in part]


def checkpoint_payload(epoch: int, seq: int, head: str, root: bytes) -> dict[str, Any]:
    """SPEC §8. Seqs count from 1 with no gap, so ``entries`` (how many entries there
    are up to and including ``seq``) is ``seq`` itself; ``root`` is the Merkle tree head
    at that size (SPEC §8.1), in lowercase hex."""
    return {"epoch": epoch, "seq": seq, "head": head, "entries": seq, "root": root.hex()}


def sign_checkpoint_envelope(key: nacl.signing.SigningKey, epoch: int, seq: int,
                             head: str, root: bytes) -> bytes:
    """The signed (DSSE) JSON checkpoint envelope of an epoch sealed at entry ``seq`` (id ``head``),
    whose tree has root ``root`` at that size."""
    body = wire.canonical_json_fast(checkpoint_payload(epoch, seq, head, root))
    return wire.sign_envelope_bytes(key, CHECKPOINT_TYPE, body)
