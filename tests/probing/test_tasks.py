"""The task generator: the same batch, byte for byte, every time and everywhere (the
vectors pin it); answers that the text alone determines (an independent solver finds
them); nothing read from a clock, a global random generator or the hash seed."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import blake3
import pytest

import reporters.probing.tasks as tasks_module
from reporters.probing import DEFAULT_BATCH_SIZE, GENERATOR, KINDS, batch, task
from reporters.probing.tasks import batch_bytes
from tests.probing.solver import solve

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "probing" / "batches.json"
ROOT = Path(__file__).resolve().parents[2]


def _cases() -> list[dict[str, Any]]:
    doc: dict[str, Any] = json.loads(VECTORS.read_text())
    assert doc["generator"] == GENERATOR
    cases: list[dict[str, Any]] = doc["cases"]
    return cases


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['seed'][:8]}-{c['epoch']}")
def test_the_batch_is_the_pinned_one(case: dict[str, Any]) -> None:
    seed = bytes.fromhex(case["seed"])
    made = batch(case["epoch"], seed, case["size"])
    assert [t.to_json() for t in made] == case["tasks"]
    assert blake3.blake3(batch_bytes(case["epoch"], seed, case["size"])).hexdigest() == \
        case["blake3"]


def test_the_vectors_cover_every_kind() -> None:
    kinds = {t["kind"] for case in _cases() for t in case["tasks"]}
    assert kinds == set(KINDS)
    assert {t["answer"]["type"] for case in _cases() for t in case["tasks"]} >= {
        "integer", "choice"}


@pytest.mark.slow
def test_another_process_with_another_hash_seed_makes_the_same_bytes() -> None:
    """Nothing in a batch depends on the process: hash randomisation, the global
    random generator's state, the time."""
    script = ("import sys, random, time; random.seed(time.time_ns()); "
              "from reporters.probing.tasks import batch_bytes; "
              "sys.stdout.buffer.write(batch_bytes(82620, bytes.fromhex('a5' * 32), 200))")
    outputs = set()
    for hash_seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env,
                              cwd=ROOT, timeout=120, check=True)
        outputs.add(done.stdout)
    assert outputs == {batch_bytes(82620, bytes.fromhex("a5" * 32), 200)}


def test_the_generator_reads_no_clock_and_no_global_random() -> None:
    source = Path(tasks_module.__file__).read_text()
    for name in ("import random", "import time", "datetime", "os.urandom", "hash(", "secrets"):
        assert name not in source, name


def test_the_text_alone_determines_the_answer() -> None:
    """An independent solver, reading only the text, finds every answer (10,000 tasks
    over 200 epochs and seeds): no task is ambiguous, no answer is wrong."""
    seen: collections.Counter[str] = collections.Counter()
    for epoch in range(200):
        for t in batch(epoch, bytes([epoch % 256, 7]) * 16, 50):
            reply = solve(t.text)
            assert reply.lower() == t.answer.text.lower(), t.to_json()
            assert t.check(reply), t.to_json()
            seen[t.kind] += 1
    assert set(seen) == set(KINDS) and min(seen.values()) == 2000


def test_kinds_cycle_and_tasks_are_indexable() -> None:
    seed = b"s" * 32
    whole = batch(7, seed)
    assert len(whole) == DEFAULT_BATCH_SIZE
    assert [t.kind for t in whole[:10]] == list(KINDS) * 2
    assert whole[37] == task(7, 37, seed)
    assert batch(7, seed, 5) == whole[:5]
    assert [t.probe_id for t in whole[:2]] == ["v1.7.0", "v1.7.1"]


def test_seeds_and_epochs_make_different_batches() -> None:
    batches = [tuple(t.text for t in batch(e, s, 20)) for e in range(3)
               for s in (b"a" * 32, b"b" * 32)]
    assert len(set(batches)) == 6
    # small tasks ("Write 45 in binary.") may come again by chance; most do not
    assert len({text for b in batches for text in b}) >= 0.95 * 120


def test_tasks_are_ascii_and_their_answers_integers_or_words() -> None:
    for t in batch(1, b"x" * 32, 500):
        assert t.text.isascii()
        value = t.answer.value
        assert isinstance(value, str) or (isinstance(value, int) and abs(value) < 2**53)


def test_bad_arguments_are_refused() -> None:
    for epoch, index, seed in ((-1, 0, b"s"), (0, -1, b"s"), (2**64, 0, b"s"), (0, 0, b"")):
        with pytest.raises(ValueError):
            task(epoch, index, seed)
    with pytest.raises(ValueError):
        batch(0, b"s", -1)
