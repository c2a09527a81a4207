"""ERC-8004 feedback from a sealed report (docs/interop.md, "ERC-8004").

For each ``erc8004`` link a report carries, up to three feedback files, one figure each,
as the ERC's tag examples suggest:

* ``bureauScore``: the score as a percentage, ``value`` = round(score × 10000) with
  ``valueDecimals`` 2 (0.8734 → 8734, read 87.34); none when the report has no score;
* ``reachable``: the answer rate, a percentage in the same form;
* ``responseTime``: the latency p50 in milliseconds, ``valueDecimals`` 0.

``tag2`` is the epoch (decimal), ``endpoint`` the agent's A2A card when it linked one.
Each file points at what makes it checkable: the signed report, the epoch's signed note,
and the inclusion proof of the report's ledger head in the tree of that note.

Beside each file: its bytes (canonical JSON), ``feedbackHash`` = keccak-256 of exactly
those bytes (``eth-hash``), ``confirmed`` (SPEC §9.1 r4: whether the bureau confirmed the
link from the token's side, bureau.interop.confirm) and — for a confirmed link, or for
any when the operator asks (``BUREAU_ERC8004_UNCONFIRMED_CALLDATA``) — the
``giveFeedback`` calldata (``eth-abi``) an operator sends to the Reputation Registry from
the bureau's account with any wallet tool. ``confirmed`` is beside the file, not in it:
the file's bytes are what ``feedbackHash`` fixes, served immutable, while a link may be
confirmed after its epoch. Pure:
the same report, link and configuration give the same bytes. Nothing here holds a key
or talks to a chain.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from eth_abi.abi import encode
from eth_hash.auto import keccak
from eth_utils.abi import function_signature_to_4byte_selector
from eth_utils.address import to_checksum_address

from bureau.report_text import epoch_start
from reporters import wire

GIVE_FEEDBACK = "giveFeedback(uint256,int128,uint8,string,string,string,string,bytes32)"
GIVE_FEEDBACK_TYPES = ("uint256", "int128", "uint8", "string", "string", "string", "string",
                       "bytes32")
SCORE_TAG, REACHABLE_TAG, RESPONSE_TIME_TAG = "bureauScore", "reachable", "responseTime"
TAGS = (SCORE_TAG, REACHABLE_TAG, RESPONSE_TIME_TAG)
#: The ERC-8004 v2.0.0 deployments (erc-8004/erc-8004-contracts README): each Identity
#: Registry address with the Reputation Registry deployed beside it, the same on every
#: mainnet and on every testnet. Feedback for another Identity Registry names no ``to``:
#: the operator finds the Reputation Registry whose getIdentityRegistry() is it.
REPUTATION_REGISTRIES = {
    "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432": "0x8004BAa17C55a88189AE136b182e5fdA19dE9b63",
    "0x8004A818BFB912233c491871b3d84c89A494BD9e": "0x8004B663056A597Dffe9eCcC1965A193B7388713",
}
#: the largest ``value`` the ERC's contracts accept (MAX_ABS_VALUE, 1e38)
MAX_ABS_VALUE = 10**38
_UINT256_MAX = 2**256 - 1
_SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True, slots=True)
class Bureau:
    """What the files name of the bureau: its public URL and its Ethereum address."""

    url: str
    eth_address: str


@dataclass(frozen=True, slots=True)
class Feedback:
    """One feedback file and what goes on chain with it."""

    tag1: str
    registry: str  # eip155:<chain>:<identity registry>
    agent_id: str
    file: dict[str, Any]
    body: bytes  # the file's bytes, as served at ``uri``
    uri: str

    @property
    def feedback_hash(self) -> bytes:
        return bytes(keccak(self.body))

    @property
    def chain_id(self) -> int:
        return int(self.registry.split(":")[1])

    @property
    def reputation_registry(self) -> str | None:
        identity = to_checksum_address(self.registry.split(":")[2])
        return REPUTATION_REGISTRIES.get(identity)

    def calldata(self) -> bytes | None:
        """``giveFeedback(...)`` ABI-encoded, selector first; None when the agent id does
        not fit a uint256 (a link's form allows 78 digits, which can exceed it)."""
        agent_id = int(self.agent_id)
        if agent_id > _UINT256_MAX:
            return None
        f = self.file
        args = (agent_id, f["value"], f["valueDecimals"], f["tag1"], f["tag2"],
                f.get("endpoint", ""), self.uri, self.feedback_hash)
        return bytes(function_signature_to_4byte_selector(GIVE_FEEDBACK)) + encode(
            list(GIVE_FEEDBACK_TYPES), list(args))

    def as_json(self, confirmed: bool = False, offer: bool = False) -> dict[str, Any]:
        """The feedback as the export shows it. ``confirmed``: the bureau confirmed the
        link from the token's side (bureau.interop.confirm); the calldata is given only
        then, or when the operator asks for it anyway (``offer``)."""
        calldata = self.calldata() if confirmed or offer else None
        return {
            "tag1": self.tag1, "confirmed": confirmed, "file": self.file,
            "feedbackURI": self.uri, "feedbackHash": "0x" + self.feedback_hash.hex(),
            "transaction": {
                "chainId": self.chain_id, "to": self.reputation_registry,
                "from": self.file["clientAddress"].split(":")[2],
                "function": GIVE_FEEDBACK,
                "data": None if calldata is None else "0x" + calldata.hex()},
        }


def percent(rate: float) -> int:
    """A share in [0, 1] as a percentage with two decimals, as an integer (0.87345 →
    8734 or 8735, half to even on the decimal written)."""
    return int(Decimal(repr(rate)).scaleb(4).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def figures(report: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """``(tag1, value, valueDecimals)`` of each figure the report has."""
    out = []
    score = report.get("score")
    if isinstance(score, Mapping) and score.get("value") is not None:
        out.append((SCORE_TAG, percent(score["value"]), 2))
    reliability = report.get("reliability") or {}
    if reliability.get("answer_rate") is not None:
        out.append((REACHABLE_TAG, percent(reliability["answer_rate"]), 2))
    p50 = (reliability.get("latency_ms") or {}).get("p50")
    if p50 is not None:
        out.append((RESPONSE_TIME_TAG, int(p50), 0))
    return out


#: a feedback file's name: ``<agent>.<epoch>.<registry>.<agent id>.<tag>.json`` (one path
#: segment: every part has a fixed form, and none holds a dot but the separators)
FILE_NAME = re.compile(r"(ed25519:[A-Za-z0-9_-]{43})\.(0|[1-9][0-9]{0,17})\."
                       r"(eip155:[1-9][0-9]{0,31}:0x[0-9a-fA-F]{40})\.(0|[1-9][0-9]{0,77})\."
                       r"(bureauScore|reachable|responseTime)\.json")


def file_name(agent: str, epoch: int, registry: str, agent_id: str, tag1: str) -> str:
    return f"{agent}.{epoch}.{registry}.{agent_id}.{tag1}.json"


def feedback_files(report: Mapping[str, Any], bureau: Bureau,
                   epoch_seconds: int) -> list[Feedback]:
    """Every feedback file of this report: for each ``erc8004`` link, each figure."""
    agent, epoch = report["agent"], report["epoch"]
    seq, head = report["ledger"]["seq"], report["ledger"]["head"]
    links = report.get("links") or []
    endpoint = next((link["card"] for link in links if link.get("kind") == "a2a"), None)
    created = epoch_start(epoch + 1, epoch_seconds).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = []
    for link in links:
        if link.get("kind") != "erc8004":
            continue
        registry, agent_id = link["registry"], link["agent_id"]
        chain = registry.split(":")[1]
        for tag1, value, decimals in figures(report):
            uri = f"{bureau.url}/v1/erc8004/{file_name(agent, epoch, registry, agent_id, tag1)}"
            file: dict[str, Any] = {
                "agentRegistry": registry,
                # a number, as the ERC's example writes it, while JSON numbers hold it
                # exactly; past 2^53 - 1 it is written as decimal text
                "agentId": int(agent_id) if int(agent_id) <= _SAFE_INTEGER else agent_id,
                "clientAddress": f"eip155:{chain}:{bureau.eth_address}",
                "createdAt": created,
                "value": value, "valueDecimals": decimals,
                "tag1": tag1, "tag2": str(epoch),
                "bureau": {
                    "agent": agent, "epoch": epoch, "policy": report.get("policy"),
                    "ledger": {"seq": seq, "head": head},
                    "report": f"{bureau.url}/v1/agents/{agent}/report?epoch={epoch}",
                    "note": f"{bureau.url}/v1/checkpoints/{epoch}/note",
                    "inclusion": f"{bureau.url}/v1/proofs/inclusion?id={head}&size={seq}",
                },
            }
            if endpoint is not None:
                file["endpoint"] = endpoint
            out.append(Feedback(tag1, registry, agent_id, file, wire.canonical_json(file),
                                uri))
    return out


@dataclass(frozen=True, slots=True)
class Offer:
    """Which links are confirmed (registry, agent id), and whether calldata is offered
    for the others too (``BUREAU_ERC8004_UNCONFIRMED_CALLDATA``)."""

    confirmed: frozenset[tuple[str, str]] = frozenset()
    unconfirmed_calldata: bool = False

    def as_json(self, feedback: Feedback) -> dict[str, Any]:
        # registries are recorded in lower case: an address's case is only its checksum
        confirmed = (feedback.registry.lower(), feedback.agent_id) in self.confirmed
        return feedback.as_json(confirmed, self.unconfirmed_calldata)


def feedback_document(report: Mapping[str, Any], bureau: Bureau, epoch_seconds: int,
                      offer: Offer) -> dict[str, Any]:
    """What ``GET /v1/agents/{agent}/erc8004`` serves: every feedback of the report,
    each saying whether its link is confirmed (SPEC §9.1 r4)."""
    return {"agent": report["agent"], "epoch": report["epoch"],
            "clientAddress": bureau.eth_address,
            "feedback": [offer.as_json(f)
                         for f in feedback_files(report, bureau, epoch_seconds)]}
