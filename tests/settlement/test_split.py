"""The split (SPEC §8.2): largest remainder in integers, properties and known answers."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from bureau.settlement.document import allocate
from bureau.settlement.earn import Earned
from bureau.settlement.split import largest_remainder
from reporters import wire

KEYS = st.text("abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12).map(
    lambda s: "ed25519:" + s)
SCORES = st.dictionaries(KEYS, st.integers(0, 10**9), max_size=40)
POOLS = st.integers(0, 10**15)


@settings(max_examples=400)
@given(POOLS, SCORES)
def test_units_sum_to_the_pool_exactly(pool: int, scores: dict[str, int]) -> None:
    units = largest_remainder(pool, scores)
    assert set(units) == set(scores)
    if any(scores.values()):
        assert sum(units.values()) == pool
    else:  # nobody scores: nothing is paid, the caller reports the pool unpaid
        assert sum(units.values()) == 0


@settings(max_examples=400)
@given(POOLS, SCORES)
def test_each_is_within_one_unit_of_its_exact_share(pool: int, scores: dict[str, int]) -> None:
    total = sum(scores.values())
    units = largest_remainder(pool, scores)
    for key, score in scores.items():
        exact = Fraction(pool * score, total) if total else Fraction(0)
        assert abs(units[key] - exact) < 1
        assert units[key] >= exact.__floor__()  # floor first, then at most one more


@settings(max_examples=200)
@given(POOLS, SCORES, st.randoms(use_true_random=False))
def test_the_order_they_come_in_does_not_matter(pool: int, scores: dict[str, int],
                                                rnd: object) -> None:
    items = list(scores.items())
    rnd.shuffle(items)  # type: ignore[attr-defined]
    assert largest_remainder(pool, dict(items)) == largest_remainder(pool, scores)


@given(POOLS, st.integers(1, 10**9))
def test_one_evaluator_takes_the_whole_pool(pool: int, score: int) -> None:
    assert largest_remainder(pool, {"ed25519:only": score}) == {"ed25519:only": pool}


@given(POOLS, st.lists(KEYS, min_size=2, max_size=30, unique=True), st.integers(1, 10**6))
def test_ties_go_to_the_smaller_key_ids(pool: int, keys: list[str], score: int) -> None:
    units = largest_remainder(pool, dict.fromkeys(keys, score))
    ordered = sorted(keys, key=str.encode)
    base, extra = divmod(pool, len(keys))
    assert [units[k] for k in ordered] == [base + 1] * extra + [base] * (len(keys) - extra)


def test_three_equal_evaluators_and_a_pool_of_100() -> None:
    units = largest_remainder(100, {"ed25519:c": 7, "ed25519:a": 7, "ed25519:b": 7})
    assert units == {"ed25519:a": 34, "ed25519:b": 33, "ed25519:c": 33}


def test_key_order_is_byte_order() -> None:
    # "B" (0x42) sorts before "a" (0x61) in bytes, after it case-folded
    assert largest_remainder(1, {"ed25519:a": 1, "ed25519:B": 1}) == {
        "ed25519:B": 1, "ed25519:a": 0}


def test_nobody_scores_so_the_whole_pool_is_unpaid() -> None:
    nobody = allocate(3, 100, [Earned("ed25519:a", 4, 0.0, 0), Earned("ed25519:b", 0, 0.9, 0)])
    assert nobody.payload() | {"root": None} == {
        "epoch": 3, "pool": 100, "paid": 0, "unpaid": 100, "evaluators": 0, "root": None}
    assert nobody.rows == ()
    empty = allocate(3, 100, [])
    assert empty.payload_bytes() == nobody.payload_bytes()


def test_rows_are_canonical_and_sorted_by_key_id() -> None:
    a = allocate(1, 10, [Earned("ed25519:b", 2, 0.5, 1_000_000),
                         Earned("ed25519:a", 2, 0.25, 500_000)])
    assert a.evaluators == ("ed25519:a", "ed25519:b")
    assert a.rows[0] == wire.canonical_json({"evaluator": "ed25519:a", "units": 3,
                                             "score": 0.5})
    assert (a.paid, a.unpaid, a.units) == (10, 0, (3, 7))


def test_huge_pools_stay_exact() -> None:
    pool = 10**15
    scores = {f"ed25519:{i:03d}": 1 + i * 7919 % 1013 for i in range(997)}
    units = largest_remainder(pool, scores)
    assert sum(units.values()) == pool
    total = sum(scores.values())
    assert all(abs(units[k] - Fraction(pool * s, total)) < 1 for k, s in scores.items())
