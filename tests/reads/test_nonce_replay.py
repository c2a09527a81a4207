"""A nonce is never accepted twice — not by another bureau process on the same
database, and not after a restart (read_nonces is shared)."""

from __future__ import annotations

from pathlib import Path

from reporters import wire
from reporters.httpsig import sign_request_headers
from tests.support import kid, start_bureau


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
