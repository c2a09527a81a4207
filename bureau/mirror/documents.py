"""The documents of a mirror (paths: reporters.layout): each sealed epoch's checkpoint,
note and settlement; each agent's report, proof bundle and card of that epoch and, for
the latest epoch, at the paths of the latest; the agents' pages and the home page;
``/v1/bureau`` and the policies. The bytes are the routes' own: the stored envelopes,
:mod:`bureau.reads.portable`'s bundles and cards, :mod:`bureau.http.pages`' HTML.

An epoch's agents are read :data:`PAGE` at a time (bureau.storage.cards): memory stays
bounded however many agents an epoch reports on."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from bureau import ledger_keys
from bureau.http.home import Listing, index_page
from bureau.http.pages import PageSite, agent_page, payload_of
from bureau.http.settlement_page import SHOWN, settlements_section
from bureau.mirror.files import MirrorDir, Writes
from bureau.reads.portable import EpochProof
from bureau.reads.published import bureau_document
from bureau.reads.ranking import Ranking
from bureau.scoring.policy import KNOWN_POLICIES, policy_bytes, policy_hash
from bureau.storage import cards, db, heads, reports
from bureau.storage.reports import Seal
from bureau.storage.settlement import published_settlements, settlement_envelope
from reporters import layout, wire

#: agents read a page at a time
PAGE = 2000


@dataclass(frozen=True)
class Site:
    """What the documents say of the bureau beside the ledger: its log's origin, the
    epoch length, and the public URL and Ethereum address it is configured with."""

    origin: str
    epoch_seconds: int
    public_url: str | None
    eth_address: str | None


async def write_epoch_records(conn: db.Connection, mirror: MirrorDir, seal: Seal) -> None:
    """The epoch's signed checkpoint, its note and its settlement (when it had a pool)."""
    checkpoint = await reports.checkpoint_envelope(conn, seal.epoch)
    note = await heads.epoch_note(conn, seal.epoch)
    assert checkpoint is not None and note is not None, "a published epoch"
    writes = mirror.batch()
    writes.write(layout.checkpoint(seal.epoch), checkpoint)
    writes.write(layout.epoch_note(seal.epoch), note.encode())
    settlement = await settlement_envelope(conn, seal.epoch)
    if settlement is not None:
        writes.write(layout.settlement(seal.epoch), settlement)
    await writes.done()


@dataclass(frozen=True)
class AgentWrites:
    """Which of an agent's files a pass writes, and when it runs."""

    #: the report too, not only the proof and card (whose log proof can improve later)
    reports: bool
    #: the paths of the latest as well, and the agent's page
    latest: bool
    #: the pass's clock reading: what the agent's page is made at
    now: dt.datetime


async def write_agents(conn: db.Connection, mirror: MirrorDir, shared: EpochProof,
                       site: Site, what: AgentWrites) -> int:
    """Every agent's files of ``shared``'s epoch; how many agents."""
    epoch, after, count = shared.seal.epoch, "", 0
    page_site = PageSite(await ledger_keys.key_at(conn, shared.seal.last_seq) or "",
                         site.epoch_seconds, site.public_url, what.now)
    while page := await cards.epoch_documents(conn, epoch, after, PAGE):
        # the files first, then the links to them: a link never points at nothing
        writes, links = mirror.batch(), mirror.batch()
        for doc in page:
            files = {"proof": shared.bundle(doc.report)}
            if doc.card is not None:
                files["card"] = shared.card_bytes(doc.card)
            if what.reports:
                files["report"] = doc.report
            for name, data in files.items():
                kept = layout.agent_read(doc.agent, name, epoch)
                writes.write(kept, data)
                if what.latest:
                    _link(links, layout.agent_read(doc.agent, name), kept)
            if what.latest and what.reports:
                pretty = json.dumps(json.loads(doc.report), indent=2).encode()
                kept = layout.agent_page_of(doc.agent, epoch)
                writes.write(kept, agent_page(payload_of(doc.report), pretty,
                                              page_site).encode())
                _link(links, layout.agent_page(doc.agent), kept)
        await writes.done()
        await links.done()
        count += len(page)
        after = page[-1].agent
    return count


def _link(writes: Writes, rel: str, target: str) -> None:
    writes.link(rel, layout.latest_link(rel, target))


async def write_bureau(conn: db.Connection, mirror: MirrorDir, site: Site,
                       now: dt.datetime, *, home: bool) -> None:
    """``/v1/bureau`` and the current policy when they changed (a key rotated, another
    epoch's policy), every policy the bureau knows once, and with ``home`` the home page
    (the first page of the ranked list, without a search): after a new epoch."""
    doc = await bureau_document(conn, origin=site.origin, epoch_seconds=site.epoch_seconds,
                                eth_address=site.eth_address, now=now)
    writes = mirror.batch()
    _changed(writes, mirror, layout.BUREAU, json.dumps(doc).encode())
    for policy in KNOWN_POLICIES.values():
        digest = policy_hash(policy)
        if not mirror.path(layout.policy(digest)).exists():
            writes.write(layout.policy(digest), policy_bytes(policy))
        if digest == doc["policy"]:
            _changed(writes, mirror, layout.POLICY, policy_bytes(policy))
    if home or not mirror.path(layout.HOME).exists():
        cp = await reports.checkpoint_envelope(conn, None)
        ranked = await Ranking().page(conn, None, 1)
        settled = await published_settlements(conn, SHOWN)
        writes.write(layout.HOME, index_page(
            PageSite(str(doc["key"]), site.epoch_seconds, site.public_url, now),
            str(doc["policy"]), payload_of(cp) if cp is not None else None, Listing(ranked),
            settlements_section([payload_of(s) for s in settled], site.epoch_seconds),
        ).encode())
    await writes.done()


def _changed(writes: Writes, mirror: MirrorDir, rel: str, data: bytes) -> None:
    if mirror.read(rel) != data:
        writes.write(rel, data)


def log_digest(shared: EpochProof) -> str:
    """What names the log proof an epoch's bundles and cards were written with."""
    return wire.blake3_hex(shared.log.text().encode())
