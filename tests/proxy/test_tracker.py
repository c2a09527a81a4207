"""The derived-outcome tracker alone: a pure class, time moved by hand."""

from __future__ import annotations

import pytest

from reporters.proxy.tracker import Call, DerivedOutcomes, Settled


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def call(n: int, clock: Clock, *, agent: str = "A", caller: str | None = "C",
         task: str = "T", ok: bool = True) -> Call:
    return Call(f"ia-{n}", agent, caller, task, ok, clock.now)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def tracker(clock: Clock) -> DerivedOutcomes:
    return DerivedOutcomes(clock, window=10, quiet=60)


def test_one_good_answer_is_null_after_the_window(tracker: DerivedOutcomes,
                                                   clock: Clock) -> None:
    assert tracker.observe(call(1, clock)) == []
    clock.now += 9.9
    assert tracker.due() == []
    clock.now += 0.1
    assert tracker.due() == [Settled("ia-1", None)]
    assert tracker.held == 0


def test_unsigned_caller_is_released_at_once(tracker: DerivedOutcomes, clock: Clock) -> None:
    assert tracker.observe(call(1, clock, caller=None, ok=False)) == [Settled("ia-1", None)]
    assert tracker.held == 0


def test_retry_then_kept_marks_the_first_attempt(tracker: DerivedOutcomes,
                                                  clock: Clock) -> None:
    tracker.observe(call(1, clock, ok=False))
    clock.now += 2
    assert tracker.observe(call(2, clock, ok=False)) == [Settled("ia-2", None)]
    clock.now += 2
    assert tracker.observe(call(3, clock, ok=True)) == [Settled("ia-3", None)]
    clock.now += 10
    assert tracker.due() == [Settled("ia-1", "RETRY_ACCEPTED")]


def test_switch_to_another_agent(tracker: DerivedOutcomes, clock: Clock) -> None:
    tracker.observe(call(1, clock, agent="A"))
    clock.now += 3
    assert tracker.observe(call(2, clock, agent="B")) == [Settled("ia-1", "SWITCHED_AGENT")]
    clock.now += 10
    assert tracker.due() == [Settled("ia-2", None)]


def test_same_body_from_another_caller_is_another_task(tracker: DerivedOutcomes,
                                                       clock: Clock) -> None:
    tracker.observe(call(1, clock, agent="A", caller="C1"))
    assert tracker.observe(call(2, clock, agent="B", caller="C2")) == []
    clock.now += 10
    assert sorted(tracker.due(), key=lambda s: s.interaction) == [
        Settled("ia-1", None), Settled("ia-2", None)]


def test_failure_then_silence_is_abandoned(tracker: DerivedOutcomes, clock: Clock) -> None:
    tracker.observe(call(1, clock, ok=False))
    clock.now += 30
    assert tracker.due() == []  # past the window, not yet quiet long enough
    clock.now += 30
    assert tracker.due() == [Settled("ia-1", "ABANDONED")]


def test_failure_then_other_business_is_not_abandoned(tracker: DerivedOutcomes,
                                                      clock: Clock) -> None:
    tracker.observe(call(1, clock, ok=False))
    clock.now += 20
    tracker.observe(call(2, clock, task="OTHER"))
    assert tracker.due() == [Settled("ia-1", None)]


def test_repeat_after_the_window_is_a_new_thread(tracker: DerivedOutcomes,
                                                  clock: Clock) -> None:
    tracker.observe(call(1, clock, ok=False))
    clock.now += 11
    assert tracker.observe(call(2, clock)) == [Settled("ia-1", None)]


def test_retry_that_never_succeeds_then_silence(tracker: DerivedOutcomes,
                                                clock: Clock) -> None:
    tracker.observe(call(1, clock, ok=False))
    clock.now += 1
    tracker.observe(call(2, clock, ok=False))
    clock.now += 61
    assert tracker.due() == [Settled("ia-1", "ABANDONED")]


def test_drain_releases_everything(tracker: DerivedOutcomes, clock: Clock) -> None:
    tracker.observe(call(1, clock, ok=False))
    tracker.observe(call(2, clock, task="U"))
    clock.now += 1
    tracker.observe(call(3, clock, task="U"))
    assert sorted(tracker.drain(), key=lambda s: s.interaction) == [
        Settled("ia-1", None), Settled("ia-2", "RETRY_ACCEPTED")]
    assert tracker.held == 0


def test_memory_is_bounded(clock: Clock) -> None:
    tracker = DerivedOutcomes(clock, window=10, quiet=60, max_held=2)
    tracker.observe(call(1, clock, task="a"))
    tracker.observe(call(2, clock, task="b"))
    assert tracker.observe(call(3, clock, task="c")) == [Settled("ia-1", None)]
    assert tracker.held == 2


def test_window_must_fit_in_quiet(clock: Clock) -> None:
    with pytest.raises(ValueError):
        DerivedOutcomes(clock, window=10, quiet=5)


def test_next_deadline(tracker: DerivedOutcomes, clock: Clock) -> None:
    assert tracker.next_deadline() is None
    tracker.observe(call(1, clock))
    assert tracker.next_deadline() == clock.now + 10


def test_restored_threads_carry_on_as_if_never_away(clock: Clock) -> None:
    """What one tracker holds, another (after a restart) restores from ``thread``: the
    same calls then come out with the same derived values."""
    first = DerivedOutcomes(clock, window=10, quiet=60)
    first.observe(call(1, clock, caller="R", ok=False))
    clock.now += 2
    first.observe(call(2, clock, caller="R"))  # a retry that was kept
    first.observe(call(3, clock, caller="G", task="U", ok=False))  # G then goes silent
    first.observe(call(4, clock, caller="B", task="V", ok=False))
    clock.now += 1
    first.observe(call(5, clock, caller="B", task="W"))  # B came back with other business
    saved = [t for t in (first.thread("R", "T"), first.thread("G", "U"),
                         first.thread("B", "V"), first.thread("B", "W")) if t is not None]
    assert [t.attempts for t in saved] == [2, 1, 1, 1]

    later = DerivedOutcomes(clock, window=10, quiet=60)
    later.restore(saved)
    assert later.held == first.held == 4
    clock.now += 10
    assert sorted(later.due(), key=lambda s: s.interaction) == sorted(
        first.due(), key=lambda s: s.interaction) == [
        Settled("ia-1", "RETRY_ACCEPTED"), Settled("ia-4", None), Settled("ia-5", None)]
    clock.now += 60
    assert later.due() == first.due() == [Settled("ia-3", "ABANDONED")]
