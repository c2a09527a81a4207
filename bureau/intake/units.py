"""What callers hand the committer (bureau.intake.committer) and how they hear back: a
:class:`Unit` — one request's submissions, or one piece of work to run under the ledger
lock — with the future its caller awaits on its own loop, answered from the committer's
thread once the groups holding it have committed (or failed)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bureau.errors import BureauError, Code, Pushback
from bureau.intake.chaining import GroupTx
from bureau.intake.judging import Result
from bureau.intake.state import Submission

#: Extra work done under the ledger lock after a group's submissions (e.g. sealing).
LockedWork = Callable[[GroupTx], Awaitable[None]]


@dataclass
class Unit:
    """One request's submissions (or one piece of locked work) and the future its
    caller awaits; ``results`` fill in as the groups holding them commit."""

    subs: Sequence[Submission]
    future: asyncio.Future[list[Result]]
    work: LockedWork | None = None
    results: list[Result | None] = field(default_factory=list)
    #: why the unit's locked work could not run (its caller hears this)
    failure: BureauError | None = None


#: One thing a group commit does, in order: a unit's submission ``i``, or (``i == -1``)
#: the unit's locked work.
Item = tuple[Unit, int]
WORK = -1


def _resolve(future: asyncio.Future[list[Result]], results: list[Result] | None,
            failure: BaseException | None) -> None:
    """On the future's own loop: answer it, unless it already was."""
    if future.done():
        return
    if failure is not None:
        future.set_exception(failure)
    else:
        assert results is not None
        future.set_result(results)


def answer(unit: Unit, results: list[Result] | None = None,
            failure: BaseException | None = None) -> None:
    """From any thread: answer ``unit`` on the loop its caller awaits it on."""
    with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
        unit.future.get_loop().call_soon_threadsafe(_resolve, unit.future, results, failure)


def shutting_down() -> BureauError:
    return BureauError(Code.UNAVAILABLE, "", "the bureau is shutting down",
                       pushback=Pushback.SHUTTING_DOWN)


def items_of(units: Sequence[Unit]) -> list[Item]:
    """What a group commit does for ``units``, in order (their results reset)."""
    items: list[Item] = []
    for unit in units:
        unit.results = [None] * len(unit.subs)
        items.extend((unit, i) for i in range(len(unit.subs)))
        if unit.work is not None:
            items.append((unit, WORK))
    return items
