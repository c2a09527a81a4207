"""A nonce is never accepted twice — not by another bureau process on the same
database, and not after a restart (read_nonces is shared) — and it is spent only once
the reader is known to be allowed, so no one can spend the room others need."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import nacl.signing

from bureau.http.keys import NONCES
from reporters import wire
from reporters.httpsig import sign_request_headers
from tests.support import BureauUnderTest, kid, start_bureau

Key = nacl.signing.SigningKey


async def test_a_read_replayed_to_another_process_is_refused(database_url: str,
                                                            tmp_path: Path) -> None:
    agent = wire.generate_key()
    async with start_bureau(database_url, tmp_path / "a") as a, \
            start_bureau(database_url, tmp_path / "b") as b:
        await a.accepted(agent, "enrollment", {
            "name": "reader", "anchor": {"kind": "domain", "value": "reader.example"},
            "operator": "Reader Ltd", "promises": []})
        path = f"/v1/agents/{kid(agent)}/entries"
        headers = sign_request_headers(agent, "GET", a.url + path)
        async with a.session.get(a.url + path, headers=headers) as resp:
            assert resp.status == 200
            assert len((await resp.json())["entries"]) == 1
        async with b.session.get(b.url + path, headers=headers) as resp:
            body = await resp.json()
            assert (resp.status, body["code"]) == (401, "UNAUTHENTICATED")
            assert "nonce" in body["detail"]
    async with start_bureau(database_url, tmp_path / "c") as c:  # after a restart, too
        async with c.session.get(c.url + path, headers=headers) as resp:
            assert resp.status == 401
        fresh = sign_request_headers(agent, "GET", c.url + path)
        async with c.session.get(c.url + path, headers=fresh) as resp:
            assert resp.status == 200


# ------------------------------------------------------------------ nonce capacity


async def _read(bureau: BureauUnderTest, signer: Key, party: Key) -> tuple[int, str]:
    path = f"/v1/agents/{kid(party)}/entries"
    headers = sign_request_headers(signer, "GET", bureau.url + path)
    async with bureau.session.get(bureau.url + path, headers=headers) as resp:
        body = await resp.json()
        return resp.status, body.get("code", "")


async def _nonces_of(bureau: BureauUnderTest, key: Key) -> int:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        n: int = await conn.fetchval("SELECT count(*) FROM read_nonces WHERE keyid = $1",
                                     kid(key))
        return n
    finally:
        await conn.close()


async def test_a_stranger_cannot_spend_the_nonces_others_need(bureau: BureauUnderTest) -> None:
    """Issue 12: a stranger's forbidden reads (each a 403) filled the process's nonce
    store, and then every reader got 401. With the store's capacity lowered to 100,
    2,000 forbidden reads spend nothing — not here, not in the database — and the
    victim's own read is still 200."""
    store = bureau.app[NONCES]
    store.max_entries, store.max_per_key = 100, 20
    victim, stranger = wire.generate_key(), wire.generate_key()
    answers: set[tuple[int, str]] = set()
    for _ in range(20):
        answers.update(await asyncio.gather(
            *(_read(bureau, stranger, victim) for _ in range(100))))
    assert await _read(bureau, victim, victim) == (200, "")
    assert answers == {(403, "FORBIDDEN")}
    assert len(store) == 1 and await _nonces_of(bureau, stranger) == 0


async def test_a_full_nonce_store_refuses_no_reader_and_still_no_replay(
        bureau: BureauUnderTest) -> None:
    """Reads a party may make (its own file) from many keys fill the lowered store, and a
    flood from one key passes its share: nobody is refused for it, because the store
    only caches the claims in ``read_nonces`` — which still refuse every replay."""
    store = bureau.app[NONCES]
    store.max_entries, store.max_per_key = 30, 5
    flooders = [wire.generate_key() for _ in range(10)]
    answers = await asyncio.gather(*(_read(bureau, k, k) for k in flooders for _ in range(6)))
    assert {status for status, _ in answers} == {200}
    assert len(store) == 30
    victim = wire.generate_key()
    path = f"/v1/agents/{kid(victim)}/entries"
    headers = sign_request_headers(victim, "GET", bureau.url + path)
    async with bureau.session.get(bureau.url + path, headers=headers) as resp:
        assert resp.status == 200
    async with bureau.session.get(bureau.url + path, headers=headers) as resp:
        assert (resp.status, (await resp.json())["code"]) == (401, "UNAUTHENTICATED")
