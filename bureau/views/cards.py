"""Card statements (SPEC §9.1 r4; reporters.portable): with each epoch's reports, the
report builder signs one statement per report — the subject, the epoch, the ledger
position, the policy, the score and the BLAKE3 of the report's payload — with the same
key, the one in force at the seal. A card is that statement and the log proof, put
together when it is read; the statement must be signed now, since a key rotated away
later can no longer sign for this epoch. Deterministic like the reports: any writer,
and ``bureau rebuild``, signs the same bytes. With report workers, each signs and
stores the statements of its own shard with its reports (bureau.views.shards).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import nacl.signing

from bureau.views.sign import sign_many
from reporters.portable import CARD_TYPE, card_statement, payload_of


def sign_statements(key: nacl.signing.SigningKey, payloads: Sequence[bytes],
                    pool: ThreadPoolExecutor | None = None) -> list[bytes]:
    """The signed card statement of each report, from its payload bytes, in order (a
    report worker's: it holds the payloads it signed)."""
    return sign_many(key, CARD_TYPE, [card_statement(p) for p in payloads], pool)


def sign_cards(key: nacl.signing.SigningKey, reports: Sequence[bytes],
               pool: ThreadPoolExecutor | None = None) -> list[bytes]:
    """The signed card statement of each stored report envelope, in order."""
    return sign_statements(key, [payload_of(r) for r in reports], pool)
