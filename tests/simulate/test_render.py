"""What the simulation prints, read as words (moved from tests/cli/test_copy.py: a test
of the simulation's text belongs with the simulation's tests, the only ones that may
import bureau.simulate)."""

from __future__ import annotations

from bureau.scoring.policy import DEFAULT_POLICY_NAME, KNOWN_POLICIES
from bureau.simulate.adversarial.render import policy_label


def test_v1_is_labelled_superseded() -> None:
    assert "superseded" in policy_label("v1") and "NO rows" in policy_label("v1")
    assert "default" in policy_label(DEFAULT_POLICY_NAME)
    for name in set(KNOWN_POLICIES) - {DEFAULT_POLICY_NAME}:
        assert "superseded" in policy_label(name)
