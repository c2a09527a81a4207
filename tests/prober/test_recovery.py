"""What a run that ended without stopping cleanly leaves in the spool, taken back by the
next: a probe judged but not spooled is spooled, once however often; a task cut off in
flight is reported nowhere and never asked again."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from reporters import Reporter
from reporters._internal import payloads
from reporters.prober.runner import Progress
from reporters.probing import task
from tests.prober.support import SEED, entries, new_agent, prober, right, route, run
from tests.support import BureauUnderTest, kid, now_text, serving


def app_of_right() -> web.Application:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", right)
    return app


async def test_a_judged_probe_is_spooled_at_start_and_entered_once(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts", "probes"))
    agent = kid(new_agent())
    spool = tmp_path / "spool"
    observed = now_text()
    async with Reporter(key, bureau.url, spool) as reporter:
        fact = reporter.fact("pb-x:000007", agent, observed_at=observed, latency_ms=12,
                             well_formed=True, claimed="SUCCESS")
        probe = reporter.probe("pb-x:000007", agent, task(0, 3, SEED).probe_id, True,
                               observed_at=observed)
    record = Progress(agent, 0, 4, {"interaction": "pb-x:000007", "index": 3,
                                    "observed_at": observed},
                      {"result": "passed", "fact": payloads.to_json(fact),
                       "probe": payloads.to_json(probe)})
    for attempt in range(2):  # the second time, the bureau has it already
        async with Reporter(key, bureau.url, spool) as reporter:
            await reporter.hold({record.name: record.dump()})
        async with (serving(app_of_right()) as url,
                    prober(bureau, tmp_path, [route(agent, url)], limit=1, reporter=key) as p):
            assert p.metrics.recovered._value.get() == 1
            assert p.metrics.interrupted._value.get() == 0
            await run(p)
            assert p.run.duplicate == (2 if attempt else 0)
    probes = await entries(bureau.database_url, kid(key), "probe")
    assert [p["interaction"] for p in probes].count("pb-x:000007") == 1
    assert len([f for f in await entries(bureau.database_url, kid(key), "fact")
                if f["interaction"] == "pb-x:000007"]) == 1


async def test_a_task_cut_off_in_flight_is_reported_nowhere_and_not_asked_again(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts", "probes"))
    agent = kid(new_agent())
    async with serving(app_of_right()) as url:
        # one epoch for the whole test: the second run carries on in the same batch
        settings = {"epoch_seconds": 10**9}
        async with prober(bureau, tmp_path, [route(agent, url)], limit=1, reporter=key,
                          **settings) as p:
            await run(p)
        first = await entries(bureau.database_url, kid(key), "probe")
        assert len(first) == 1
        epoch = int(first[0]["probe"].split(".")[1])
        # As a crash would leave it: task 1 sent, its answer never judged.
        cut = Progress(agent, epoch, 2, {"interaction": "pb-x:000099", "index": 1,
                                         "observed_at": now_text()})
        async with Reporter(key, bureau.url, tmp_path / "spool") as reporter:
            await reporter.hold({cut.name: cut.dump()})
        async with prober(bureau, tmp_path, [route(agent, url)], limit=1, reporter=key,
                          **settings) as p:
            assert p.metrics.interrupted._value.get() == 1
            await run(p)
    probes = await entries(bureau.database_url, kid(key), "probe")
    assert [p["probe"] for p in probes] == [f"v1.{epoch}.0", f"v1.{epoch}.2"]
    assert "pb-x:000099" not in {f["interaction"] for f in
                                 await entries(bureau.database_url, kid(key), "fact")}
