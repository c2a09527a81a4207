"""C2SP signed notes, vkeys and cosignature/v1 (reporters.tlog.note)."""

from __future__ import annotations

import base64
import hashlib

import nacl.signing
import pytest

from reporters.tlog.errors import TlogError
from reporters.tlog.note import (
    COSIGNATURE_V1,
    ED25519,
    MAX_SIGNATURES,
    Signer,
    Verifier,
    key_hash,
    open_note,
    parse_note,
    sign_note,
)

DASH = "\u2014"

# The example of C2SP signed-note.md ("Verifier keys", "Example").
C2SP_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
C2SP_NOTE = (f"This is an example message.\n\n{DASH} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv"
             "1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n")

# The vectors of Go's golang.org/x/mod/sumdb/note (note_test.go: TestSign, TestOpen):
# the private key "PRIVATE+KEY+PeterNeumann+c74f20a3+<base64 of 0x01 ‖ seed>".
PETER_SEED = base64.b64decode("AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz")[1:]
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = ("If you think cryptography is the answer to your problem,\n"
        "then you don't know what your problem is.\n")
PETER_SIG = (f"{DASH} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZ"
             "SNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n")
ENOCH_SIG = (f"{DASH} EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ov"
             "TG01oOTGwnWLox33WWd1RvMc+QQ=\n")


def peter() -> Verifier:
    return Verifier.from_vkey(PETER_VKEY)


def enoch() -> Verifier:
    return Verifier.from_vkey(ENOCH_VKEY)


def code_of(data: str | bytes, trusted: list[Verifier]) -> str:
    with pytest.raises(TlogError) as info:
        open_note(data, trusted)
    return info.value.code


def test_the_c2sp_example_verifies() -> None:
    opened = open_note(C2SP_NOTE, [Verifier.from_vkey(C2SP_VKEY)])
    assert opened.text == "This is an example message.\n"
    assert [v.verifier.name for v in opened.verified] == ["example.com/foo"]


def test_signing_reproduces_the_go_vector() -> None:
    signer = Signer("PeterNeumann", nacl.signing.SigningKey(PETER_SEED))
    assert signer.verifier.vkey == PETER_VKEY
    assert signer.verifier.key_hash == 0xC74F20A3
    assert sign_note(TEXT, [signer]) == TEXT + "\n" + PETER_SIG


def test_vkeys_round_trip() -> None:
    for vkey in (C2SP_VKEY, PETER_VKEY, ENOCH_VKEY):
        assert Verifier.from_vkey(vkey).vkey == vkey


def test_every_mangled_vkey_is_refused() -> None:
    # As Go's TestNewVerifier: every proper substring and every single-byte change.
    for i in range(len(PETER_VKEY) + 1):
        for j in range(i + 1, len(PETER_VKEY) + 1):
            if (i, j) != (0, len(PETER_VKEY)):
                with pytest.raises(TlogError):
                    Verifier.from_vkey(PETER_VKEY[i:j])
    for i in range(len(PETER_VKEY)):
        mangled = PETER_VKEY[:i] + chr(ord(PETER_VKEY[i]) + 1) + PETER_VKEY[i + 1:]
        with pytest.raises(TlogError):
            Verifier.from_vkey(mangled)
    with pytest.raises(TlogError, match="lowercase"):
        Verifier.from_vkey(PETER_VKEY.replace("c74f20a3", "C74F20A3"))


def test_keys_that_are_not_prime_order_points_are_refused() -> None:
    small_order = bytes(32)  # the identity's encoding: not a valid prime-order point
    material = base64.b64encode(bytes([ED25519]) + small_order).decode()
    with pytest.raises(TlogError, match="prime-order"):
        Verifier.from_vkey(f"x+{key_hash('x', ED25519, small_order):08x}+{material}")


def test_opening_with_known_and_unknown_keys() -> None:
    note = TEXT + "\n" + PETER_SIG + ENOCH_SIG
    opened = open_note(note, [peter()])
    assert [v.verifier for v in opened.verified] == [peter()]
    assert [s.name for s in opened.unverified] == ["EnochRoot"]
    opened = open_note(note, [peter(), enoch()])
    assert [v.verifier.name for v in opened.verified] == ["PeterNeumann", "EnochRoot"]
    assert opened.unverified == ()
    assert code_of(note, []) == "BAD_KEY"  # no verifiable signature


def test_a_signature_by_a_known_key_that_fails_rejects_the_note() -> None:
    forged = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
    assert code_of(TEXT + "\n" + PETER_SIG + forged, [peter()]) == "BAD_SIGNATURE"
    assert code_of(TEXT.replace("problem,", "problem;") + "\n" + PETER_SIG,
                   [peter()]) == "BAD_SIGNATURE"


def test_repeated_signatures_count_once_and_unknown_ones_are_kept_once() -> None:
    other = Signer("PeterNeumann", nacl.signing.SigningKey(bytes(range(32))))
    opened = open_note(TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG
                       + other.sign(TEXT), [peter()])
    assert len(opened.verified) == 1
    # Same name, another key (another key hash): unknown, ignored, not a failure.
    assert [s.name for s in opened.unverified] == ["EnochRoot", "PeterNeumann"]


def test_a_key_matching_only_by_name_or_only_by_hash_is_unknown() -> None:
    same_hash_other_name = PETER_SIG.replace("PeterNeumann", "PeterNeuman")
    opened = open_note(TEXT + "\n" + PETER_SIG + same_hash_other_name, [peter()])
    assert [s.name for s in opened.unverified] == ["PeterNeuman"]
    assert code_of(TEXT + "\n" + same_hash_other_name, [peter()]) == "BAD_KEY"


def test_two_trusted_keys_with_one_name_and_hash_are_refused() -> None:
    assert open_note(TEXT + "\n" + PETER_SIG, [peter(), peter()]).verified  # one key twice
    # Another key whose 32-bit key hash collides with Peter's (found by brute force in
    # real life; forced here): which of the two should verify is ambiguous.
    colliding = Verifier("PeterNeumann", ED25519, enoch().public_key)
    colliding.__dict__["key_hash"] = peter().key_hash
    with pytest.raises(TlogError, match="two trusted keys"):
        open_note(TEXT + "\n" + PETER_SIG, [peter(), colliding])


@pytest.mark.parametrize("bad", [
    TEXT,                                            # no signatures
    TEXT + "\n",                                     # a blank line and nothing after it
    TEXT + "\n" + PETER_SIG[:-1],                    # no final newline
    "\x01" + TEXT + "\n" + PETER_SIG,                # a control character
    TEXT.replace("\n", "\r\n", 1) + "\n" + PETER_SIG,
    TEXT + "\n" + PETER_SIG.replace("PeterNeumann", "Bad Name"),
    TEXT + "\n" + PETER_SIG.replace("PeterNeumann", "Peter+Neumann"),
    TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
    TEXT + "\n" + PETER_SIG.replace(DASH, "-"),      # a hyphen is not an em dash
    TEXT + "\n" + PETER_SIG.replace(" x08go", "  x08go"),
    TEXT + "\n" + PETER_SIG.replace("AM=", "AN="),   # non-canonical base64 (trailing bits)
    TEXT + "\n" + f"{DASH} PeterNeumann AAAA\n",     # shorter than a key hash and one byte
    TEXT + "\n" + f"{DASH}  AAAAAAAA\n",             # an empty key name
])
def test_malformed_notes_are_refused(bad: str) -> None:
    assert code_of(bad, [peter()]) == "BAD_NOTE"


def test_invalid_utf8_is_refused() -> None:
    assert code_of(b"\xff" + (TEXT + "\n" + PETER_SIG).encode(), [peter()]) == "BAD_NOTE"


def test_signature_count_limits() -> None:
    signers = [Signer(f"k{i}", nacl.signing.SigningKey(bytes([i]) * 32)) for i in range(16)]
    note = sign_note(TEXT, signers)
    assert len(open_note(note, [s.verifier for s in signers]).verified) == 16
    assert code_of(TEXT + "\n" + PETER_SIG * (MAX_SIGNATURES + 1), [peter()]) == "BAD_NOTE"
    assert len(parse_note(TEXT + "\n" + PETER_SIG * MAX_SIGNATURES).signatures) == MAX_SIGNATURES


def test_note_text_may_hold_blank_lines_the_last_one_separates() -> None:
    signer = Signer("k", nacl.signing.SigningKey(bytes(32)))
    text = "first\n\nsecond\n"
    note = sign_note(text, [signer])
    assert open_note(note, [signer.verifier]).text == text


# --------------------------------------------------------------------------- cosignatures

WITNESS_SEED = bytes(range(100, 132))
CHECKPOINT_TEXT = ("example.com/behind-the-sofa\n20852163\n"
                   "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n")


def test_a_cosignature_is_built_as_tlog_cosignature_says() -> None:
    key = nacl.signing.SigningKey(WITNESS_SEED)
    signer = Signer("witness.example/w1", key, COSIGNATURE_V1)
    line = signer.sign(CHECKPOINT_TEXT, timestamp=1679315147)
    name, blob_b64 = line.removeprefix(DASH + " ").removesuffix("\n").split(" ")
    blob = base64.b64decode(blob_b64)
    # key ID = SHA-256(<name> || "\n" || 0x04 || public key)[:4]
    expected_id = hashlib.sha256(b"witness.example/w1\n\x04" + bytes(key.verify_key)).digest()[:4]
    assert name == "witness.example/w1" and blob[:4] == expected_id
    # timestamped_signature: u64 big-endian timestamp, then the 64-byte Ed25519 signature
    assert int.from_bytes(blob[4:12], "big") == 1679315147 and len(blob) == 4 + 8 + 64
    message = b"cosignature/v1\ntime 1679315147\n" + CHECKPOINT_TEXT.encode()
    key.verify_key.verify(message, blob[12:])  # raises if not what the spec says
    opened = open_note(CHECKPOINT_TEXT + "\n" + line, [signer.verifier])
    assert opened.verified[0].timestamp == 1679315147
    assert signer.verifier.vkey.startswith("witness.example/w1+" + expected_id.hex() + "+BA")


def test_a_cosignature_is_not_a_plain_signature_and_back() -> None:
    key = nacl.signing.SigningKey(WITNESS_SEED)
    cosigner, plain = Signer("w", key, COSIGNATURE_V1), Signer("w", key, ED25519)
    assert cosigner.verifier.key_hash != plain.verifier.key_hash
    cosigned = CHECKPOINT_TEXT + "\n" + cosigner.sign(CHECKPOINT_TEXT, timestamp=5)
    assert code_of(cosigned, [plain.verifier]) == "BAD_KEY"
    # The same bytes under the other type's key hash do not verify.
    relabelled = plain.sign(CHECKPOINT_TEXT)
    forged_blob = base64.b64decode(relabelled.split(" ")[2])
    as_cosig = (cosigner.verifier.key_hash.to_bytes(4, "big") + (5).to_bytes(8, "big")
                + forged_blob[4:])
    forged = f"{CHECKPOINT_TEXT}\n{DASH} w {base64.b64encode(as_cosig).decode()}\n"
    assert code_of(forged, [cosigner.verifier]) == "BAD_SIGNATURE"


def test_cosignature_timestamps_are_bounded() -> None:
    signer = Signer("w", nacl.signing.SigningKey(WITNESS_SEED), COSIGNATURE_V1)
    for bad in (None, 0, 2**63):
        with pytest.raises(ValueError):
            signer.sign(CHECKPOINT_TEXT, timestamp=bad)
    key = nacl.signing.SigningKey(WITNESS_SEED)
    too_late = 2**63
    sig = key.sign(b"cosignature/v1\ntime %d\n" % too_late + CHECKPOINT_TEXT.encode()).signature
    blob = signer.verifier.key_hash.to_bytes(4, "big") + too_late.to_bytes(8, "big") + sig
    note = f"{CHECKPOINT_TEXT}\n{DASH} w {base64.b64encode(blob).decode()}\n"
    assert code_of(note, [signer.verifier]) == "BAD_SIGNATURE"


def test_a_pinned_cosignature_vector() -> None:
    """Ed25519 is deterministic: this line is what the witness key above signs at that
    time; the test before this one shows the bytes follow the specification."""
    signer = Signer("witness.example/w1", nacl.signing.SigningKey(WITNESS_SEED), COSIGNATURE_V1)
    assert signer.sign(CHECKPOINT_TEXT, timestamp=1679315147) == COSIGNATURE_VECTOR


COSIGNATURE_VECTOR = (f"{DASH} witness.example/w1 CdzwvQAAAABkGFDLDX+NZ9MhcErxcR1GjveMS97iTtWI"
                      "XzolarW/aXEXkRTSrf2hPe2KZu+CjlpNbLikAEWDlVvTWdilv959HUxzAQ==\n")
