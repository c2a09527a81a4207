"""An independent solver of the probe tasks: it reads only a task's text, as an agent
would, and works the answer out its own way (Python's own parser for the arithmetic,
a search over the sequence families, ``json``/``csv`` for the records). The tests hold
its answers equal to the generator's, so a task whose text does not determine its
answer fails them. The test agents answer with it too."""

from __future__ import annotations

import ast
import csv
import io
import itertools
import json
import operator
import re
from typing import Any

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def _arith(node: ast.AST) -> int:
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_arith(node.left), _arith(node.right))
    raise ValueError(f"not plain integer arithmetic: {ast.dump(node)}")


def _boolean(node: ast.AST, names: dict[str, bool]) -> bool:
    if isinstance(node, ast.Expression):
        return _boolean(node.body, names)
    if isinstance(node, ast.Name):
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _boolean(node.operand, names)
    if isinstance(node, ast.BoolOp):
        values = [_boolean(v, names) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    raise ValueError(f"not a boolean expression: {ast.dump(node)}")


def _next_term(terms: list[int]) -> int:
    """The next term under the first family that fits every term shown."""
    diffs = [b - a for a, b in itertools.pairwise(terms)]
    if len(set(diffs)) == 1:
        return terms[-1] + diffs[0]
    if all(a != 0 and b % a == 0 for a, b in itertools.pairwise(terms)):
        ratios = {b // a for a, b in itertools.pairwise(terms)}
        if len(ratios) == 1:
            return terms[-1] * ratios.pop()
    if all(terms[i] == terms[i - 1] + terms[i - 2] for i in range(2, len(terms))):
        return terms[-1] + terms[-2]
    second = [b - a for a, b in itertools.pairwise(diffs)]
    if len(set(second)) == 1:
        return terms[-1] + diffs[-1] + second[0]
    raise ValueError(f"no family fits {terms}")


def _table(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text.strip())))


def solve(text: str) -> str:
    """The answer to a task, as a plain reply."""
    if m := re.fullmatch(r"(?:What is|Compute|Calculate|What does|Please work out) "
                         r"([-0-9 ()+*]+?)(?: evaluate to| and reply with the result)?[?.]",
                         text):
        return str(_arith(ast.parse(m[1], mode="eval")))
    if (m := re.search(r"(-?\d+(?:, -?\d+){4,})", text)) and (
            "sequence" in text or "next" in text):
        return str(_next_term([int(x) for x in m[1].split(", ")]))
    if m := re.search(r"(\{.*\})", text):
        record: dict[str, Any] = json.loads(m[1])
        key = re.search(r'value of "(\w+)"|What is (\w+) in the following', text)
        assert key is not None, text
        return str(record[key[1] or key[2]])
    if "log line" in text:
        pairs = dict(re.findall(r"(\w+)=(\S+)", text))
        key = re.search(r"What is (\w+) in this|give (\w+):", text)
        assert key is not None, text
        return pairs[key[1] or key[2]]
    if m := re.search(r"have status (\w+)\?\n(.*)", text, re.S):
        return str(sum(row["status"] == m[1] for row in _table(m[2])))
    if m := re.search(r"has the (most|fewest) visitors in this table\?\n(.*)", text, re.S):
        rows = _table(m[2])
        pick = max if m[1] == "most" else min
        return pick(rows, key=lambda r: int(r["visitors"]))["city"]
    if m := re.fullmatch(r"Convert 0x([0-9a-f]+) to decimal\.|"
                         r"What is hexadecimal ([0-9a-f]+) in decimal\?", text):
        return str(int(m[1] or m[2], 16))
    if m := re.fullmatch(r"What is the binary number ([01]+) in decimal\?|"
                         r"Convert binary ([01]+) to decimal\.", text):
        return str(int(m[1] or m[2], 2))
    if m := re.fullmatch(r"Convert octal ([0-7]+) to decimal\.|What is 0o([0-7]+) in decimal\?",
                         text):
        return str(int(m[1] or m[2], 8))
    if m := re.fullmatch(r"Write (\d+) in hexadecimal\.|What is (\d+) in base 16\?", text):
        return format(int(m[1] or m[2]), "x")
    if m := re.fullmatch(r"Write (\d+) in binary\.|What is (\d+) in base 2\?", text):
        return format(int(m[1] or m[2]), "b")
    if m := re.fullmatch(r"Let A be (\w+), B be (\w+) and C be (\w+)\. What is the value of "
                         r"(.+): true or false\?", text):
        names = {"A": m[1] == "true", "B": m[2] == "true", "C": m[3] == "true"}
        return "true" if _boolean(ast.parse(m[4], mode="eval"), names) else "false"
    if m := re.fullmatch(r"(.*) Who is the (\w+)\?", text):
        above: dict[str, str] = dict(re.findall(r"(\w+) is \w+ than (\w+)\.", m[1]))
        people = set(above) | set(above.values())
        top = (people - set(above.values())).pop()  # nobody is more than them
        bottom = (people - set(above)).pop()
        return top if m[2] in ("tallest", "oldest", "fastest") else bottom
    raise ValueError(f"cannot solve {text!r}")
