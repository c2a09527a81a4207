"""``bureau-check`` against a bureau the tests play (``tests/client/hostile.py``): a real
server on loopback serving crafted answers signed with real keys — which is what a
hostile bureau is. Each finding of issue 20's point 1 has its test here: a forged
extension (finding 1), a report of another epoch or an older one (3), answers too large
or too slow (4), answers of the wrong shape (6); and the key history: a signature by a
key the ledger never had, or not in force where it stands, fails. The property test at
the end drives the monitor with random proofs, sizes, notes, truncations and forks."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nacl.signing
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reporters import wire
from reporters.check import cli
from reporters.check.bureau import CAPS
from reporters.check.monitor import State
from reporters.tlog import merkle
from tests.client.hostile import HostileBureau, Keys, Ledger, Tree, note, rotated_ledger

JSON = "application/json"


@pytest.fixture
def bureau() -> Iterator[HostileBureau]:
    with HostileBureau(rotated_ledger()).serving() as served:
        yield served


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    """``bureau-check ARGS`` as its ``main`` runs; the status and the lines it printed.
    Whatever the bureau served, nothing reaches standard error (no traceback)."""
    status = cli.main(list(args))
    out, err = capsys.readouterr()
    assert err == "", err
    return status, out.splitlines()


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """A check that must not pass: exit 1 or 2, one line saying so (then, once the keys
    are known, the line saying which), never a crash."""
    status, lines = run(capsys, *args)
    assert status in (1, 2), lines
    assert len(lines) in (1, 2), lines
    assert all(line.startswith("  bureau key ") for line in lines[1:]), lines
    word = "FAILED" if status == 1 else "CANNOT CHECK"
    assert lines[0].startswith(f"bureau-check {args[0]}: {word}: "), lines
    assert "unexpected error" not in lines[0], lines
    return status, lines[0]


def test_an_honest_rotated_bureau_verifies(bureau: HostileBureau,
                                           capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    """Reports, notes and checkpoints before and after the rotation each verify under
    the key in force where they stand."""
    ledger = bureau.ledger
    status, lines = run(capsys, "report", bureau.url, ledger.agent)
    assert status == 0, lines
    assert "NOT pinned" in lines[1] and "from seq 21" in lines[1]
    assert any("it is the latest report" in line for line in lines)
    for epoch in ("0", "1", "2"):
        status, lines = run(capsys, "report", bureau.url, ledger.agent, "--epoch", epoch)
        assert status == 0, lines
    genesis = ledger.keys.vkey(ledger.keys.history[0][1])
    status, lines = run(capsys, "report", bureau.url, ledger.agent, "--vkey", genesis)
    assert status == 0 and "pinned (--vkey); the rest of the key history" in lines[1], lines
    status, lines = run(capsys, "inclusion", bureau.url, ledger.tree.ids[24], "--seq", "25")
    assert status == 0 and any("is leaf 24 (seq 25)" in line for line in lines), lines
    state = tmp_path / "state.json"
    status, lines = run(capsys, "monitor", bureau.url, "--state", str(state), "--once")
    assert status == 0, lines
    assert [k["from_seq"] for k in json.loads(state.read_text())["keys"]] == [1, 21]


# ----------------------------------------------------------------- finding 1: the monitor


def test_the_issues_forged_extension_fails_the_monitor(bureau: HostileBureau,
                                                       capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    """Kept size 10; served size 32 with root H(0x01 ‖ R10 ‖ x) and the "proof"
    {"from": 16, "to": 32, "hashes": [x]}: INCONSISTENT, exit 1, the state unmoved."""
    ledger, state = bureau.ledger, tmp_path / "state.json"
    bureau.answers["/checkpoint"] = (200, ledger.note(10).encode(), "text/plain")
    assert run(capsys, "monitor", bureau.url, "--state", str(state), "--once")[0] == 0
    kept = state.read_text()
    x = merkle.leaf_hash(b"x")
    forged = merkle.node_hash(ledger.tree.root(10), x)
    bureau.answers["/checkpoint"] = (200, note(32, forged, ledger.keys.at(32)).encode(),
                                     "text/plain")
    for proof in ({"from": 16, "to": 32, "hashes": [x.hex()]},
                  {"from": 10, "to": 32, "hashes": [x.hex()]}):
        bureau.answers["/v1/proofs/consistency"] = (200, json.dumps(proof).encode(), JSON)
        status, line = refused(capsys, "monitor", bureau.url, "--state", str(state), "--once")
        assert status == 1 and "INCONSISTENT" in line and "does not extend" in line, line
        assert state.read_text() == kept
    evidence = json.loads((tmp_path / "state.json.evidence.json").read_text())
    assert evidence["later"] == bureau.answers["/checkpoint"][1].decode()


def test_the_monitor_moves_on_only_with_a_proven_extension(bureau: HostileBureau,
                                                          capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    ledger, state = bureau.ledger, tmp_path / "state.json"
    bureau.answers["/checkpoint"] = (200, ledger.note(10).encode(), "text/plain")
    assert run(capsys, "monitor", bureau.url, "--state", str(state), "--once")[0] == 0
    del bureau.answers["/checkpoint"]
    status, lines = run(capsys, "monitor", bureau.url, "--state", str(state), "--once")
    assert status == 0 and "size 10 -> 40: consistent" in lines[2], lines
    assert json.loads(state.read_text())["size"] == 40


# ---------------------------------------------------------- finding 3: which report it is


def test_a_report_of_another_epoch_than_asked_fails(bureau: HostileBureau,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    ledger = bureau.ledger
    path = f"/v1/agents/{ledger.agent}/report"
    bureau.answers[path] = (200, ledger.report(2), JSON)
    status, line = refused(capsys, "report", bureau.url, ledger.agent, "--epoch", "1")
    assert status == 1 and "is of epoch 2, not of epoch 1 (--epoch)" in line


def test_an_older_report_served_as_the_latest_fails(bureau: HostileBureau,
                                                    capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    """A cache serves the agent's better, older report: without --epoch it must be the
    latest sealed one /v1/checkpoints/latest names."""
    ledger = bureau.ledger
    bureau.answers[f"/v1/agents/{ledger.agent}/report"] = (200, ledger.report(1), JSON)
    status, line = refused(capsys, "report", bureau.url, ledger.agent)
    assert status == 1 and "is of epoch 1, but the latest sealed epoch is 3" in line
    old = tmp_path / "old.json"
    old.write_bytes(ledger.report(1))
    status, line = refused(capsys, "report", bureau.url, ledger.agent, "--envelope", str(old))
    assert status == 1 and "not the latest report" in line
    assert run(capsys, "report", bureau.url, ledger.agent, "--envelope", str(old),
               "--epoch", "1")[0] == 0
    # and a latest checkpoint older than the report is not the latest either
    bureau.answers["/v1/checkpoints/latest"] = (200, ledger.checkpoint(2), JSON)
    del bureau.answers[f"/v1/agents/{ledger.agent}/report"]
    status, line = refused(capsys, "report", bureau.url, ledger.agent)
    assert status == 1 and "later than the latest sealed epoch 2" in line


def test_a_report_whose_head_is_not_its_trees_last_leaf_fails(
        bureau: HostileBureau, capsys: pytest.CaptureFixture[str]) -> None:
    """The inclusion proof must place the report's head at its seq, in the tree of the
    size the note says: a proof of another leaf or another size is refused."""
    ledger = bureau.ledger
    for proof in (ledger.tree.inclusion(29, 30), ledger.tree.inclusion(30, 31),
                  {**ledger.tree.inclusion(30, 30), "leaf_index": 28}):
        bureau.answers["/v1/proofs/inclusion"] = (200, json.dumps(proof).encode(), JSON)
        status, line = refused(capsys, "report", bureau.url, ledger.agent, "--epoch", "2")
        assert status == 1 and "is not entry 30 of that tree" in line, line


# --------------------------------------------------- finding 4: answers too large or slow


@pytest.mark.parametrize("path", ["/checkpoint", "/v1/bureau", "/v1/proofs/consistency"])
def test_an_endless_answer_costs_only_its_cap(bureau: HostileBureau, path: str,
                                              capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    bureau.answers["/checkpoint"] = (200, bureau.ledger.note(10).encode(), "text/plain")
    assert run(capsys, "monitor", bureau.url, "--state", str(state), "--once")[0] == 0
    del bureau.answers["/checkpoint"]
    bureau.handlers[path] = bureau.endless
    status, line = refused(capsys, "monitor", bureau.url, "--state", str(state), "--once")
    assert status == 2 and "larger than any" in line, line
    # what the server got written before the client hung up: the cap and the buffers
    # between (sockets), nowhere near the 2 GiB it would send
    assert bureau.sent < 64 * 1024 * 1024, bureau.sent


def test_a_declared_length_above_the_cap_is_not_read(bureau: HostileBureau,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    big = b"[" + b" " * (CAPS["bureau"] + 10) + b"]"
    bureau.answers["/v1/bureau"] = (200, big, JSON)
    status, line = refused(capsys, "report", bureau.url, bureau.ledger.agent)
    assert status == 2 and f"it declares {len(big)}" in line, line


def test_the_timeout_covers_the_whole_answer(bureau: HostileBureau,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A bureau that answers a byte at a time, forever: --timeout ends it."""
    bureau.handlers["/v1/bureau"] = bureau.drip
    status, line = refused(capsys, "report", bureau.url, bureau.ledger.agent,
                           "--timeout", "0.5")
    assert status == 2 and "no whole answer within 0.5 s (--timeout)" in line, line
    assert bureau.sent > 0  # it was answering, slowly


# ------------------------------------------------------ finding 6: answers of any shape


def _bureau_doc(**changes: Any) -> bytes:
    doc = rotated_ledger().keys.bureau()
    doc.update(changes)
    return json.dumps(doc).encode()


HONEST_BUREAU = rotated_ledger().keys.bureau()
OTHER_VKEY = Keys.one(5).vkey(Keys.one(5).history[0][1])
HOSTILE_BUREAU_ANSWERS = {
    "[]": b"[]", "null": b"null", "a number": b"42", "a string": b'"bureau"',
    "an empty object": b"{}", "deeply nested": b"[" * 100_000 + b"]" * 100_000,
    "deeply nested object": b'{"key":' * 50_000 + b"1" + b"}" * 50_000,
    "truncated": _bureau_doc()[:-7], "empty": b"", "not UTF-8": b'{"key": "\xff"}',
    "NaN": b'{"key": NaN}', "a duplicate key": b'{"key": "a", "key": "b"}',
    "a huge integer": b'{"key": ' + b"9" * 5000 + b"}",
    "key a number": _bureau_doc(key=1), "vkey null": _bureau_doc(vkey=None),
    "keys a string": _bureau_doc(keys="all of them"), "keys empty": _bureau_doc(keys=[]),
    "keys of numbers": _bureau_doc(keys=[1, 2]),
    "from_seq a string": _bureau_doc(keys=[{**HONEST_BUREAU["keys"][0], "from_seq": "1"},
                                           HONEST_BUREAU["keys"][1]]),
    "from_seq true": _bureau_doc(keys=[{**HONEST_BUREAU["keys"][0], "from_seq": True},
                                       HONEST_BUREAU["keys"][1]]),
    "genesis not from 1": _bureau_doc(keys=[{**HONEST_BUREAU["keys"][0], "from_seq": 2},
                                            HONEST_BUREAU["keys"][1]]),
    "out of order": _bureau_doc(keys=list(reversed(HONEST_BUREAU["keys"]))),
    "a vkey of another key": _bureau_doc(keys=[{**HONEST_BUREAU["keys"][0],
                                                "vkey": OTHER_VKEY},
                                               HONEST_BUREAU["keys"][1]]),
    "key in force not the last": _bureau_doc(keys=HONEST_BUREAU["keys"][:1]),
    "admins a number": _bureau_doc(admins=3),
    "origin of another log": _bureau_doc(origin="another.example/log"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_BUREAU_ANSWERS))
def test_any_bureau_description_ends_in_one_line(bureau: HostileBureau, name: str,
                                                 capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    bureau.answers["/v1/bureau"] = (200, HOSTILE_BUREAU_ANSWERS[name], JSON)
    for args in (("report", bureau.url, bureau.ledger.agent),
                 ("monitor", bureau.url, "--state", str(tmp_path / "s.json"), "--once"),
                 ("inclusion", bureau.url, bureau.ledger.tree.ids[0])):
        _, line = refused(capsys, *args)
        assert "/v1/bureau" in line, line


HOSTILE_ANSWERS = [
    ("/checkpoint", b"not a note"), ("/checkpoint", b"\xff\xfe"), ("/checkpoint", b""),
    ("/v1/proofs/consistency", b"[]"), ("/v1/proofs/consistency", b"null"),
    ("/v1/proofs/consistency", b'{"from": "10", "to": 40, "hashes": []}'),
    ("/v1/proofs/consistency", b'{"from": 10, "to": 40, "hashes": "x"}'),
    ("/v1/proofs/consistency", b'{"from": 10, "to": 40, "hashes": [1]}'),
    ("/v1/proofs/consistency", b'{"from": 10, "to": 40, "hashes": ['
     + b",".join([b'"' + b"ab" * 32 + b'"'] * 65) + b"]}"),
    ("/v1/proofs/consistency", b"[" * 10_000),
    ("/v1/proofs/inclusion", b'{"leaf_index": -1, "tree_size": 40, "hashes": []}'),
    ("/v1/proofs/inclusion", b"{}"),
    ("/v1/checkpoints/latest", b"[]"), ("/v1/checkpoints/latest", b'{"payloadType": 1}'),
    ("/v1/checkpoints/latest", b'{"signatures": [[]], "payloadType": '
     b'"application/vnd.bureau.checkpoint.v1+json"}'),
    ("/v1/checkpoints/3/note", b"hostile.example/log\n40\nAAAA\n\n\xe2\x80\x94 x y\n"),
]


#: The routes each command reads (besides /v1/bureau).
USES = {"report": {p for p, _ in HOSTILE_ANSWERS},
        "monitor": {"/checkpoint", "/v1/proofs/consistency"},
        "inclusion": {"/checkpoint", "/v1/proofs/inclusion"}}


@pytest.mark.parametrize(("path", "body"), HOSTILE_ANSWERS)
def test_any_answer_ends_in_one_line(bureau: HostileBureau, path: str, body: bytes,
                                     capsys: pytest.CaptureFixture[str],
                                     tmp_path: Path) -> None:
    ledger, state = bureau.ledger, tmp_path / "state.json"
    bureau.answers["/checkpoint"] = (200, ledger.note(10).encode(), "text/plain")
    assert run(capsys, "monitor", bureau.url, "--state", str(state), "--once")[0] == 0
    del bureau.answers["/checkpoint"]
    bureau.answers[path] = (200, body, JSON)
    for args in (("report", bureau.url, ledger.agent),
                 ("monitor", bureau.url, "--state", str(state), "--once"),
                 ("inclusion", bureau.url, ledger.tree.ids[3], "--seq", "4")):
        if path in USES[args[0]]:
            refused(capsys, *args)


HOSTILE_SETTLEMENTS = [b"[]", b"null", b"{}", b"[" * 10_000, b"\xff\xfe", b"",
                       b'{"payload": 1, "payloadType": [], "signatures": "x"}',
                       b'{"payload": "e30", "payloadType": '
                       b'"application/vnd.bureau.settlement.v1+json", "signatures": []}',
                       b" " * (64 * 1024), b'{"a": 1, "a": 2}', b'{"x": NaN}']


@pytest.mark.parametrize("body", HOSTILE_SETTLEMENTS)
def test_any_settlement_answer_ends_in_one_line(bureau: HostileBureau, body: bytes,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``bureau-check settlement`` against a hostile bureau (issue 35, looked at): every
    shape, a truncation, an answer over its 16 KiB cap — one line, exit 1 or 2."""
    bureau.answers["/v1/settlements/3"] = (200, body, JSON)
    refused(capsys, "settlement", bureau.url, "3")


def test_an_error_answer_is_one_line_whatever_it_holds(bureau: HostileBureau,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    detail = json.dumps({"code": "X", "detail": "line one\nbureau-check report: OK\n\x1b[2J"})
    bureau.answers["/v1/bureau"] = (500, detail.encode(), JSON)
    status, line = refused(capsys, "report", bureau.url, bureau.ledger.agent)
    assert status == 2 and "line one?bureau-check report: OK??[2J" in line, line


# ---------------------------------------------------------------------- the key history


def test_a_report_signed_by_a_key_never_the_ledgers_fails(
        bureau: HostileBureau, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = bureau.ledger
    stranger = nacl.signing.SigningKey(b"\x33" * 32)
    path = f"/v1/agents/{ledger.agent}/report"
    bureau.answers[path] = (200, ledger.report(3, stranger), JSON)
    status, line = refused(capsys, "report", bureau.url, ledger.agent)
    assert status == 1 and "signed by a key that was never the ledger's" in line, line


def test_a_signature_by_a_key_not_in_force_there_fails(
        bureau: HostileBureau, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Both keys are the ledger's; each signs only where it is in force."""
    ledger = bureau.ledger
    genesis, later = ledger.keys.history[0][1], ledger.keys.history[1][1]
    path = f"/v1/agents/{ledger.agent}/report"
    bureau.answers[path] = (200, ledger.report(2, genesis), JSON)  # seq 30: the later key's
    status, line = refused(capsys, "report", bureau.url, ledger.agent, "--epoch", "2")
    assert status == 1 and "the key in force there is" in line and "from seq 21" in line
    bureau.answers[path] = (200, ledger.report(0, later), JSON)  # seq 10: the genesis key's
    assert refused(capsys, "report", bureau.url, ledger.agent, "--epoch", "0")[0] == 1
    del bureau.answers[path]
    bureau.answers["/v1/checkpoints/2"] = (200, ledger.checkpoint(2, genesis), JSON)
    status, line = refused(capsys, "report", bureau.url, ledger.agent, "--epoch", "2")
    assert status == 1 and "the checkpoint 2 does not verify" in line, line
    del bureau.answers["/v1/checkpoints/2"]
    bureau.answers["/checkpoint"] = (200, ledger.note(40, genesis).encode(), "text/plain")
    status, line = refused(capsys, "monitor", bureau.url, "--state",
                           str(tmp_path / "s.json"), "--once")
    assert status == 1 and "is not signed by" in line and "the key in force there" in line


def test_a_key_history_rewritten_under_a_kept_head_fails(
        bureau: HostileBureau, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ledger, state = bureau.ledger, tmp_path / "state.json"
    assert run(capsys, "monitor", bureau.url, "--state", str(state), "--once")[0] == 0
    # the bureau now claims the later key was in force from seq 5: over the kept head
    moved = Keys([(1, ledger.keys.history[0][1]), (5, ledger.keys.history[1][1])])
    bureau.answers["/v1/bureau"] = (200, wire.canonical_json(moved.bureau()), JSON)
    status, line = refused(capsys, "monitor", bureau.url, "--state", str(state), "--once")
    assert status == 1 and "the bureau's key history changed" in line, line


# ------------------------------------------------------------- the property: a hostile log


@pytest.fixture(scope="module")
def log_under_test() -> Iterator[HostileBureau]:
    keys = Keys([(1, nacl.signing.SigningKey(b"\x01" * 32)),
                 (30, nacl.signing.SigningKey(b"\x02" * 32))])
    with HostileBureau(Ledger(Tree.random(40, b"kept"), {0: 40}, keys)).serving() as served:
        yield served


# (repeated items are drawn more often: the issue's attack is a crafted head, its
# proof, and a note signed as it should be, all three at once)
HEADS = ["extension", "same", "fork", "crafted", "crafted", "random root", "rewound"]
PROOFS = ["honest", "random hashes", "the issue's", "the issue's", "sizes altered",
          "truncated", "empty"]
NOTES = ["signed", "signed", "signed", "other key", "truncated", "size changed"]


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(kept=st.integers(1, 40), grow=st.integers(0, 40), head=st.sampled_from(HEADS),
       proof_kind=st.sampled_from(PROOFS), note_kind=st.sampled_from(NOTES),
       salt=st.binary(min_size=8, max_size=8), picks=st.lists(st.integers(0, 2**16),
                                                              min_size=4, max_size=4))
@example(kept=10, grow=22, head="crafted", proof_kind="the issue's", note_kind="signed",
         salt=b"x" * 8, picks=[0, 0, 0, 0])  # the issue's own: 10, then 32 from 16
def test_the_monitor_never_says_ok_for_a_head_that_does_not_extend_the_kept_one(
        log_under_test: HostileBureau, capsys: pytest.CaptureFixture[str], kept: int,
        grow: int, head: str, proof_kind: str, note_kind: str, salt: bytes,
        picks: list[int]) -> None:
    """``picks`` make the choices that depend on others (where a fork starts, where a
    note or an answer is cut, which sizes an answer states)."""
    bureau, ledger = log_under_test, log_under_test.ledger
    bureau.answers.clear()
    keys = ledger.keys
    # the head served, and whether it truly extends the kept one
    base = ledger.tree.ids[:kept]
    if head == "extension":
        served = Tree(base + Tree.random(grow, salt).ids).built()
    elif head == "same":
        served = Tree(list(base)).built()
    elif head == "fork":  # one entry before the kept size differs
        at = picks[0] % kept
        served = Tree(base[:at] + Tree.random(kept - at + grow, salt).ids).built()
    elif head == "rewound":
        served = Tree(base[:picks[0] % kept]).built()
    else:
        served = Tree(base + Tree.random(grow, salt).ids).built()
    size = len(served.ids)
    extends = head in ("extension", "same")
    root = served.root(size)
    x = merkle.leaf_hash(salt)
    if head == "crafted":  # the issue's: the kept root as the left subtree of the "new" one
        size = 2 * 1 << (kept - 1).bit_length()  # twice a power of two at or above kept
        root = merkle.node_hash(ledger.tree.root(kept), x)
    elif head == "random root":
        size, root = max(size, kept + 1), bytes.fromhex(wire.blake3_hex(salt))
    text = note(size, root, keys.at(size))
    if note_kind == "other key":
        text = note(size, root, keys.at(1 if size >= 30 else 40))
    elif note_kind == "truncated":
        text = text[:picks[1] % len(text)]
    elif note_kind == "size changed":
        text = text.replace(f"\n{size}\n", f"\n{size + 1}\n", 1)
    bureau.answers["/checkpoint"] = (200, text.encode(), "text/plain")
    # the proof served
    honest = served.consistency(min(kept, len(served.ids)), len(served.ids)) \
        if len(served.ids) >= kept else {"from": kept, "to": size, "hashes": []}
    proof: Any = {
        "honest": honest,
        "random hashes": {"from": kept, "to": size, "hashes": [
            os.urandom(32).hex() for _ in range(picks[2] % 7)]},
        "the issue's": {"from": [size // 2, kept, size][picks[2] % 3], "to": size,
                        "hashes": [x.hex()]},
        "sizes altered": {**honest, "from": picks[2] % 65, "to": picks[3] % 65},
        "truncated": None, "empty": {"from": kept, "to": size, "hashes": []}}[proof_kind]
    body = json.dumps(proof).encode() if proof is not None else \
        json.dumps(honest).encode()[:picks[3] % 20]
    bureau.answers["/v1/proofs/consistency"] = (200, body, JSON)

    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.json"
        kept_note = note(kept, ledger.tree.root(kept), keys.at(kept))
        State(bureau.url, keys.vkey(keys.at(1000)), kept, ledger.tree.root(kept).hex(),
              kept_note, 0.0, None).write(state)
        status = cli.main(["monitor", bureau.url, "--state", str(state), "--once", "--json"])
        out, err = capsys.readouterr()
        assert err == ""
        lines = out.splitlines()
        assert len(lines) == 1, lines
        doc = json.loads(lines[0])
        assert "unexpected error" not in doc.get("error", ""), doc
        if status == 0:
            assert extends, (head, proof_kind, note_kind, doc)
            assert json.loads(state.read_text())["size"] == size
        else:
            assert status in (1, 2) and not doc["ok"]
            assert json.loads(state.read_text())["size"] == kept  # the state did not move
        if extends and proof_kind == "honest" and note_kind == "signed":
            assert status == 0, doc  # and an honest extension is accepted


def test_the_caps_are_the_documented_ones() -> None:
    doc = " ".join((Path(__file__).resolve().parents[2] / "docs" / "transparency.md")
                   .read_text().split())
    words = {"note": "a note", "proof": "a proof", "checkpoint": "a checkpoint",
             "settlement": "a settlement document", "report": "a report",
             "bureau": "`/v1/bureau`", "error": "an error answer", "tile": "a tile"}
    for kind, cap in CAPS.items():
        size = f"{cap // 1024**2} MiB" if cap % 1024**2 == 0 else f"{cap // 1024} KiB"
        assert f"{words[kind]} {size}" in doc, kind
