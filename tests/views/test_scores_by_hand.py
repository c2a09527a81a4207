"""Reports over real HTTP, checked against scores worked out by hand from SPEC §7.

The scenario, with reporter R, agents A and B, evaluators E1 and E2:

epoch 1
  A  four facts with a check (PASS, PASS, PASS, FAIL), all called by E1, who attests
     each correctly (ACCEPTED x3, FAILED_DISCOVERED). E1: n = 4, P = 3, N = 1,
     tp = 3, tn = 1, TPR = 4/5, TNR = 2/3, J = 7/15, w = (4·7/15 + 5·0.25)/(4 + 5),
     offset 0.
  B  a fact with check PASS (ACCEPTED, w 1); an unanswered fact (NO_RESPONSE 0.05, w 1);
     a probe-only interaction that passed (ACCEPTED, w 1); a fact E1 attests ACCEPTED
     (no ground truth: rule 3, w = w_E1); a fact E2 attests FAILED_ADMITTED (0.15 at
     E2's default weight 0.25); a fact where B claimed DECLINED (unscored).
epoch 2
  A  a fact with check FAIL, called by E2, who attests ACCEPTED — wrongly. A's unit is
     FAILED_DISCOVERED by the check (w 1, v 0). E2 now has n = 1, N = 1, tn = 0:
     TPR = 1/2, TNR = 1/3, J = 0, w = 1.25/6, d = 1, offset = 1/6.
  B  E2 attests ACCEPTED_AFTER_CORRECTIONS (2 corrections: 0.70) on a fact with no
     check. Both of E2's verdicts on B are now recentred by 1/6: 0.15 -> 0, 0.70 -> 0.533.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tests.support import BureauUnderTest, kid
from tests.views.support import World, bureau_key, get, next_epoch, open_envelope

Z = 1.96


def by_hand(terms: Sequence[tuple[float, float]]) -> dict[str, float]:
    """SPEC §7: p = (Σw·v + 2·0.5)/(Σw + 2); Wilson at z = 1.96 with n = Σw."""
    n = math.fsum(w for w, _ in terms)
    p = (math.fsum(w * v for w, v in terms) + 2 * 0.5) / (n + 2)
    centre, half = p + Z * Z / (2 * n), Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    denom = 1 + Z * Z / n
    return {"value": round(p, 6), "low": round((centre - half) / denom, 6),
            "high": round((centre + half) / denom, 6), "weight": round(n, 6),
            "interactions": len(terms)}


W1 = (4 * (4 / 5 + 2 / 3 - 1) + 5 * 0.25) / (4 + 5)
W2, OFFSET2 = (1 * 0 + 5 * 0.25) / (1 + 5), 1 * 1.0 / (1 + 5)


Reports = tuple[dict[str, Any], ...]


async def _scenario(bureau: BureauUnderTest) -> Reports:
    """The scenario of the module docstring; A's and B's reports at both epochs, and B's
    first report read again after the second epoch."""
    w = await World.make(bureau)
    a, b = await w.agent("alpha"), await w.agent("beta")
    e1, e2 = await w.agent("evaluator one"), await w.agent("evaluator two")

    for check, outcome in (("PASS", "ACCEPTED"), ("PASS", "ACCEPTED"), ("PASS", "ACCEPTED"),
                           ("FAIL", "FAILED_DISCOVERED")):
        await w.attest(e1, await w.fact(a, e1, check=check), a, outcome)
    await w.fact(b, None, check="PASS")
    await w.fact(b, None, answered=False, latency_ms=None, well_formed=None)
    await w.probe(b, True)
    await w.attest(e1, await w.fact(b, e1), b, "ACCEPTED")
    await w.attest(e2, await w.fact(b, e2), b, "FAILED_ADMITTED")
    await w.fact(b, e2, claimed="DECLINED")
    assert await next_epoch(bureau)

    key = await bureau_key(bureau)
    ra = open_envelope((await get(bureau, f"/v1/agents/{kid(a)}/report"))[1], key)
    rb = open_envelope((await get(bureau, f"/v1/agents/{kid(b)}/report"))[1], key)

    await w.attest(e2, await w.fact(a, e2, check="FAIL"), a, "ACCEPTED")
    await w.attest(e2, await w.fact(b, e2), b, "ACCEPTED_AFTER_CORRECTIONS", corrections=2)
    assert await next_epoch(bureau)

    ra2 = open_envelope((await get(bureau, f"/v1/agents/{kid(a)}/report"))[1], key)
    rb2 = open_envelope((await get(bureau, f"/v1/agents/{kid(b)}/report"))[1], key)
    assert ra2["epoch"] == ra["epoch"] + 1
    status, again = await get(bureau, f"/v1/agents/{kid(b)}/report?epoch={rb['epoch']}")
    assert status == 200
    return ra, rb, ra2, rb2, open_envelope(again, key)


async def test_reports_match_scores_computed_by_hand(v1_bureau: BureauUnderTest) -> None:
    """Under policy v1 (SPEC §7)."""
    ra, rb, ra2, rb2, rb_again = await _scenario(v1_bureau)
    assert ra["score"] == by_hand([(1, 1)] * 3 + [(1, 0)])
    assert ra["score"] == {"value": 0.666667, "low": 0.245115, "high": 0.924919,
                           "weight": 4, "interactions": 4}
    assert ra["outcomes"]["ACCEPTED"] == 3 and ra["outcomes"]["FAILED_DISCOVERED"] == 1
    assert rb["score"] == by_hand([(1, 1), (1, 0.05), (1, 1), (W1, 1.0), (0.25, 0.15)])
    assert rb["score"] == {"value": 0.613584, "low": 0.200094, "high": 0.909744,
                           "weight": 3.596296, "interactions": 5}
    assert rb["unscored"]["DECLINED"] == 1
    assert rb["probes"] == {"passed": 1, "failed": 0}
    assert rb["reliability"]["observed"] == 5
    assert rb["reliability"]["answer_rate"] == round(4 / 5, 6)
    assert rb["name"] == "beta" and rb["value_judgment_share"] == 0
    assert rb["provisional_share"] == 0  # nobody is provisional under v1
    assert rb["ground_truth_share"] == round(2 / 3.596296, 6)

    assert ra2["score"] == by_hand([(1, 1)] * 3 + [(1, 0)] * 2)
    assert ra2["score"] == {"value": 0.571429, "low": 0.212721, "high": 0.868066,
                            "weight": 5, "interactions": 5}
    assert rb2["score"] == by_hand([(1, 1), (1, 0.05), (1, 1), (W1, 1.0),
                                    (W2, max(0.0, 0.15 - OFFSET2)), (W2, 0.70 - OFFSET2)])
    assert rb2["score"] == {"value": 0.608612, "low": 0.202541, "high": 0.904948,
                            "weight": 3.762963, "interactions": 6}

    # The first epoch's reports are still there, unchanged.
    assert rb_again == rb


async def test_reports_match_scores_computed_by_hand_under_v2(
        v2_bureau: BureauUnderTest) -> None:
    """The same scenario under policy v2 (SPEC §7.1): checks grade nobody, so E1 and E2
    stay provisional at the prior 0.25 with no recentring; E2's two verdicts on B count
    as one (K = 1): 0.125 each; the provisional total, 0.5, is under C_prov = 1."""
    ra, rb, ra2, rb2, rb_again = await _scenario(v2_bureau)
    assert ra["score"] == by_hand([(1, 1)] * 3 + [(1, 0)])
    assert ra["ground_truth_share"] == 1 and ra["provisional_share"] == 0
    assert rb["score"] == by_hand([(1, 1), (1, 0.05), (1, 1), (0.25, 1.0), (0.25, 0.15)])
    assert rb["provisional_share"] == round(0.5 / 3.5, 6)
    assert rb["ground_truth_share"] == round(2 / 3.5, 6)
    assert ra2["score"] == by_hand([(1, 1)] * 3 + [(1, 0)] * 2)
    assert rb2["score"] == by_hand([(1, 1), (1, 0.05), (1, 1), (0.25, 1.0),
                                    (0.125, 0.15), (0.125, 0.70)])
    assert rb2["unscored"]["DECLINED"] == 1
    assert rb_again == rb


async def test_reports_name_no_caller_and_no_evaluator(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    a, caller = await w.agent("alpha"), await w.agent("a caller")
    await w.attest(caller, await w.fact(a, caller, check="PASS"), a, "ACCEPTED")
    await w.attest(caller, await w.fact(a, caller), a, "ACCEPTED")
    assert await next_epoch(bureau)
    status, body = await get(bureau, f"/v1/agents/{kid(a)}/report")
    assert status == 200
    payload = open_envelope(body, await bureau_key(bureau))
    text = json_text(payload)
    for secret in (kid(caller), kid(w.reporter)):
        assert secret not in text and secret[8:] not in body.decode()
    assert payload["score"] is not None


def json_text(doc: object) -> str:
    import json

    return json.dumps(doc)
