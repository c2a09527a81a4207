"""The adversarial runs as text: per policy, per attack, baseline → attacked, the
change, the goal and whether it held."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bureau.simulate.adversarial.run import PolicyRun, Row
from reporters._internal.wording import count

_HEADER = (f"{'attack':<40} {'victim':<18} {'baseline → attacked':>20} {'change':>7}  "
           f"{'goal':<11} {'held':<4}  note")


def _row(row: Row) -> str:
    a = row.attack
    notes = []
    if row.before_later is not None:
        notes.append(f"{row.before_later:.3f} before the distrust")
    if a.metric == "low":
        notes.append("score.low")
    if a.metric == "pool":
        notes.append("score in the evaluators' pool (g·J), rows proven")
    if a.v1 is not None:
        notes.append(f"first measured under v1: {a.v1[0]:.3f} → {a.v1[1]:.3f}")
    moved = f"{row.baseline:.3f} → {row.attacked:.3f}"
    return (f"{a.name:<40} {a.victim:<18} {moved:>20} {row.change:>+7.3f}  "
            f"{a.goal.text:<11} {'yes' if row.held else 'NO':<4}  {'; '.join(notes)}")


def policy_label(name: str) -> str:
    """What a policy's name does not say: which is the default for new ledgers, and
    that the others are superseded, kept so old ledgers rebuild and for comparison."""
    from bureau.scoring.policy import DEFAULT_POLICY_NAME

    if name == DEFAULT_POLICY_NAME:
        return " (the default for new ledgers)"
    why = ": its NO rows are why v2 exists" if name == "v1" else ""
    return f" (superseded, kept so older ledgers rebuild and for comparison{why})"


def render_run(run: PolicyRun) -> str:
    held = sum(r.held for r in run.rows)
    sealed = ("" if run.sealed_reports_unchanged
              else "; A REPORT SEALED IN THE FIRST EPOCH CHANGED")
    lines = [f"policy {run.policy}{policy_label(run.policy)}: epochs {run.epochs[0]}.."
             f"{run.epochs[1]}, {run.seconds:.0f} s; {held} of "
             f"{count(len(run.rows), 'goal')} held{sealed}", _HEADER]
    lines += [_row(r) for r in run.rows]
    return "\n".join(lines)


def render_runs(runs: Sequence[PolicyRun]) -> str:
    return "\n\n".join(render_run(r) for r in runs)


def runs_json(runs: Sequence[PolicyRun]) -> list[dict[str, Any]]:
    """``bureau simulate --adversarial --json``: per policy, per attack, as data."""
    return [{"policy": run.policy, "epochs": list(run.epochs), "seconds": run.seconds,
             "sealed_reports_unchanged": run.sealed_reports_unchanged,
             "attacks": [{"name": r.attack.name, "victim": r.attack.victim,
                          "metric": r.attack.metric, "baseline": r.baseline,
                          "attacked": r.attacked, "change": r.change,
                          "before_later": r.before_later, "goal": r.attack.goal.text,
                          "held": r.held} for r in run.rows]}
            for run in runs]
