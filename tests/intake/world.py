"""A small world of parties, and a valid payload of every kind signed by its rightful
signer: the starting points of the hostile-input tests (issue 12).

:class:`Parties` made with :func:`offline_parties` hold fresh keys only (enough for the
decode stage, which judges nothing but the bytes); made with :func:`live_parties` on a
running bureau, they are registered and enrolled, and hold a fact, an engagement and a
dispute, so that each template is admitted (or refused by a rule, never unattributed).
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any

import nacl.signing

from bureau.scoring.policy import policy_hash
from reporters import wire
from tests.agents.support import (
    engagement,
    enroll,
    interaction_id,
    value_judgment,
    witness,
)
from tests.support import BureauUnderTest, fact_payload, issued, kid, now_text, registration

Key = nacl.signing.SigningKey


@dataclass
class Parties:
    admin: Key
    reporter: Key
    seller: Key  # an enrolled agent the evidence is about
    buyer: Key  # an enrolled agent that called the seller
    leaver: Key  # an enrolled agent whose withdrawal template withdraws it
    interaction: str  # the reporter's fact: seller served buyer
    engagement: str  # the reporter's T&M engagement: seller for buyer
    fact_entry: str  # the entry id of a fact about the seller
    dispute_entry: str  # the entry id of the seller's dispute of it
    epoch: int = 0
    #: the bureau's key id in force (a ``keys`` template keeps it, and the admin)
    bureau_key: str = ""


def offline_parties() -> Parties:
    keys = [wire.generate_key() for _ in range(5)]
    return Parties(*keys, interaction="ia-1", engagement="eng-1", fact_entry="a" * 64,
                   dispute_entry="b" * 64)


async def live_parties(bureau: BureauUnderTest) -> Parties:
    """Parties registered and enrolled on ``bureau``, with evidence to refer to."""
    reporter = await bureau.reporter()
    seller, buyer, leaver = (await enroll(bureau), await enroll(bureau),
                             await enroll(bureau))
    ia = await witness(bureau, reporter, seller, buyer)
    eng = "eng-" + secrets.token_hex(4)
    fact = await bureau.accepted(reporter, "fact", fact_payload(
        interaction_id(), kid(seller), kid(buyer), engagement=engagement(eng)))
    dispute = await bureau.accepted(seller, "dispute", {"entry": fact["id"],
                                                        "reason": "not what happened"})
    epoch = int(bureau.clock().timestamp()) // bureau.config.epoch_seconds
    return Parties(bureau.admin, reporter, seller, buyer, leaver, ia, eng, fact["id"],
                   dispute["id"], epoch, kid(bureau.signing_key))


def template(p: Parties, name: str) -> tuple[Key, dict[str, Any]]:
    """A valid payload of kind ``name`` and the key that may sign it. Fresh identifiers
    and ``issued_at`` each call, so that two templates are never the same submission."""
    tag = secrets.token_hex(4)
    payloads: dict[str, tuple[Key, dict[str, Any]]] = {
        "reporter": (p.admin, registration(wire.generate_key(), ["facts", "probes"],
                                           name=f"gw {tag}", distrusted_from=None)),
        "fact": (p.reporter, fact_payload(interaction_id(), kid(p.seller), kid(p.buyer),
                                          promises=[{"promise": "p95", "kept": True}],
                                          engagement=engagement("eng-" + tag))),
        "probe": (p.reporter, {"interaction": interaction_id(), "subject": kid(p.seller),
                               "probe": "probe-1", "passed": True,
                               "observed_at": now_text()}),
        "enrollment": (wire.generate_key(), {
            "name": f"agent {tag}", "anchor": {"kind": "domain", "value": f"{tag}.example"},
            "operator": f"operator {tag}",
            "promises": [{"promise": "p95", "description": "answers fast"}]}),
        "amendment": (p.seller, {"issued_at": issued(), "name": f"seller {tag}",
                                 "anchor": {"kind": "email", "value": f"ops@{tag}.example"}}),
        "withdrawal": (p.leaver, {"reason": f"closing down {tag}"}),
        "attestation": (p.buyer, {"reporter": kid(p.reporter), "interaction": p.interaction,
                                  "subject": kid(p.seller), "outcome": "FAILED_ADMITTED",
                                  "corrections": 0}),
        "value-judgment": (p.buyer, value_judgment(p.reporter, p.engagement, p.seller,
                                                   judgment="VALUE_POOR")),
        "dispute": (p.seller, {"entry": p.fact_entry, "reason": f"not me {tag}"}),
        "resolution": (p.admin, {"dispute": p.dispute_entry, "decision": "UPHELD",
                                 "reason": f"the log shows it {tag}"}),
        "seal": (p.admin, {"requested_at": dt.datetime.now(dt.UTC).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ")}),
        "policy": (p.admin, {"policy": policy_hash(), "from_epoch": p.epoch + 1,
                             "issued_at": issued()}),
        "pool": (p.admin, {"units": 1000, "from_epoch": p.epoch + 1, "issued_at": issued()}),
        "keys": (p.admin, {"bureau": p.bureau_key or kid(p.reporter),
                           "admins": [kid(p.admin)], "issued_at": issued()}),
    }
    return payloads[name]
