"""The simulation's result as text: the agents' reports, the evaluators' records, and
the findings the simulation exists to show."""

from __future__ import annotations

from bureau.simulate.driver import AgentRow, Result


def _num(x: float | None, width: int = 6) -> str:
    return f"{x:.3f}".rjust(width) if x is not None else "-".rjust(width)


def findings(result: Result) -> dict[str, bool]:
    """What should hold; each is printed and tested."""
    honest, bluffer = result.score("honest"), result.score("bluffer")
    harsh, generous = result.evaluator("harsh").stats, result.evaluator("generous").stats
    constant = result.evaluator("constant").stats
    selfish = result.evaluator("self-dealing")
    return {
        "honest agents score above bluffers": bool(honest and bluffer)
        and min(honest) > max(bluffer),
        "harsh evaluator recentred upwards (offset < 0)": harsh is not None
        and harsh.offset < 0,
        "generous evaluator recentred downwards (offset > 0)": generous is not None
        and generous.offset > 0,
        "constant rater weighs 0": constant is not None and constant.weight == 0,
        "self-dealing attestations all refused": selfish.attempted > 0
        and selfish.refused["SELF_DEALING"] == selfish.attempted and selfish.stats is None,
    }


def render(result: Result) -> str:
    lines: list[str] = []
    epoch = next((r.report.get("epoch") for r in result.agents if r.report), None)
    lines.append(f"{result.calls} calls through the proxy; epochs sealed: "
                 f"{', '.join(map(str, result.epochs_sealed))}; latest reports at epoch {epoch}")
    lines.append("derived outcomes reported by the proxy: " + (", ".join(
        f"{k} {v}" for k, v in sorted(result.derived.items())) or "none"))
    lines.append("")
    lines.append(f"{'agent':<12} {'kind':<9} {'score':>6} {'interval':>15} {'weight':>7}  outcomes")
    def rank(row: AgentRow) -> float:
        # by score.low, as anything that ranks agents does (SPEC §8): an agent known
        # from little evidence never outranks a long good record
        score = (row.report or {}).get("score")
        return -score["low"] if score else 1.0

    ranked = sorted(result.agents, key=rank)
    for row in ranked:
        rep = row.report or {}
        s = rep.get("score")
        interval = f"{s['low']:.3f} .. {s['high']:.3f}" if s else "-"
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(rep.get("outcomes", {}).items()) if v)
        unscored = ", ".join(f"{k} {v}" for k, v in sorted(rep.get("unscored", {}).items()) if v)
        if unscored:
            outcomes += f"; unscored: {unscored}"
        note = " (computed locally: no report served)" if rep.get("computed") else ""
        lines.append(f"{row.member.name:<12} {row.member.kind:<9} "
                     f"{_num(s['value'] if s else None)} {interval:>15} "
                     f"{_num(s['weight'] if s else None, 7)}  {outcomes or '-'}{note}")
    lines.append("")
    lines.append("evaluators (from the ledger's entries, by bureau.scoring; "
                 "reports never name them)")
    lines.append(f"{'evaluator':<13} {'attested':>8} {'truth n':>7} {'J':>6} {'offset':>7} "
                 f"{'weight':>7}  refused")
    for ev in result.evaluators:
        st = ev.stats
        refused = ", ".join(f"{k} {v}" for k, v in sorted(ev.refused.items())) or "-"
        lines.append(
            f"{ev.member.name:<13} {ev.attempted:>8} {st.n if st else 0:>7} "
            f"{_num(st.informedness if st else None)} {_num(st.offset if st else None, 7)} "
            f"{_num(st.weight if st else None, 7)}  {refused}"
            + ("  (constant rater)" if st and st.constant else ""))
    lines.append("")
    for text, ok in findings(result).items():
        lines.append(f"[{'ok' if ok else 'NO'}] {text}")
    return "\n".join(lines)
