"""What one probe came to: what was seen of the call, and what the ledger is told.

Pure: the senders (:mod:`.http_call`, :mod:`.a2a_call`) turn an answer into an
:class:`Asked`; :func:`judge` says what it means, and which entries follow
(docs/probing.md, "What is recorded"):

* ``passed`` — the agent answered in its success form and the reply gives the answer:
  the fact and a probe ``passed: true``;
* ``failed`` — any other answer that is not a decline: the fact and a probe
  ``passed: false``;
* ``declined`` — the agent said it will not do the task (A2A ``rejected``, the
  template's decline form): the fact (``claimed: DECLINED``) only;
* ``unfinished`` — A2A: the agent wanted more input, or had not finished by the
  timeout: the fact (``derived: ABANDONED``) only;
* ``no_answer`` — no answer at all (refused, dropped, timed out): the fact
  (``answered: false``) only.

A decline has no probe entry, so that SPEC §7 rule 2 (the agent's own witnessed
statement) makes it a free ``DECLINED`` and the report's ``probes`` counts only tasks the
agent took on. (Rule 1 would also give ``DECLINED`` for a *failed* probe with
``claimed: DECLINED``, but that probe would be counted under ``probes.failed``.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from reporters.probing import ProbeTask
from reporters.protocols.answers import Claimed

Result = Literal["passed", "failed", "declined", "unfinished", "no_answer"]
RESULTS: tuple[Result, ...] = ("passed", "failed", "declined", "unfinished", "no_answer")


@dataclass(frozen=True, slots=True)
class Asked:
    """What the prober saw of one call, as a fact would say it, and the reply."""

    answered: bool
    latency_ms: int | None = None
    well_formed: bool | None = None
    claimed: Claimed | None = None
    #: A2A: the prober left a task that wanted input or had not finished
    abandoned: bool = False
    #: the agent's reply as text, if its answer had one where the route says
    reply: str | None = None
    #: the answer is in the agent's success form (HTTP status below 400; A2A
    #: ``completed``, or a plain message): only such an answer can pass
    success_form: bool = False
    #: why, in a few words, for the log and the audit line
    note: str = ""


NO_ANSWER = Asked(answered=False)


def judge(task: ProbeTask, asked: Asked) -> Result:
    """The probe's result; the first that applies: no answer, a decline, unfinished,
    then the reply checked against the task's answer."""
    if not asked.answered:
        return "no_answer"
    if asked.claimed == "DECLINED":
        return "declined"
    if asked.abandoned:
        return "unfinished"
    if asked.success_form and asked.reply is not None and task.check(asked.reply):
        return "passed"
    return "failed"


def probe_passed(result: Result) -> bool | None:
    """The ``passed`` of the probe entry; ``None``: no probe entry (declined,
    unfinished, no answer)."""
    return {"passed": True, "failed": False}.get(result)
