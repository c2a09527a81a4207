"""What an evaluator earns (SPEC §8.2), from scoring inputs: blind truth only, matched
polarity only, the epoch's verdicts only, nothing excluded; and J counted 0 for ratings
that carry no information."""

from __future__ import annotations

from bureau.scoring.evaluators import EvaluatorRecord, evaluator_stats
from bureau.scoring.inputs import Evidence, Exclusion, Probe
from bureau.scoring.policy import policy_named
from bureau.settlement.earn import matched_blind, one_sided, paid_informedness
from tests.scoring.builders import REP, A, att, fact

V2 = policy_named("v2")


def probe(seq: int, of: int, passed: bool) -> Probe:
    return Probe(seq, f"p{seq}", REP, f"i{of}", A, "known", passed)


def test_only_verdicts_a_later_probe_shows_right_earn() -> None:
    facts = (fact(1), fact(2, check="PASS"), fact(3), fact(4), fact(5))
    atts = (att(11, 1, "ACCEPTED"),            # probe after it, passed: earns
            att(12, 2, "ACCEPTED"),            # copied the visible check: nothing
            att(13, 3, "ACCEPTED"),            # the probe was there first: nothing
            att(14, 4, "ACCEPTED"),            # the probe says failed: wrong, nothing
            att(15, 5, "DECLINED"))            # declining takes no part
    probes = (probe(10, 3, True), probe(21, 1, True), probe(22, 4, False),
              probe(23, 5, True))
    ev = Evidence(facts, probes, atts)
    # callers: of % 3 -> caller1 (i1, i4), caller2 (i2, i5), caller0 (i3)
    assert matched_blind(ev, V2, 0, 30) == {"ed25519:caller1": 1}
    assert matched_blind(ev, V2, 11, 30) == {}  # attestation 11 is in an earlier epoch


def test_a_covert_recheck_of_a_checked_call_is_not_blind() -> None:
    """SPEC §8.2 r4 (issue 35): the evaluator read ``check: PASS`` in its file, attested
    ``ACCEPTED``, and the same reporter then probed the call. The probe came after the
    verdict, but the truth it carries was readable before it: nothing is earned, however
    the probe comes out. A call with no check, probed after the verdict, still earns."""
    facts = (fact(1, check="PASS"), fact(2, check="FAIL"), fact(4), fact(7, check="PASS"))
    atts = (att(11, 1, "ACCEPTED"), att(12, 2, "FAILED_DISCOVERED"), att(14, 4, "ACCEPTED"),
            att(17, 7, "ACCEPTED"))
    probes = (probe(21, 1, True), probe(22, 2, False), probe(24, 4, True),
              probe(27, 7, False))
    ev = Evidence(facts, probes, atts)
    # i1 (caller1) and i2, i7 (caller2) were checked before their verdicts; i4 (caller1) was not
    assert matched_blind(ev, V2, 0, 30) == {"ed25519:caller1": 1}


def test_an_excluded_verdict_earns_nothing() -> None:
    ev = Evidence((fact(1),), (probe(21, 1, True),), (att(11, 1, "ACCEPTED"),),
                  exclusions=(Exclusion("a11", "self_dealing"),))
    assert matched_blind(ev, V2, 0, 30) == {}


def test_no_information_no_pay() -> None:
    constant = EvaluatorRecord(verdicts=20, subjects=3, outcomes={"ACCEPTED"},
                               positive_verdicts=20, positives=15, negatives=5, tp=15, tn=0,
                               graded=[(True, 1.0)] * 15 + [(False, 1.0)] * 5)
    stats = evaluator_stats("ed25519:c", constant, V2)
    assert not stats.provisional and not stats.constant  # the weight rule lets it be
    assert stats.informedness > 0  # 1/(N+2) - 1/(P+2): smoothing favours it a little
    assert one_sided(constant, V2) and paid_informedness(stats, constant, V2) == 0.0
    varied = EvaluatorRecord(verdicts=20, subjects=3, outcomes={"ACCEPTED", "FAILED"},
                             positive_verdicts=15, positives=15, negatives=5, tp=15, tn=5,
                             graded=[(True, 1.0)] * 15 + [(False, 0.0)] * 5)
    fair = evaluator_stats("ed25519:f", varied, V2)
    assert paid_informedness(fair, varied, V2) == fair.informedness > 0.75
