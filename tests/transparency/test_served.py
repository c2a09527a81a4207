"""The ledger's tree as the bureau stores and serves it (SPEC §8.1, §9): against the tree
by its definition (tests/transparency/reference.py), over real HTTP, on a real
PostgreSQL."""

from __future__ import annotations

import json

import asyncpg
import pytest

from bureau.http.keys import COMMITTER
from bureau.storage import db
from bureau.transparency import heads
from bureau.transparency.heads import LogKey
from bureau.transparency.tree import TreeCheck
from reporters import TreeHead, verify_consistency, verify_inclusion, verify_note, wire
from reporters.tlog.checkpoint import default_origin
from reporters.tlog.merkle import EMPTY_ROOT
from tests.support import BureauUnderTest, get_json, kid
from tests.transparency import reference
from tests.transparency.service import (
    bureau_vkey,
    checkpoint,
    entry_ids,
    get_text,
    publish,
)
from tests.views.support import World, next_epoch, open_envelope


async def grow(world: World, n: int) -> None:
    """``n`` more entries: agents enroll, facts about them."""
    agents = [await world.agent(f"agent {i}") for i in range(max(1, n // 4))]
    while n > len(agents):
        await world.fact(agents[n % len(agents)], caller=agents[0])
        n -= 1


def leaves(ids: list[str]) -> list[bytes]:
    return [bytes.fromhex(i) for i in ids]


async def test_before_entry_one_the_tree_head_is_the_empty_tree(database_url: str) -> None:
    """SPEC §9: before entry 1 exists the head is size 0 with root SHA-256(""). A bureau
    writes its genesis entry before it serves, so this is seen below the HTTP layer."""
    key = wire.generate_key()
    log_key = LogKey.of(default_origin(bytes(key.verify_key)), key)
    conn = await asyncpg.connect(database_url)
    try:
        await db.migrate(conn)
        head = await heads.publish(conn, log_key)
        assert head is not None and await heads.latest(conn) == head
    finally:
        await conn.close()
    opened = verify_note(head.served, log_key.vkey)
    assert (opened.size, opened.root) == (0, EMPTY_ROOT)
    assert head.note.startswith(
        f"{log_key.origin}\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n")


async def test_a_bureau_serves_a_head_from_its_first_request(bureau: BureauUnderTest) -> None:
    """The genesis entry is leaf 0; the publisher signs it before the first request."""
    status, ctype, note = await get_text(bureau, "/checkpoint")
    assert (status, ctype) == (200, "text/plain")
    head = verify_note(note, await bureau_vkey(bureau))
    [genesis] = await entry_ids(bureau.database_url)
    assert (head.size, head.root) == (1, reference.mth([bytes.fromhex(genesis)]))
    conn = await asyncpg.connect(bureau.database_url)
    try:
        body = json.loads(await conn.fetchval("SELECT entry FROM entries WHERE seq = 1"))["body"]
    finally:
        await conn.close()
    assert head.origin == bureau.log_key.origin == body["origin"]  # the ledger's origin


async def test_the_served_root_is_the_definition_at_every_size(
        bureau: BureauUnderTest) -> None:
    """Publish after every append: each note's root is MTH of the ids so far."""
    world = await World.make(bureau)
    agent = await world.agent("alpha")
    for i in range(33):
        if i % 5 == 4:
            await world.agent(f"other {i}")
        else:
            await world.fact(agent)
        head = await publish(bureau)
        ids = await entry_ids(bureau.database_url)
        assert head.size == len(ids)
        assert head.root == reference.mth(leaves(ids)), f"size {head.size}"


@pytest.mark.slow
async def test_every_proof_up_to_64_is_the_definition_and_verifies(
        bureau: BureauUnderTest) -> None:
    world = await World.make(bureau)  # the genesis entry, the reporter's registration
    await grow(world, 62)
    head = await publish(bureau)
    ids = await entry_ids(bureau.database_url)
    assert head.size == len(ids) == 64
    data = leaves(ids)
    roots = {n: TreeHead(n, reference.mth(data[:n]).hex()) for n in range(65)}
    for n in range(1, 65):
        for i in range(n):
            status, proof = await get_json(bureau, f"/v1/proofs/inclusion?id={ids[i]}&size={n}")
            assert status == 200, proof
            assert proof == {"leaf_index": i, "tree_size": n,
                             "hashes": [h.hex() for h in reference.path(i, data[:n])]}
            assert verify_inclusion(ids[i], proof, roots[n], leaf_index=i) == i
        for m in range(n + 1):
            status, proof = await get_json(bureau, f"/v1/proofs/consistency?from={m}&to={n}")
            assert status == 200, proof
            assert proof == {"from": m, "to": n,
                             "hashes": [h.hex() for h in reference.proof(m, data[:n])]}
            verify_consistency(proof, roots[m], roots[n])


async def test_proofs_against_a_published_checkpoint(bureau: BureauUnderTest) -> None:
    """What a client does: keep a note, later check the new note extends it and that an
    entry is in it, with nothing but the bureau's vkey."""
    world = await World.make(bureau)
    await grow(world, 10)
    old = await publish(bureau)
    await grow(world, 7)
    new = await publish(bureau)
    assert new.size > old.size
    _, proof = await get_json(bureau, f"/v1/proofs/consistency?from={old.size}&to={new.size}")
    verify_consistency(proof, old, new)
    ids = await entry_ids(bureau.database_url)
    _, proof = await get_json(bureau, f"/v1/proofs/inclusion?id={ids[3]}&size={new.size}")
    verify_inclusion(ids[3], proof, new)


async def test_sizes_above_the_latest_published_head_are_refused(
        bureau: BureauUnderTest) -> None:
    world = await World.make(bureau)
    await grow(world, 6)
    head = await publish(bureau)
    await world.fact(await world.agent("late"))  # two entries not yet in a published head
    ids = await entry_ids(bureau.database_url)
    above = head.size + 1
    for path, where in ((f"/v1/proofs/inclusion?id={ids[0]}&size={above}", "/size"),
                        (f"/v1/proofs/consistency?from=1&to={above}", "/to"),
                        (f"/v1/proofs/inclusion?id={ids[-1]}&size={above + 1}", "/size")):
        status, body = await get_json(bureau, path)
        assert (status, body["code"], body["path"]) == (422, "SCHEMA", where), path
        assert "latest published" in body["detail"]
    # the last entry is in no published tree yet; once published, it is
    head = await publish(bureau)
    status, body = await get_json(bureau, f"/v1/proofs/inclusion?id={ids[-1]}&size={head.size}")
    assert status == 200 and body["leaf_index"] == len(ids) - 1


@pytest.mark.parametrize(("query", "where"), [
    ("/v1/proofs/inclusion?size=3", "/id"),
    ("/v1/proofs/inclusion?id={id}", "/size"),
    ("/v1/proofs/inclusion?id={id}&id={id}&size=3", "/id"),
    ("/v1/proofs/inclusion?id={id}&size=3&size=3", "/size"),
    ("/v1/proofs/inclusion?id={ID}&size=3", "/id"),
    ("/v1/proofs/inclusion?id=abc&size=3", "/id"),
    ("/v1/proofs/inclusion?id={id}&size=03", "/size"),
    ("/v1/proofs/inclusion?id={id}&size=-1", "/size"),
    ("/v1/proofs/inclusion?id={id}&size=3.0", "/size"),
    ("/v1/proofs/inclusion?id={id}&size=99999999999999999999", "/size"),
    ("/v1/proofs/inclusion?id={id}&size=0", "/size"),
    ("/v1/proofs/inclusion?id={id}&size=3&extra=1", "/extra"),
    ("/v1/proofs/inclusion?id={last}&size=2", "/size"),  # an entry after that tree
    ("/v1/proofs/consistency?to=3", "/from"),
    ("/v1/proofs/consistency?from=1", "/to"),
    ("/v1/proofs/consistency?from=1&from=1&to=3", "/from"),
    ("/v1/proofs/consistency?from=1&to=3&to=3", "/to"),
    ("/v1/proofs/consistency?from=x&to=3", "/from"),
    ("/v1/proofs/consistency?from=1&to=", "/to"),
    ("/v1/proofs/consistency?from=3&to=2", "/from"),
    ("/v1/proofs/consistency?from=1&to=2&since=0", "/since"),
])
async def test_bad_input_is_schema_at_the_parameter(bureau: BureauUnderTest, query: str,
                                                    where: str) -> None:
    world = await World.make(bureau)
    await grow(world, 4)
    await publish(bureau)
    ids = await entry_ids(bureau.database_url)
    path = query.format(id=ids[0], ID=ids[0].upper(), last=ids[-1])
    status, body = await get_json(bureau, path)
    assert status == 422, body
    assert (body["status"], body["code"], body["path"]) == ("rejected", "SCHEMA", where)


async def test_an_unknown_entry_is_not_found(bureau: BureauUnderTest) -> None:
    world = await World.make(bureau)
    await grow(world, 2)
    head = await publish(bureau)
    status, body = await get_json(bureau, f"/v1/proofs/inclusion?id={'ab' * 32}&size={head.size}")
    assert (status, body["code"], body["path"]) == (404, "NOT_FOUND", "")


async def test_empty_and_equal_consistency_proofs(bureau: BureauUnderTest) -> None:
    world = await World.make(bureau)
    await grow(world, 3)
    head = await publish(bureau)
    for m in (0, head.size):
        status, body = await get_json(bureau, f"/v1/proofs/consistency?from={m}&to={head.size}")
        assert (status, body) == (200, {"from": m, "to": head.size, "hashes": []})
    status, body = await get_json(bureau, "/v1/proofs/consistency?from=0&to=0")
    assert (status, body) == (200, {"from": 0, "to": 0, "hashes": []})


async def test_each_epoch_checkpoint_is_also_a_note(bureau: BureauUnderTest) -> None:
    """The JSON checkpoint of an epoch gains ``root``; its note is the same tree head."""
    world = await World.make(bureau)
    await grow(world, 5)
    [epoch] = await next_epoch(bureau)
    status, body = await get_json(bureau, f"/v1/checkpoints/{epoch}")
    assert status == 200
    async with bureau.session.get(bureau.url + f"/v1/checkpoints/{epoch}") as resp:
        cp = open_envelope(await resp.read(), kid(bureau.signing_key))
    status, ctype, note = await get_text(bureau, f"/v1/checkpoints/{epoch}/note")
    assert (status, ctype) == (200, "text/plain")
    head = verify_note(note, await bureau_vkey(bureau))
    ids = await entry_ids(bureau.database_url)
    assert head.size == cp["entries"] == cp["seq"]
    assert head.root_hex == cp["root"] == reference.mth(leaves(ids[:cp["seq"]])).hex()
    # the epoch's head is published: proofs up to it are served
    status, _ = await get_json(bureau, f"/v1/proofs/consistency?from=1&to={head.size}")
    assert status == 200
    status, body = await get_json(bureau, f"/v1/checkpoints/{epoch + 1}/note")
    assert (status, body["code"]) == (404, "NOT_FOUND")


async def test_every_signed_head_is_kept_and_heads_only_grow(bureau: BureauUnderTest) -> None:
    world = await World.make(bureau)
    seen = []
    for n in (3, 1, 4):
        await grow(world, n)
        seen.append(await publish(bureau))
    conn = await asyncpg.connect(bureau.database_url)
    try:
        rows = await conn.fetch("SELECT size, root, note FROM tree_heads ORDER BY size")
    finally:
        await conn.close()
    kept = {r["size"]: (bytes(r["root"]), r["note"]) for r in rows}
    for head in seen:
        assert kept[head.size] == (head.root, head.note)
    assert list(kept) == sorted(kept) and 1 in kept  # the genesis head, signed at start
    # nothing new: the same head, not a new note
    assert (await publish(bureau)).note == seen[-1].note
    # after a restart of the committer, its frontier is read back from the nodes
    ledger = bureau.app[COMMITTER]
    ledger._tree = None
    await world.fact(await world.agent("after"))
    assert (await publish(bureau)).root == reference.mth(leaves(
        await entry_ids(bureau.database_url)))


async def test_the_stored_nodes_are_the_entries_tree(bureau: BureauUnderTest) -> None:
    """Every node the group commits wrote, and no other, is the one the ids give."""
    world = await World.make(bureau)
    await grow(world, 40)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        ids = await entry_ids(bureau.database_url)
        check = TreeCheck()
        await check.compare(conn, ids)
        await check.finish(conn)
    finally:
        await conn.close()
    assert check.difference is None
    assert check.frontier.root() == reference.mth(leaves(ids))
    assert (await checkpoint(bureau)).size <= len(ids)
