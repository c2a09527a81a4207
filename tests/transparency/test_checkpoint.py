"""C2SP checkpoints: the body, the bureau's origin and signer, witness thresholds."""

from __future__ import annotations

import base64

import blake3
import nacl.signing
import pytest

from reporters.tlog.checkpoint import (
    Checkpoint,
    Cosignature,
    cosign,
    default_origin,
    log_signer,
    log_verifier,
    open_checkpoint,
    sign_checkpoint_note,
)
from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import EMPTY_ROOT
from reporters.tlog.note import COSIGNATURE_V1, Signer, Verifier

# The example of C2SP tlog-checkpoint.md.
C2SP_BODY = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"

BUREAU_KEY = nacl.signing.SigningKey(bytes(range(32)))
ORIGIN = default_origin(bytes(BUREAU_KEY.verify_key))
WITNESS_KEYS = [nacl.signing.SigningKey(bytes([i]) * 32) for i in (7, 8, 9)]
WITNESSES = [Signer(f"witness{i}.example/w", k, COSIGNATURE_V1)
             for i, k in enumerate(WITNESS_KEYS)]
ROOT = bytes(range(32))


def bureau() -> Verifier:
    return log_verifier(ORIGIN, bytes(BUREAU_KEY.verify_key))


def test_the_c2sp_example_body_round_trips() -> None:
    checkpoint = Checkpoint.parse(C2SP_BODY)
    assert (checkpoint.origin, checkpoint.size) == ("example.com/behind-the-sofa", 20852163)
    assert checkpoint.root == base64.b64decode("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
    assert checkpoint.text() == C2SP_BODY
    with_extensions = C2SP_BODY + "extension one\nanother\n"
    assert Checkpoint.parse(with_extensions).extensions == ("extension one", "another")
    assert Checkpoint.parse(with_extensions).text() == with_extensions


@pytest.mark.parametrize("bad", [
    C2SP_BODY[:-1],                                       # no final newline
    "example.com/behind-the-sofa\n20852163\n",            # two lines
    "\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",  # empty origin
    C2SP_BODY.replace("20852163", "020852163"),           # leading zero
    C2SP_BODY.replace("20852163", "+20852163"),
    C2SP_BODY.replace("20852163", "-1"),
    C2SP_BODY.replace("20852163", "2085216３"),           # a non-ASCII digit
    C2SP_BODY.replace("20852163", str(2**64)),
    C2SP_BODY.replace("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", "CsUYapGG"),
    C2SP_BODY.replace("2I=", "2J="),                      # non-canonical base64
    C2SP_BODY.replace("2I=", "2I"),                       # unpadded
    C2SP_BODY + "\n",                                     # an empty extension line
    C2SP_BODY + "ext\n\n",
])
def test_bodies_that_are_not_exactly_checkpoints_are_refused(bad: str) -> None:
    with pytest.raises(TlogError) as info:
        Checkpoint.parse(bad)
    assert info.value.code == "BAD_NOTE"


def test_the_default_origin() -> None:
    public = bytes(BUREAU_KEY.verify_key)
    assert "bureau-" + blake3.blake3(public).hexdigest()[:16] == ORIGIN
    assert len(ORIGIN) == 23
    assert bureau().vkey.startswith(ORIGIN + "+")


def _note(size: int = 12, root: bytes = ROOT, witnesses: list[Signer] = WITNESSES[:2],
          timestamp: int = 1_700_000_000) -> str:
    checkpoint = Checkpoint(ORIGIN, size, root)
    note = sign_checkpoint_note(checkpoint, log_signer(ORIGIN, BUREAU_KEY))
    return note + "".join(cosign(checkpoint, w, timestamp + i) for i, w in enumerate(witnesses))


def _code(note: str, **kwargs: object) -> str:
    with pytest.raises(TlogError) as info:
        open_checkpoint(note, bureau(), **kwargs)  # type: ignore[arg-type]
    return info.value.code


def test_a_signed_checkpoint_with_cosignatures_opens() -> None:
    verifiers = [w.verifier for w in WITNESSES]
    for threshold in (0, 1, 2):
        verified = open_checkpoint(_note(), bureau(), witnesses=verifiers, threshold=threshold)
        assert (verified.origin, verified.size, verified.root) == (ORIGIN, 12, ROOT)
        assert verified.cosignatures == (Cosignature("witness0.example/w", 1_700_000_000),
                                         Cosignature("witness1.example/w", 1_700_000_001))
    assert _code(_note(), witnesses=verifiers, threshold=3) == "TOO_FEW_COSIGNATURES"
    # Witnesses nobody asked about are ignored, not counted.
    assert open_checkpoint(_note(), bureau()).cosignatures == ()


def test_one_witness_twice_counts_once() -> None:
    note = _note(witnesses=[WITNESSES[0]])
    cosig = note.splitlines(keepends=True)[-1]
    verifiers = [w.verifier for w in WITNESSES]
    assert _code(note + cosig, witnesses=verifiers, threshold=2) == "TOO_FEW_COSIGNATURES"


def test_a_bad_cosignature_by_a_trusted_witness_rejects_the_note() -> None:
    checkpoint = Checkpoint(ORIGIN, 13, ROOT)  # cosigned a different tree head
    forged = cosign(checkpoint, WITNESSES[1], 1)
    note = _note(witnesses=[WITNESSES[0]]) + forged
    assert _code(note, witnesses=[w.verifier for w in WITNESSES]) == "BAD_SIGNATURE"
    assert open_checkpoint(note, bureau(), witnesses=[WITNESSES[0].verifier]).cosignatures


def test_a_note_the_bureau_did_not_sign_is_refused() -> None:
    other = nacl.signing.SigningKey(bytes([1]) * 32)
    checkpoint = Checkpoint(ORIGIN, 12, ROOT)
    note = sign_checkpoint_note(checkpoint, log_signer(ORIGIN, other))  # same name, other key
    assert _code(note) == "BAD_KEY"
    only_witnesses = checkpoint.text() + "\n" + cosign(checkpoint, WITNESSES[0], 5)
    assert _code(only_witnesses, witnesses=[WITNESSES[0].verifier]) == "BAD_KEY"


def test_the_origin_must_be_the_key_name() -> None:
    signer = Signer(ORIGIN, BUREAU_KEY)
    body = "another-origin\n1\n" + base64.b64encode(ROOT).decode() + "\n"
    assert _code(body + "\n" + signer.sign(body)) == "BAD_NOTE"
    with pytest.raises(ValueError):
        sign_checkpoint_note(Checkpoint("another-origin", 1, ROOT), signer)


def test_the_empty_tree() -> None:
    assert open_checkpoint(_note(0, EMPTY_ROOT), bureau()).size == 0
    assert _code(_note(0, ROOT)) == "BAD_NOTE"


def test_a_note_whose_text_is_not_a_checkpoint_is_refused() -> None:
    note = Signer(ORIGIN, BUREAU_KEY).sign(ORIGIN + "\nnot a size\nroot\n")
    assert _code(ORIGIN + "\nnot a size\nroot\n\n" + note) == "BAD_NOTE"


def test_keys_of_the_wrong_type_are_a_caller_error() -> None:
    with pytest.raises(ValueError):
        open_checkpoint(_note(), WITNESSES[0].verifier)
    with pytest.raises(ValueError):
        open_checkpoint(_note(), bureau(), witnesses=[bureau()])
    with pytest.raises(ValueError):
        open_checkpoint(_note(), bureau(), witnesses=[WITNESSES[0].verifier], threshold=2)
    with pytest.raises(TlogError):
        log_signer("has space", BUREAU_KEY)
