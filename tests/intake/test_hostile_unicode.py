"""Property (issue 12): whatever Unicode a hostile payload of any kind holds — control
characters, surrogate escapes (paired or lone), unknown keys, keys renamed — sent by
the party entitled to send that kind, through the real group commit on PostgreSQL:
nothing is answered 5xx, and the honest submissions in the same groups always land.

Each example is one batch (so one group commit): honest facts around one to three
hostile envelopes, and at the same time the first hostile envelope as a single POST next
to an honest single POST. The module's one bureau keeps its database across examples;
at the end its ledger still verifies."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bureau.verify import verify_database
from reporters import wire
from reporters.models import PAYLOAD_MODELS
from tests.agents.support import interaction_id
from tests.intake.world import Parties, live_parties, template
from tests.support import BureauUnderTest, fact_payload, kid, module_bureau

#: any code point, surrogates and controls included
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
NASTY = st.sampled_from(["\x00", "\x1f", "\x7f", "\x85", "\x9f", "\ud800", "\udfff",
                         "\U0001f600", "\\", "/", "~", "\u2028", "\ufeff", "é"])
#: hostile text: NUL (which PostgreSQL text cannot hold) a third of the time
HOSTILE_TEXT = st.one_of(st.just("\x00"), NASTY, ANY_TEXT)
JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10, 10), HOSTILE_TEXT)


bureau = module_bureau("bureau_unicode_")


@pytest.fixture(scope="module")
async def parties(bureau: BureauUnderTest) -> Parties:
    return await live_parties(bureau)


def _containers(doc: Any) -> list[Any]:
    """Every object and array in ``doc``, ``doc`` first."""
    if not isinstance(doc, dict | list):
        return []
    out = [doc]
    for value in doc.values() if isinstance(doc, dict) else doc:
        out.extend(_containers(value))
    return out


@st.composite
def hostile(draw: st.DrawFn, p: Parties) -> tuple[Any, str, bytes]:
    """A valid payload of a random kind by its rightful signer, then one to three edits
    that put hostile text into it; encoded with escapes (``\\uXXXX``, so a lone surrogate
    is a surrogate escape) or as raw UTF-8 (lone surrogates then make it invalid)."""
    name = draw(st.sampled_from(sorted(PAYLOAD_MODELS)))
    key, doc = template(p, name)
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(_containers(doc)))
        nasty = draw(HOSTILE_TEXT)
        # Positions are drawn as plain numbers, then taken modulo the size: the template's
        # identifiers are fresh each time, and what is drawn must not depend on them.
        where = draw(st.integers(0, 1000))
        if isinstance(target, list):
            if target and isinstance(target[where % len(target)], str):
                target[where % len(target)] = nasty
            continue
        op = draw(st.sampled_from(["value", "value", "add", "rename"]))
        keys = sorted(target)
        if op == "value" and keys:
            k = draw(st.sampled_from(keys))
            if isinstance(target[k], str):
                at = where % (len(target[k]) + 1)
                target[k] = target[k][:at] + nasty + target[k][at:]
            else:
                target[k] = nasty
        elif op == "rename" and keys:
            k = draw(st.sampled_from(keys))
            target[k + nasty] = target.pop(k)
        else:
            target[draw(HOSTILE_TEXT)] = draw(JSON_SCALAR)
    if draw(st.booleans()):
        body = json.dumps(doc).encode()
    else:
        body = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return key, name, body


def _fact(p: Parties) -> dict[str, Any]:
    return wire.sign_payload(p.reporter, "fact", fact_payload(
        interaction_id(), kid(wire.generate_key())))


async def _single(bureau: BureauUnderTest, env: dict[str, Any]) -> int:
    async with bureau.session.post(bureau.url + "/v1/evidence", data=json.dumps(env),
                                   headers={"Content-Type": "application/json"}) as resp:
        await resp.read()
        return resp.status


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
async def test_hostile_unicode_never_fails_an_honest_submission(
        bureau: BureauUnderTest, parties: Parties, data: st.DataObject) -> None:
    cases = data.draw(st.lists(hostile(parties), min_size=1, max_size=3))
    envelopes = [wire.sign_envelope(key, wire.payload_type(name), body)
                 for key, name, body in cases]
    honest = [_fact(parties) for _ in range(4)]
    lines = [honest[0], *envelopes, honest[1]]
    batch, single_hostile, single_honest = await asyncio.gather(
        bureau.batch(lines), _single(bureau, envelopes[0]), _single(bureau, honest[2]))
    assert all(line["code"] != "UNAVAILABLE" for line in batch if "code" in line), batch
    assert batch[0]["status"] == batch[-1]["status"] == "accepted", batch
    assert single_hostile < 500 and single_honest == 201
    status, body = await bureau.post(honest[3])  # and the bureau still takes evidence
    assert status == 201, body


async def test_the_ledger_still_verifies(bureau: BureauUnderTest, parties: Parties) -> None:
    """Run after the property, on the same database: nothing half-written."""
    conn = await asyncpg.connect(bureau.database_url)
    try:
        assert await verify_database(conn) > 0
        assert await conn.fetchval("SELECT seq FROM ledger_head") == await conn.fetchval(
            "SELECT count(*) FROM entries")
    finally:
        await conn.close()
