"""Numbers and entry ids are matched whole, in ASCII (SPEC §9 r3; issue 20 finding 8).

``size=5%0A`` was accepted on revision-2 main — ``re.match(r"...$")`` matches before a
final newline — and answered with an immutable cache header on a non-canonical URL;
entry ids likewise. A number is ``0`` or ``[1-9][0-9]*`` in ASCII digits with nothing
before or after it; anything else is ``422 SCHEMA`` at ``/<parameter>`` (in a path, no
route's: 404). Every route with a numeric parameter is tried with every hostile form.
"""

from __future__ import annotations

import pytest

from tests.reads.support import assert_error, get_raw, lib_headers
from tests.support import BureauUnderTest, kid

#: each a stand-in for 5 that is not the canonical 5: a final newline, a sign, a space
#: either side, a leading zero, Arabic-Indic and fullwidth digits (``int()`` reads both),
#: a decimal point, hex, a tab, a NUL
HOSTILE = ["5%0A", "%2B5", "-5", "%205", "5%20", "05", "%D9%A5", "%EF%BC%95", "5.0",
           "0x5", "5%09", "5%00", ""]

#: (route, the parameter tried, the other parameters it needs, signed by the agent)
QUERY_ROUTES = [
    ("/v1/agents/{agent}/entries", "after", "", True),
    ("/v1/agents/{agent}/entries", "limit", "", True),
    ("/v1/agents/{agent}/entries", "refusals_after", "", True),
    ("/v1/reporters/{agent}/entries", "after", "", True),
    ("/v1/reporters/{agent}/entries", "limit", "", True),
    ("/v1/agents/{agent}/explain", "epoch", "", True),
    ("/v1/agents/{agent}/evaluator", "epoch", "", True),
    ("/v1/agents/{agent}/report", "epoch", "", False),
    ("/v1/agents/{agent}/settlement", "epoch", "", True),
    ("/v1/proofs/inclusion", "size", "id=" + "0" * 64, False),
    ("/v1/proofs/consistency", "from", "to=1", False),
    ("/v1/proofs/consistency", "to", "from=0", False),
    ("/", "page", "", False),
]


@pytest.mark.parametrize(("route", "name", "others", "signed"), QUERY_ROUTES,
                         ids=[f"{r}?{n}" for r, n, _, _ in QUERY_ROUTES])
async def test_hostile_numbers_are_schema_at_the_parameter(
        bureau: BureauUnderTest, route: str, name: str, others: str, signed: bool) -> None:
    agent = bureau.admin  # an admin may read any party's file
    base = route.format(agent=kid(agent))
    for form in HOSTILE:
        path = f"{base}?{name}={form}" + (f"&{others}" if others else "")
        headers = lib_headers(agent, bureau.url + path) if signed else None
        status, body = await get_raw(bureau, path, headers)
        if route == "/":  # the HTML page answers its own error page, same status
            assert status == 422, (path, status)
            continue
        assert_error(status, body, 422, "SCHEMA", f"/{name}")


@pytest.mark.parametrize("route", ["/v1/checkpoints/{epoch}", "/v1/checkpoints/{epoch}/note",
                                   "/v1/settlements/{epoch}"])
async def test_hostile_epochs_in_a_path_match_no_route(bureau: BureauUnderTest,
                                                       route: str) -> None:
    for form in [f for f in HOSTILE if f]:
        status, body = await get_raw(bureau, route.format(epoch=form))
        assert_error(status, body, 404, "NOT_FOUND")


@pytest.mark.parametrize("form", ["0" * 64 + "%0A", "%200" + "0" * 63, "A" * 64,
                                  "0" * 63, "0" * 65, "%D9%A5" + "0" * 63])
async def test_hostile_entry_ids_are_schema_at_id(bureau: BureauUnderTest, form: str) -> None:
    status, body = await get_raw(bureau, f"/v1/proofs/inclusion?id={form}&size=1")
    assert_error(status, body, 422, "SCHEMA", "/id")


async def test_canonical_numbers_still_work(bureau: BureauUnderTest) -> None:
    status, body = await get_raw(bureau, "/v1/proofs/consistency?from=0&to=1")
    assert status == 200 and body["from"] == 0, body
    status, _ = await get_raw(bureau, "/v1/proofs/consistency?from=1&to=10")
    assert status == 422  # above the latest published head, not a malformed number
