"""Stages 4 and 5 applied under the head lock: one submission judged against the
group's state (by :func:`bureau.intake.rules.judge`), appended if admitted, and what
intake answers for it (:class:`Result`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from bureau.errors import BureauError
from bureau.intake import rules
from bureau.intake.chaining import GroupTx, Indexed
from bureau.intake.index import Admitted, record_admitted, record_exclusion
from bureau.intake.refusals import refusal_row
from bureau.intake.state import GroupState, Submission
from bureau.kinds import EXCLUSION, SEAL_REQUEST, SUBMITTED


@dataclass(frozen=True, slots=True)
class Result:
    """What intake answers for one envelope."""

    status: Literal["accepted", "duplicate", "rejected"]
    id: str | None = None
    seq: int | None = None
    error: BureauError | None = None



def _append_exclusion(tx: GroupTx, target: str, reason: str, cause: str) -> None:
    target_rec = tx.state.entry(target) if target in tx.state.entries else None
    _, seq = tx.append(
        EXCLUSION.name, body={"entry": target, "reason": reason, "cause": cause},
        indexed=Indexed(subject=target_rec.subject if target_rec else None))
    record_exclusion(tx.state, tx.writes, target, seq, reason)


def _is_known_party(st: GroupState, key: str) -> bool:
    return st.is_admin(key) or st.reporters.get(key) is not None \
        or st.agents.get(key) is not None


def judge_one(tx: GroupTx, sub: Submission, now: dt.datetime) -> Result:
    """Judge one submission under the lock and append it if admitted."""
    env, st, signer, key = sub.envelope, tx.state, sub.signer, sub.envelope.content_key
    seen = st.admitted.get(key)
    if seen is not None:
        return Result("duplicate", seen[0], seen[1])
    kind = SUBMITTED[env.name]
    try:
        if sub.refusal is not None:
            raise sub.refusal
        payload = sub.payload
        assert payload is not None
        decision = rules.judge(env, payload, now, st)
    except BureauError as err:
        if _is_known_party(st, signer):
            tx.writes.refusals.append(refusal_row(env, err, tx.recorded_at))
        return Result("rejected", error=err)
    tx.seal_requested |= kind is SEAL_REQUEST
    subject = None if kind.subject is None else kind.subject(payload, signer)
    entry_id, seq = tx.append(kind.name, envelope=env.canonical,
                              indexed=Indexed(signer, subject, key))
    record_admitted(st, tx.writes, Admitted(kind=kind, payload=payload, signer=signer,
                                         key=key, subject=subject, entry_id=entry_id,
                                         seq=seq))
    for target, reason in decision.exclusions:
        _append_exclusion(tx, target, reason, entry_id)
    return Result("accepted", entry_id, seq)
