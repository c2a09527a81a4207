"""The seal gauges an operator alerts on (``bureau_seal_lag_seconds``,
``bureau_last_seal_timestamp_seconds``) and ``bureau_build_info``, read from the ledger
at each scrape of the operator listener."""

from __future__ import annotations

import datetime as dt

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bureau import __version__
from bureau.http.keys import SEALER
from bureau.storage.reports import SealStatus
from tests.support import BureauUnderTest


async def _scrape(bureau: BureauUnderTest) -> dict[str, list[tuple[dict[str, str], float]]]:
    async with aiohttp.ClientSession() as session, \
            session.get(bureau.ops_url + "/metrics") as resp:
        text = await resp.text()
    return {family.name: [(s.labels, s.value) for s in family.samples]
            for family in text_string_to_metric_families(text)}


def test_lag_counts_from_the_end_of_the_oldest_epoch_without_reports() -> None:
    at = dt.datetime.fromtimestamp
    utc = dt.UTC
    assert SealStatus(None, None, None).lag(at(10_000, utc), 60) == 0  # an empty ledger
    # entry 1 in epoch 100 (6000..6060 s); nothing published: late since 6060
    assert SealStatus(None, 100, None).lag(at(6_100, utc), 60) == 40
    assert SealStatus(None, 100, None).lag(at(6_030, utc), 60) == 0  # not yet over
    # epoch 104 published: 105 ends at 6360
    assert SealStatus(104, 100, None).lag(at(6_361.5, utc), 60) == 1.5
    assert SealStatus(104, 100, None).lag(at(6_359, utc), 60) == 0


async def test_scrape_shows_build_info_and_the_seal_gauges(bureau: BureauUnderTest) -> None:
    before = await _scrape(bureau)
    assert before["bureau_build_info"][0][0]["version"] == __version__
    assert "bureau_last_seal_timestamp_seconds" not in before  # no seal yet
    assert before["bureau_seal_lag_seconds"] == [({}, 0.0)]

    seconds = bureau.config.epoch_seconds
    bureau.clock.advance(seconds + 7)  # the genesis epoch is over, 7 s late (at least)
    late = await _scrape(bureau)
    assert late["bureau_seal_lag_seconds"][0][1] >= 7

    assert await bureau.app[SEALER].seal_once()
    after = await _scrape(bureau)
    assert after["bureau_seal_lag_seconds"] == [({}, 0.0)]
    (_, sealed_at), = after["bureau_last_seal_timestamp_seconds"]
    assert abs(sealed_at - bureau.clock().timestamp()) < 5
