"""Checking a reply: lenient in form (white space, case, a number in a sentence, a
prefix, grouping) and strict in value (the rule of reporters/probing/answers.py and
docs/probing.md)."""

from __future__ import annotations

import pytest

from reporters.probing import Answer, check_reply

INTEGER = Answer.integer(34665)
NEGATIVE = Answer.integer(-119)
HEX = Answer.digits(16250, 16)  # 3f7a
BINARY = Answer.digits(45, 2)  # 101101
NAMES = Answer.choice("Ben", [("Ada",), ("Ben",), ("Cleo",)])
FALSE = Answer.boolean(False)


@pytest.mark.parametrize(("answer", "reply", "passed"), [
    (INTEGER, "34665", True),
    (INTEGER, "  34665\n", True),
    (INTEGER, "The answer is 34665.", True),
    (INTEGER, "(517 - 626) * 3 = 34665", True),
    (INTEGER, "34,665", True),
    (INTEGER, "**34665**", True),
    (INTEGER, "34665.0", True),
    (INTEGER, "\uff13\uff14\uff16\uff16\uff15", True),  # full-width digits
    (INTEGER, "34665.5", False),
    (INTEGER, "34666", False),
    (INTEGER, "34665 or maybe 34666", False),  # the last number is the answer
    (INTEGER, "thirty-four thousand six hundred sixty-five", False),
    (INTEGER, "x34665", False),
    (INTEGER, "", False),
    (NEGATIVE, "-119", True),
    (NEGATIVE, "\u2212119", True),
    (NEGATIVE, "119", False),
    (HEX, "3f7a", True),
    (HEX, "0x3F7A", True),
    (HEX, "16250 is 3f7a in hexadecimal", True),
    (HEX, "3f7a (a hex number)", True),
    (HEX, "0x3f_7a", True),
    (HEX, "3f7b", False),
    (HEX, "16250", False),  # no letter, no prefix: not read as hexadecimal
    (BINARY, "101101", True),
    (BINARY, "0b0010_1101", True),
    (BINARY, "45 in binary is 101101.", True),
    (BINARY, "101100", False),
    (NAMES, "Ben", True),
    (NAMES, "ben.", True),
    (NAMES, "Ada is older than Ben, so the youngest is Ben", True),
    (NAMES, "Benjamin", False),
    (NAMES, "Ada", False),
    (NAMES, "nobody", False),
    (FALSE, "false", True),
    (FALSE, "False.", True),
    (FALSE, "No", True),
    (FALSE, "true", False),
    (FALSE, "It is not true", False),  # negations are not parsed
])
def test_the_rule(answer: Answer, reply: str, passed: bool) -> None:
    assert check_reply(answer, reply) is passed


def test_an_answer_is_one_of_its_options() -> None:
    with pytest.raises(ValueError):
        Answer.choice("Dee", [("Ada",), ("Ben",)])
    with pytest.raises(ValueError):
        Answer.digits(10, 8)


def test_the_json_form() -> None:
    assert HEX.to_json() == {"type": "digits", "value": 16250, "text": "3f7a", "base": 16}
    assert FALSE.to_json() == {"type": "choice", "value": "false", "text": "false",
                               "options": [["true", "yes"], ["false", "no"]]}
