"""Probe tasks: questions with one verifiable answer, made from a seed and an epoch number.

:func:`batch` is a pure function of its arguments. It reads no clock, no global random
number generator, no hash seed and nothing of the platform, so ``batch(epoch, seed)``
gives the same tasks, byte for byte, on every machine and Python version, forever
(``tests/vectors/probe-batches.json`` pins a few batches). The accuracy benchmark and
the simulation may use it as the prober does.

**Derivation** (generator ``v1``). Task ``i`` of epoch ``E`` under seed ``S`` takes every
choice it makes from the BLAKE3 extendable output of::

    b"bureau-probe-tasks v1\\x00" || u16(len(S)) || S || u64(E) || u32(i)

(integers big-endian), read 8 bytes at a time as unsigned integers. An integer below
``n`` is drawn by rejection: a draw at or above the largest multiple of ``n`` below
2^64 is discarded and the next one read, so every value is equally likely and no
floating point is involved. The kind of task ``i`` is ``KINDS[i % 5]``; everything else
(the form, the numbers, the names, the wording) is drawn.

A new way of making tasks is a new generator version with its own prefix; ``v1`` never
changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import blake3

from reporters.probing.answers import Answer, check_reply

GENERATOR = "v1"
_PREFIX = b"bureau-probe-tasks v1\x00"

#: The task kinds, in the order task indices cycle through them.
KINDS: tuple[str, ...] = ("arithmetic", "sequences", "parsing", "bases", "logic")
#: Tasks in a batch unless asked otherwise.
DEFAULT_BATCH_SIZE = 100

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ProbeTask:
    """One task: its place (``epoch``, ``index``), its ``kind``, the ``text`` sent to the
    agent, and the ``answer`` it is checked against."""

    epoch: int
    index: int
    kind: str
    text: str
    answer: Answer

    @property
    def probe_id(self) -> str:
        """The ``probe`` of its SPEC §3 ``probe`` entries: ``v1.<epoch>.<index>``. It
        names where the task is in its batch, never its text or its answer."""
        return f"{GENERATOR}.{self.epoch}.{self.index}"

    def check(self, reply: str) -> bool:
        """Whether ``reply`` gives the right answer (:func:`reporters.probing.check_reply`)."""
        return check_reply(self.answer, reply)

    def to_json(self) -> dict[str, Any]:
        """The task as a JSON object (integers and ASCII strings only)."""
        return {"probe": self.probe_id, "epoch": self.epoch, "index": self.index,
                "kind": self.kind, "text": self.text, "answer": self.answer.to_json()}


class _Draws:
    """The choices of one task, read from its BLAKE3 output stream."""

    def __init__(self, material: bytes) -> None:
        self._hash = blake3.blake3(material)
        self._offset = 0

    def _u64(self) -> int:
        chunk = self._hash.digest(length=8, seek=self._offset)
        self._offset += 8
        return int.from_bytes(chunk, "big")

    def below(self, n: int) -> int:
        """Uniform in ``[0, n)``."""
        if n < 1:
            raise ValueError("nothing to draw from")
        limit = (1 << 64) - (1 << 64) % n
        while True:
            x = self._u64()
            if x < limit:
                return x % n

    def between(self, low: int, high: int) -> int:
        """Uniform in ``[low, high]``."""
        return low + self.below(high - low + 1)

    def pick(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """``k`` distinct items in drawn order (a partial Fisher-Yates shuffle)."""
        pool = list(items)
        for i in range(k):
            j = i + self.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]

    def sign(self) -> int:
        return 1 if self.below(2) else -1


def _material(seed: bytes, epoch: int, index: int) -> bytes:
    if not isinstance(seed, bytes | bytearray) or not 1 <= len(seed) <= 0xFFFF:
        raise ValueError("the seed is 1 to 65535 bytes")
    if not 0 <= epoch < 1 << 64 or not 0 <= index < 1 << 32:
        raise ValueError("epoch is 0 to 2^64 - 1 and index 0 to 2^32 - 1")
    return (_PREFIX + len(seed).to_bytes(2, "big") + bytes(seed)
            + epoch.to_bytes(8, "big") + index.to_bytes(4, "big"))


# --------------------------------------------------------------------------- arithmetic

_ARITHMETIC_WORDING = ("What is {}?", "Compute {}.", "Calculate {} and reply with the result.",
                       "What does {} evaluate to?", "Please work out {}.")


def _arithmetic(d: _Draws) -> tuple[str, Answer]:
    small, large = (2, 99), (10, 999)
    shape = d.below(6)
    if shape == 0:
        a, b, c = d.between(*large), d.between(*small), d.between(*small)
        expr, value = f"{a} + {b} * {c}", a + b * c
    elif shape == 1:
        a, b, c = d.between(*large), d.between(*large), d.between(*small)
        expr, value = f"({a} + {b}) * {c}", (a + b) * c
    elif shape == 2:
        a, b, c = d.between(*small), d.between(*small), d.between(*large)
        expr, value = f"{a} * {b} - {c}", a * b - c
    elif shape == 3:
        a, b, c = d.between(*large), d.between(*small), d.between(*small)
        expr, value = f"{a} - {b} * {c}", a - b * c
    elif shape == 4:
        a, b, c, e = (d.between(*small) for _ in range(4))
        expr, value = f"{a} * {b} + {c} * {e}", a * b + c * e
    else:
        a, b, c, e = d.between(*large), d.between(*large), d.between(*small), d.between(*small)
        expr, value = f"({a} - {b}) * ({c} + {e})", (a - b) * (c + e)
    return d.pick(_ARITHMETIC_WORDING).format(expr), Answer.integer(value)


# --------------------------------------------------------------------------- sequences

_SEQUENCE_WORDING = ("What number comes next in the sequence {}?",
                     "Continue this sequence with the next number: {}",
                     "What is the next term of {}, ...?", "Find the next number: {}, ?")


def _sequences(d: _Draws) -> tuple[str, Answer]:
    family = d.below(4)
    if family == 0:  # arithmetic progression, five terms shown
        start, step = d.between(-50, 200), d.sign() * d.between(2, 40)
        terms = [start + step * n for n in range(6)]
    elif family == 1:  # geometric, five terms
        start, ratio = d.between(1, 9), d.between(2, 4)
        terms = [start * ratio ** n for n in range(6)]
    elif family == 2:  # constant second difference, six terms
        a0, step, bend = d.between(-20, 50), d.between(-10, 20), d.between(1, 6)
        terms = [a0 + step * n + bend * n * (n - 1) // 2 for n in range(7)]
    else:  # each term the sum of the two before it, six terms
        terms = [d.between(1, 15), d.between(1, 15)]
        while len(terms) < 7:
            terms.append(terms[-1] + terms[-2])
    shown = ", ".join(str(t) for t in terms[:-1])
    return d.pick(_SEQUENCE_WORDING).format(shown), Answer.integer(terms[-1])


# --------------------------------------------------------------------------- parsing

_PEOPLE = ("Ada", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kira",
           "Lena")
_CITIES = ("Oslo", "Lima", "Pune", "Kyiv", "Graz", "Turin", "Accra", "Quito", "Hanoi", "Perth",
           "Leeds", "Bergen")
_STATUSES = ("shipped", "pending", "returned")
_RECORD_FIELDS = ("qty", "price_cents", "backorder", "weight_g", "shelf")


def _parsing(d: _Draws) -> tuple[str, Answer]:
    form = d.below(4)
    if form == 0:  # a field of a JSON record
        fields = d.sample(_RECORD_FIELDS, 4)
        record: dict[str, Any] = {"sku": f"K-{d.between(1000, 9999)}"}
        for name in fields:
            record[name] = d.between(1, 5000)
        record["warehouse"] = d.pick(_CITIES)
        asked = d.pick(fields)
        text = json.dumps(record, separators=(", ", ": "))
        wording = d.pick(('In this JSON record, what is the value of "{}"? {}',
                          'What is {} in the following record? {}'))
        return wording.format(asked, text), Answer.integer(record[asked])
    if form == 1:  # count the rows of a CSV with a given status
        rows = [(name, d.pick(_CITIES), d.pick(_STATUSES))
                for name in d.sample(_PEOPLE, d.between(5, 8))]
        status = d.pick(_STATUSES)
        table = "\n".join(["name,city,status", *(",".join(r) for r in rows)])
        wording = d.pick(("How many rows of this CSV have status {}?\n{}",
                          "How many people in this table have status {}?\n{}"))
        return wording.format(status, table), Answer.integer(sum(r[2] == status for r in rows))
    if form == 2:  # a field of a log line
        values = {"status": d.pick((200, 201, 204, 404, 500)), "bytes": d.between(100, 99999),
                  "dur_ms": d.between(1, 9999), "retries": d.between(0, 9)}
        line = (f"ts=2026-{d.between(1, 12):02d}-{d.between(1, 28):02d}T{d.between(0, 23):02d}:"
                f"{d.between(0, 59):02d}:{d.between(0, 59):02d}Z level={d.pick(('info', 'warn'))} "
                f"user={d.pick(_PEOPLE).lower()} "
                + " ".join(f"{k}={v}" for k, v in values.items()))
        asked = d.pick(tuple(values))
        wording = d.pick(("What is {} in this log line? {}", "From this log line, give {}: {}"))
        return wording.format(asked, line), Answer.integer(values[asked])
    # the city with the largest or smallest figure in a table
    cities = d.sample(_CITIES, d.between(4, 6))
    figures = d.sample(range(100, 1000), len(cities))  # distinct: one right answer
    table = "\n".join(["city,visitors", *(f"{c},{n}" for c, n in zip(cities, figures,
                                                                   strict=True))])
    largest = bool(d.below(2))
    pick = max if largest else min
    best = cities[figures.index(pick(figures))]
    question = (f"Which city has the {'most' if largest else 'fewest'} visitors in this "
                f"table?\n{table}")
    return question, Answer.choice(best, [(c,) for c in cities])


# --------------------------------------------------------------------------- bases


def _bases(d: _Draws) -> tuple[str, Answer]:
    form = d.below(5)
    if form == 0:
        v = d.between(256, 65535)
        wording = d.pick(("Convert 0x{} to decimal.", "What is hexadecimal {} in decimal?"))
        return wording.format(format(v, "x")), Answer.integer(v)
    if form == 1:
        v = d.between(9, 1023)
        wording = d.pick(("What is the binary number {} in decimal?",
                          "Convert binary {} to decimal."))
        return wording.format(format(v, "b")), Answer.integer(v)
    if form == 2:
        v = d.between(64, 4095)
        wording = d.pick(("Convert octal {} to decimal.", "What is 0o{} in decimal?"))
        return wording.format(format(v, "o")), Answer.integer(v)
    if form == 3:
        while True:  # a digit and a letter in the answer: see answers.py, base 16
            v = d.between(256, 65535)
            hex_text = format(v, "x")
            if any(c.isdigit() for c in hex_text) and any(c.isalpha() for c in hex_text):
                break
        wording = d.pick(("Write {} in hexadecimal.", "What is {} in base 16?"))
        return wording.format(v), Answer.digits(v, 16)
    v = d.between(9, 255)
    wording = d.pick(("Write {} in binary.", "What is {} in base 2?"))
    return wording.format(v), Answer.digits(v, 2)


# --------------------------------------------------------------------------- logic

_BOOLEAN_SHAPES: tuple[tuple[str, Callable[[bool, bool, bool], bool]], ...] = (
    ("(A and not B) or C", lambda a, b, c: (a and not b) or c),
    ("A and (B or not C)", lambda a, b, c: a and (b or not c)),
    ("not (A and B) and C", lambda a, b, c: not (a and b) and c),
    ("(A or B) and not (B and C)", lambda a, b, c: (a or b) and not (b and c)),
    ("A or (not B and not C)", lambda a, b, c: a or (not b and not c)),
    ("not A or (B and C)", lambda a, b, c: not a or (b and c)),
)
_COMPARISONS = (("taller", "tallest", "shortest"), ("older", "oldest", "youngest"),
                ("faster", "fastest", "slowest"))


def _logic(d: _Draws) -> tuple[str, Answer]:
    if d.below(2) == 0:
        a, b, c = (bool(d.below(2)) for _ in range(3))
        shape, fn = d.pick(_BOOLEAN_SHAPES)

        def word(x: bool) -> str:
            return "true" if x else "false"

        text = (f"Let A be {word(a)}, B be {word(b)} and C be {word(c)}. "
                f"What is the value of {shape}: true or false?")
        return text, Answer.boolean(fn(a, b, c))
    names = d.sample(_PEOPLE, d.between(3, 5))  # in order, the first the most
    comparative, most, least = d.pick(_COMPARISONS)
    pairs = [f"{names[i]} is {comparative} than {names[i + 1]}." for i in range(len(names) - 1)]
    statements = " ".join(d.sample(pairs, len(pairs)))
    top = bool(d.below(2))
    text = f"{statements} Who is the {most if top else least}?"
    return text, Answer.choice(names[0] if top else names[-1], [(n,) for n in names])


_MAKERS: dict[str, Callable[[_Draws], tuple[str, Answer]]] = {
    "arithmetic": _arithmetic, "sequences": _sequences, "parsing": _parsing,
    "bases": _bases, "logic": _logic}


def task(epoch: int, index: int, seed: bytes) -> ProbeTask:
    """Task ``index`` of ``epoch``'s batch under ``seed``."""
    kind = KINDS[index % len(KINDS)]
    text, answer = _MAKERS[kind](_Draws(_material(seed, epoch, index)))
    return ProbeTask(epoch, index, kind, text, answer)


def batch(epoch: int, seed: bytes, size: int = DEFAULT_BATCH_SIZE) -> tuple[ProbeTask, ...]:
    """The first ``size`` tasks of ``epoch`` under ``seed``: the same, byte for byte,
    every time it is called, anywhere."""
    if size < 0:
        raise ValueError("size must not be negative")
    return tuple(task(epoch, i, seed) for i in range(size))


def batch_bytes(epoch: int, seed: bytes, size: int = DEFAULT_BATCH_SIZE) -> bytes:
    """A batch as JSON text, one task a line, keys sorted: what the vectors pin."""
    return b"".join(json.dumps(t.to_json(), sort_keys=True, separators=(",", ":"),
                               ensure_ascii=True).encode("ascii") + b"\n"
                    for t in batch(epoch, seed, size))

