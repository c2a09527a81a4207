"""The committer's CPU per envelope, without a database: stages 4-6 in memory.

Signs N facts and N attestations of them, prepares them (stages 1-3), then times
``bureau.intake.judging.judge_one`` — the kinds table's dispatch, authorize, admit, the
entry's subject, chaining (canonical bytes and BLAKE3) and the index rows — against an
in-memory ``GroupState``, as the group commit runs it under the ledger lock. Process CPU
time, best of several rounds, so that other load on the machine matters less than it
does to the end-to-end intake bench.

    python bench/judge_bench.py [--n 20000] [--rounds 9]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bureau.intake.chaining import GroupTx
from bureau.intake.judging import judge_one
from bureau.intake.pipeline import prepare
from bureau.intake.state import FIRST, GroupState, Submission
from bureau.records import AgentRecord, ReporterRecord
from reporters import wire


def signed(n: int) -> tuple[list[Submission], list[Submission], tuple[str, str, str]]:
    rep, caller, subject = (wire.signing_key_from_seed(bytes([i]) * 32) for i in (1, 2, 3))
    r, c, s = (wire.signing_key_id(k) for k in (rep, caller, subject))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    facts, atts = [], []
    for i in range(n):
        for key, name, payload, out in (
                (rep, "fact", {"interaction": f"i{i}", "subject": s, "caller": c,
                               "observed_at": now, "answered": True}, facts),
                (caller, "attestation", {"reporter": r, "interaction": f"i{i}",
                                         "subject": s, "outcome": "ACCEPTED",
                                         "corrections": 0}, atts)):
            sub = prepare(json.dumps(wire.sign_payload(key, name, payload)).encode())
            assert isinstance(sub, Submission)
            out.append(sub)
    return facts, atts, (r, c, s)


def loaded_state(n: int, r: str, c: str, s: str) -> GroupState:
    """What GroupState.load would have fetched for these submissions on a fresh ledger."""
    st = GroupState(frozenset())
    st.reporters.update({r: ReporterRecord(r, frozenset({"facts", "probes"})), c: None,
                         s: None})
    st.agents.update({r: None, c: AgentRecord(c, "c", "op c", "domain", "c.example"),
                      s: AgentRecord(s, "s", "op s", "domain", "s.example")})
    for i in range(n):
        st.facts[(r, f"i{i}")] = st.probes[(r, f"i{i}")] = None
        st.verdicts[("attestation", c, r, f"i{i}")] = None
    return st


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    facts, atts, (r, c, s) = signed(args.n)
    now = dt.datetime.now(dt.UTC)
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        tx = GroupTx(None, loaded_state(args.n, r, c, s), FIRST, now, 21600)
        for name, subs in (("fact", facts), ("attestation", atts)):
            t0 = time.process_time()
            for sub in subs:
                assert judge_one(tx, sub, now).status == "accepted"
            best[name] = min(best.get(name, float("inf")), time.process_time() - t0)
    for name, seconds in best.items():
        print(f"judge_one, {name:12s} {seconds / args.n * 1e6:6.2f} µs of CPU an envelope "
              f"(best of {args.rounds} rounds of {args.n:,})")


if __name__ == "__main__":
    main()
