"""``reporters``: the client library of the Agent Reputation Bureau.

Three parties, each built from its Ed25519 key and the bureau's base URL:

* :class:`Reporter` — a gateway. ``fact(...)``/``probe(...)`` build validated payloads;
  ``await send(payload)`` signs one and returns once the envelope is fsynced in a local
  spool; a background task delivers the spool in batches, retrying until the bureau
  answers, exactly once (the bureau dedupes by content). Rejections are final and land
  in ``rejections``.
* :class:`Agent` — enrolls, amends, withdraws, attests, judges value, disputes, and
  reads its own file (``entries``, ``pages``, ``explain``) with RFC 9421-signed
  requests. ``attest_when_witnessed`` retries ``UNWITNESSED`` (a fact still on its way)
  with a capped backoff until a deadline.
* :class:`Admin` — registers reporters, resolves disputes, seals epochs.

An agent's links to its identities elsewhere (ERC-8004, A2A, MCP) are built by
:mod:`reporters.identity_links` and given to ``Agent.enroll``, ``amend`` or ``set_links``.

Keys: :func:`generate_key`, :func:`save_key`, :func:`load_key` (PKCS#8 PEM files, as
``openssl genpkey -algorithm ed25519`` writes) and :func:`key_id`. Payload models live
in :mod:`reporters.models`; a file as read (:class:`FilePage`, :class:`Entry` with its
decoded payload, :class:`Refusal`) in :mod:`reporters.files`. :func:`verify_chain` and
:func:`verify_report` (and :func:`verify_checkpoint`, an epoch's signed checkpoint)
check what the bureau serves without trusting it; so do
:func:`verify_note` (a checkpoint note and its witness cosignatures),
:func:`verify_inclusion`, :func:`verify_consistency` (Merkle proofs against a
:class:`TreeHead` or a verified note: sizes are the caller's, never the answer's) and
:func:`evidence_root` (recompute a report's ``evidence.root`` from the agent's file);
:func:`verify_bundle` and :func:`verify_card` check a report's proof bundle and its
compact card (:mod:`reporters.portable`) with no network at all.
:class:`KeyHistory` is the bureau's key history (``/v1/bureau``): pass it instead of
one key and each signature is checked against the key in force where it stands.
:mod:`reporters.tlog` holds the transparency-log code they stand on.

Errors: everything raised is a :class:`BureauClientError` with ``code`` (the bureau's
§6 reason code, or a client code), ``path`` (a JSON Pointer), ``detail`` and ``status``
(the HTTP status, ``None`` when the client raised it): :class:`Rejected` (the bureau
refused; do not re-send), :class:`Unavailable` (503 or no answer; re-sending is safe),
:class:`VerificationError`.

Example (``example`` is run against a real bureau by the test suite)::

    import asyncio

    import reporters


    async def example(bureau_url: str, admin_key_file: str, spool_dir: str) -> None:
        # An admin registers a gateway's key as a reporter of facts.
        gateway_key = reporters.generate_key()
        async with reporters.Admin(reporters.load_key(admin_key_file), bureau_url) as admin:
            await admin.register_reporter(reporters.key_id(gateway_key), "gw-eu-1",
                                          "Gateway Co", ["facts"])

        # Two agents enroll: a caller, and the agent it calls.
        async with (reporters.Agent(reporters.generate_key(), bureau_url) as caller,
                    reporters.Agent(reporters.generate_key(), bureau_url) as worker):
            await caller.enroll("caller", "ops@caller.example", "Caller Inc")
            await worker.enroll("worker", "worker.example", "Worker Ltd",
                                {"p95-under-2s": "95% of answers within 2 s"})

            # The gateway reports what it saw. send() returns once the signed envelope
            # is fsynced in the spool; a background task delivers it exactly once.
            async with reporters.Reporter(gateway_key, bureau_url, spool_dir) as gateway:
                fact = gateway.fact("gw-eu-1:000001", worker.key_id, caller=caller.key_id,
                                    latency_ms=840, well_formed=True,
                                    promises={"p95-under-2s": True}, claimed="SUCCESS")
                await gateway.send(fact)
                await gateway.flush()  # wait until the bureau has answered
                assert not gateway.rejections

            # The caller, who was there, attests to the outcome.
            receipt = await caller.attest(gateway.key_id, "gw-eu-1:000001",
                                          worker.key_id, "ACCEPTED")
            print(receipt.status, receipt.seq)
            try:
                await caller.attest(gateway.key_id, "gw-eu-1:000001", worker.key_id,
                                    "FAILED_DISCOVERED")
            except reporters.Rejected as err:
                print(err.code, err.path)  # DUPLICATE_VERDICT: changing your mind buys nothing


    if __name__ == "__main__":
        asyncio.run(example("http://127.0.0.1:8080", ".bureau/admin.key", "./spool"))
"""

from __future__ import annotations

from reporters import files, identity_links, models
from reporters._internal.errors import (
    BureauClientError,
    Rejected,
    Unavailable,
    VerificationError,
)
from reporters._internal.keyhistory import BureauKey, KeyHistory
from reporters._internal.keys import generate_key, key_id, load_key, save_key
from reporters._internal.outcomes import Delivery, Rejection
from reporters._internal.parties import Admin, Agent, Receipt
from reporters._internal.portable import Carried, verify_bundle, verify_card
from reporters._internal.reporter import Reporter
from reporters._internal.settlement import verify_settlement, verify_share
from reporters._internal.transparency import (
    TreeHead,
    evidence_root,
    verify_consistency,
    verify_inclusion,
    verify_note,
)
from reporters._internal.verify import verify_chain, verify_checkpoint, verify_report
from reporters.files import Entry, FilePage, Refusal
from reporters.tlog.checkpoint import VerifiedCheckpoint

__all__ = [
    "Admin",
    "Agent",
    "BureauClientError",
    "BureauKey",
    "Carried",
    "Delivery",
    "Entry",
    "FilePage",
    "KeyHistory",
    "Receipt",
    "Refusal",
    "Rejected",
    "Rejection",
    "Reporter",
    "TreeHead",
    "Unavailable",
    "VerificationError",
    "VerifiedCheckpoint",
    "evidence_root",
    "files",
    "generate_key",
    "identity_links",
    "key_id",
    "load_key",
    "models",
    "save_key",
    "verify_bundle",
    "verify_card",
    "verify_chain",
    "verify_checkpoint",
    "verify_consistency",
    "verify_inclusion",
    "verify_note",
    "verify_report",
    "verify_settlement",
    "verify_share",
]
