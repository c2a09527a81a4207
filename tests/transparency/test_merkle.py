"""The tree, its stored nodes and its proofs against the definition (tests/transparency/
reference.py) and against the RFC 6962 test vectors."""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Iterator

import pytest

from reporters.tlog import merkle, proofs, verify
from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import Frontier, Node
from tests.transparency import reference as ref

# --------------------------------------------------------------------------- vectors
# The RFC 6962 reference vectors (from Certificate Transparency's reference code), as
# published in transparency-dev/merkle: testonly/constants.go (LeafInputs, RootHashes,
# NodeHashes) and cmd/proofgen/main.go (inclusionProofs, consistencyProofs; leaf indexes
# there are 1-based, here 0-based).

VECTOR_LEAVES = [bytes.fromhex(h) for h in (
    "", "00", "10", "2021", "3031", "40414243", "5051525354555657",
    "606162636465666768696a6b6c6d6e6f")]

VECTOR_ROOTS = [bytes.fromhex(h) for h in (
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")]

VECTOR_NODES: dict[Node, str] = {
    (0, 0): "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    (0, 1): "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    (0, 2): "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
    (0, 3): "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
    (0, 4): "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    (0, 5): "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
    (0, 6): "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
    (0, 7): "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
    (1, 0): "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    (1, 1): "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    (1, 2): "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
    (1, 3): "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
    (2, 0): "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    (2, 1): "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    (3, 0): "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
}

# (leaf index, tree size, proof)
VECTOR_INCLUSION = [
    (0, 1, []),
    (0, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (5, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (1, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]

# (old size, new size, proof)
VECTOR_CONSISTENCY = [
    (1, 1, []),
    (1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
    (6, 7, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
]


def _vector_store() -> dict[Node, bytes]:
    _, nodes = Frontier.empty().extend(merkle.leaf_hash(d) for d in VECTOR_LEAVES)
    return {(level, index): h for level, index, h in nodes}


def test_the_vectors_roots_for_every_size() -> None:
    assert VECTOR_ROOTS[0] == merkle.EMPTY_ROOT
    store = _vector_store()
    for size, root in enumerate(VECTOR_ROOTS):
        assert proofs.root_at(size, store.__getitem__) == root
        assert merkle.root_of(merkle.leaf_hash(d) for d in VECTOR_LEAVES[:size]) == root
        assert ref.mth(VECTOR_LEAVES[:size]) == root


def test_the_vectors_complete_nodes() -> None:
    assert {node: h.hex() for node, h in _vector_store().items()} == VECTOR_NODES


@pytest.mark.parametrize(("index", "size", "expected"), VECTOR_INCLUSION)
def test_the_vectors_inclusion_proofs(index: int, size: int, expected: list[str]) -> None:
    proof = proofs.inclusion_proof(index, size, _vector_store().__getitem__)
    assert [h.hex() for h in proof] == expected
    verify.verify_inclusion(merkle.leaf_hash(VECTOR_LEAVES[index]), index, size, proof,
                            VECTOR_ROOTS[size])


@pytest.mark.parametrize(("old", "new", "expected"), VECTOR_CONSISTENCY)
def test_the_vectors_consistency_proofs(old: int, new: int, expected: list[str]) -> None:
    proof = proofs.consistency_proof(old, new, _vector_store().__getitem__)
    assert [h.hex() for h in proof] == expected
    verify.verify_consistency(old, new, VECTOR_ROOTS[old], VECTOR_ROOTS[new], proof)


def test_consistency_from_the_empty_tree_is_the_empty_proof() -> None:
    # A choice documented in reporters/tlog/verify.py: transparency-dev/merkle refuses
    # every proof from size 0; C2SP tlog-witness and SPEC §9 use the empty proof.
    verify.verify_consistency(0, 8, merkle.EMPTY_ROOT, VECTOR_ROOTS[8], [])
    verify.verify_consistency(0, 0, merkle.EMPTY_ROOT, merkle.EMPTY_ROOT, [])
    for old_root, proof in ((VECTOR_ROOTS[1], []), (merkle.EMPTY_ROOT, [merkle.EMPTY_ROOT])):
        with pytest.raises(TlogError):
            verify.verify_consistency(0, 8, old_root, VECTOR_ROOTS[8], proof)
    with pytest.raises(TlogError):  # sizes are equal (zero) but roots are not
        verify.verify_consistency(0, 0, merkle.EMPTY_ROOT, VECTOR_ROOTS[1], [])


# --------------------------------------------------------------------------- a ledger

N = 300
LEAVES = [hashlib.sha256(b"entry %d" % i).digest() for i in range(N)]  # raw "entry ids"


@functools.cache
def _root(size: int) -> bytes:
    return ref.mth(LEAVES[:size])


@functools.cache
def _path(index: int, size: int) -> list[bytes]:
    return ref.path(index, LEAVES[:size])


@functools.cache
def _proof(old: int, size: int) -> list[bytes]:
    return ref.proof(old, LEAVES[:size])


class CountingStore(dict[Node, bytes]):
    """The node table: refuses nodes never stored, remembers what was read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: set[Node] = set()

    def lookup(self, node: Node) -> bytes:
        self.reads.add(node)
        return self[node]


def _complete_nodes(size: int) -> set[Node]:
    return {(level, index) for level in range(size.bit_length())
            for index in range(size >> level)}


def _batches(total: int, seed: int) -> Iterator[tuple[int, int]]:
    rng, start = random.Random(seed), 0
    while start < total:
        end = min(total, start + rng.choice([1, 1, 2, 3, 7, 16, 33]))
        yield start, end
        start = end


@pytest.fixture(scope="module")
def store() -> CountingStore:
    """Every complete node of the tree over LEAVES, as an appender writes them."""
    nodes = CountingStore()
    frontier = Frontier.empty()
    for start, end in _batches(N, seed=1):
        frontier, new = frontier.extend(merkle.leaf_hash(d) for d in LEAVES[start:end])
        for level, index, h in new:
            assert (level, index) not in nodes  # each node is written once, never updated
            nodes[(level, index)] = h
    return nodes


def test_appending_writes_exactly_the_newly_complete_nodes() -> None:
    frontier = Frontier.empty()
    for start, end in _batches(N, seed=2):
        frontier, new = frontier.extend(merkle.leaf_hash(d) for d in LEAVES[start:end])
        assert frontier.size == end
        assert {(lv, ix) for lv, ix, _ in new} == _complete_nodes(end) - _complete_nodes(start)
        for level, index, h in new:
            assert h == ref.mth(LEAVES[index << level:(index + 1) << level])
        assert frontier.root() == ref.mth(LEAVES[:end])


def test_the_frontier_reads_back_from_stored_nodes(store: CountingStore) -> None:
    for size in range(N + 1):
        loaded = Frontier.load(size, store.__getitem__)
        assert loaded.root() == ref.mth(LEAVES[:size])
        assert len(Frontier.nodes_at(size)) == size.bit_count()
    with pytest.raises(ValueError, match="peaks"):
        Frontier(5, (b"\0" * 32,))


def test_the_stored_root_is_the_definition_at_every_size(store: CountingStore) -> None:
    for size in range(1, N + 1):
        assert proofs.root_at(size, store.__getitem__) == ref.mth(LEAVES[:size]), size


def test_every_proof_up_to_64_is_the_definition_and_verifies(store: CountingStore) -> None:
    for size in range(1, 65):
        root = ref.mth(LEAVES[:size])
        for index in range(size):
            proof = proofs.inclusion_proof(index, size, store.__getitem__)
            assert proof == ref.path(index, LEAVES[:size]), (index, size)
            verify.verify_inclusion(merkle.leaf_hash(LEAVES[index]), index, size, proof, root)
        for old in range(size + 1):
            proof = proofs.consistency_proof(old, size, store.__getitem__)
            assert proof == ref.proof(old, LEAVES[:size]), (old, size)
            verify.verify_consistency(old, size, ref.mth(LEAVES[:old]), root, proof)


def test_any_smaller_tree_is_served_from_the_current_nodes(store: CountingStore) -> None:
    rng = random.Random(3)
    for size in range(1, N + 1):
        index, old = rng.randrange(size), rng.randrange(size + 1)
        store.reads.clear()
        plan = proofs.inclusion_plan(index, size)
        assert plan.hashes(store.lookup) == ref.path(index, LEAVES[:size])
        assert store.reads <= plan.nodes <= _complete_nodes(size)
        store.reads.clear()
        plan = proofs.consistency_plan(old, size)
        assert plan.hashes(dict(store)) == ref.proof(old, LEAVES[:size])
        assert plan.nodes <= _complete_nodes(size)


@pytest.mark.parametrize("size", [1, 2, 3, 1000, 2**20 - 1, 2**20, 10**6, 2**40 + 12345])
def test_a_proof_needs_a_logarithmic_number_of_nodes(size: int) -> None:
    bound = 2 * size.bit_length()
    rng = random.Random(size)
    for _ in range(200):
        assert len(proofs.inclusion_plan(rng.randrange(size), size).nodes) <= bound
        assert len(proofs.consistency_plan(rng.randrange(size + 1), size).nodes) <= bound
    assert len(proofs.root_plan(size).nodes) <= size.bit_length()


def _flips(hashes: list[bytes]) -> Iterator[list[bytes]]:
    """Every copy of ``hashes`` with one byte of one hash changed."""
    for i, h in enumerate(hashes):
        for j in range(len(h)):
            yield [*hashes[:i], h[:j] + bytes([h[j] ^ 0x01]) + h[j + 1:], *hashes[i + 1:]]


def _flip(h: bytes, j: int) -> bytes:
    return h[:j] + bytes([h[j] ^ 0x80]) + h[j + 1:]


@pytest.mark.slow
def test_changing_any_byte_of_an_inclusion_proof_fails(store: CountingStore) -> None:
    for size in range(1, 65):
        root = _root(size)
        for index in range(size):
            leaf = merkle.leaf_hash(LEAVES[index])
            proof = proofs.inclusion_proof(index, size, store.__getitem__)
            for bad in _flips(proof):
                with pytest.raises(TlogError):
                    verify.verify_inclusion(leaf, index, size, bad, root)
            for j in range(32):
                with pytest.raises(TlogError):
                    verify.verify_inclusion(_flip(leaf, j), index, size, proof, root)
                with pytest.raises(TlogError):
                    verify.verify_inclusion(leaf, index, size, proof, _flip(root, j))
            for bad in (proof[:-1], [*proof, root], [root, *proof], proof[::-1]):
                if bad != proof:
                    with pytest.raises(TlogError):
                        verify.verify_inclusion(leaf, index, size, bad, root)


@pytest.mark.slow
def test_changing_any_byte_of_a_consistency_proof_fails(store: CountingStore) -> None:
    for size in range(1, 65):
        new_root = _root(size)
        for old in range(size + 1):
            old_root = _root(old)
            proof = proofs.consistency_proof(old, size, store.__getitem__)
            for bad in _flips(proof):
                with pytest.raises(TlogError):
                    verify.verify_consistency(old, size, old_root, new_root, bad)
            for j in range(32):
                with pytest.raises(TlogError):
                    verify.verify_consistency(old, size, _flip(old_root, j), new_root, proof)
                if not 0 == old < size:  # every tree extends the empty one: no new root binds
                    with pytest.raises(TlogError):
                        verify.verify_consistency(old, size, old_root, _flip(new_root, j), proof)
            for bad in (proof[:-1], [*proof, new_root], [new_root, *proof], proof[::-1]):
                if bad != proof:
                    with pytest.raises(TlogError):
                        verify.verify_consistency(old, size, old_root, new_root, bad)


def _other(value: int, limit: int) -> set[int]:
    """Nearby and related values to change an index or size to, within [0, limit]."""
    return {v for v in (value - 1, value + 1, value ^ 1, value * 2, value // 2, 0, limit)
            if 0 <= v <= limit and v != value}


def test_changing_an_index_or_size_fails(store: CountingStore) -> None:
    """A proof of (index, size) checked as a proof of another (index', size') — against
    the true root of size' — fails unless it *is* the proof of that other statement.
    (Against the original root, a larger size can leave the RFC's computation unchanged:
    leaf 0's path in a tree of 3 is computed as in a tree of 4. That accepts the claim
    "size 4 has root R3", which no signed checkpoint ever makes: clients always take the
    size and root together from one signed tree head.)"""
    checked = 0
    for size in range(1, 65):
        for index in range(size):
            leaf = merkle.leaf_hash(LEAVES[index])
            proof = proofs.inclusion_proof(index, size, store.__getitem__)
            for other_size in _other(size, 64) - {0}:
                for other_index in {index} | _other(index, other_size - 1):
                    if (other_index == index and proof == _path(index, other_size)):
                        continue
                    with pytest.raises(TlogError):
                        verify.verify_inclusion(leaf, other_index, other_size, proof,
                                                _root(other_size))
                    checked += 1
            for other_index in _other(index, size):  # same root, another position
                with pytest.raises(TlogError):
                    verify.verify_inclusion(leaf, other_index, size, proof, _root(size))
        for old in range(size + 1):
            proof = proofs.consistency_proof(old, size, store.__getitem__)
            for other_old in {old} | _other(old, 64):
                for other_new in {size} | _other(size, 64):
                    if (other_old, other_new) == (old, size) or other_old > other_new:
                        continue
                    if proof == _proof(other_old, other_new):
                        continue  # the same proof proves the other claim (e.g. [] for 0 → n)
                    with pytest.raises(TlogError):
                        verify.verify_consistency(other_old, other_new,
                                                  _root(other_old),
                                                  _root(other_new), proof)
                    checked += 1
    assert checked > 10_000


def test_plans_refuse_impossible_requests() -> None:
    for index, size in ((0, 0), (5, 5), (-1, 3)):
        with pytest.raises(ValueError):
            proofs.inclusion_plan(index, size)
    for old, new in ((3, 2), (-1, 2)):
        with pytest.raises(ValueError):
            proofs.consistency_plan(old, new)
    with pytest.raises(ValueError, match="aligned"):
        merkle.subtree_nodes(1, 3)
    with pytest.raises(ValueError):
        merkle.entry_leaf_hash("AB" * 32)


def test_an_entry_leaf_is_the_raw_bytes_of_its_id() -> None:
    entry_id = "00" * 31 + "ff"
    assert merkle.entry_leaf_hash(entry_id) == hashlib.sha256(
        b"\x00" + bytes(31) + b"\xff").digest()
