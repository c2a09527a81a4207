"""C2SP tlog-witness, the log's side: asking a witness to cosign a new checkpoint.

``POST <submission prefix>/add-checkpoint`` with the body::

    old <the size the witness last cosigned>\\n
    <base64 consistency proof hash>\\n      (zero to 63 lines; none when old is 0)
    \\n
    <the checkpoint note>

The witness answers ``200`` with cosignature lines, ``409`` (``text/x.tlog.size``) with
the size it actually has, or an error: ``400`` a malformed request, ``403`` a signature
it cannot verify, ``404`` an origin it does not know, ``422`` a checkpoint inconsistent
with what it saw (a fork). :func:`read_answer` turns an answer into :data:`Answer`;
:func:`push_checkpoint` is one whole exchange, retrying once from the size a ``409``
names, as the bureau's witness pusher needs it. Protocol violations by the witness
raise :class:`TlogError` (``WITNESS_PROTOCOL``, or ``BAD_SIGNATURE`` for a cosignature
that does not verify); network errors are aiohttp's.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import aiohttp

from reporters._internal.capped import TooLarge, read_capped
from reporters.tlog.checkpoint import Checkpoint, Cosignature
from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import HASH_SIZE
from reporters.tlog.note import COSIGNATURE_V1, SIGNATURE_PREFIX, Verifier, open_note

SIZE_CONTENT_TYPE = "text/x.tlog.size"
MAX_PROOF_LINES = 63
MAX_ANSWER_BYTES = 64 * 1024

_WITNESS_ITEM = re.compile(
    r"(?P<vkey>[^+\s]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]+={0,2})=(?P<url>https?://[^\s,]+)")


@dataclass(frozen=True)
class Witness:
    """A witness: its cosignature/v1 key and its submission prefix URL."""

    verifier: Verifier
    url: str

    def __post_init__(self) -> None:
        if self.verifier.sig_type != COSIGNATURE_V1:
            raise ValueError("a witness's key is a cosignature/v1 (type 0x04) vkey")

    @property
    def name(self) -> str:
        return self.verifier.name

    @property
    def add_checkpoint_url(self) -> str:
        return self.url.rstrip("/") + "/add-checkpoint"


def parse_witnesses(text: str) -> list[Witness]:
    """``BUREAU_WITNESSES``: comma-separated ``vkey=URL`` pairs (SPEC §10)."""
    witnesses = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        match = _WITNESS_ITEM.fullmatch(item)
        if match is None:
            raise TlogError("BAD_KEY", f"{item!r} is not <vkey>=<http(s) URL>")
        witnesses.append(Witness(Verifier.from_vkey(match["vkey"]), match["url"]))
    if len({w.verifier for w in witnesses}) != len(witnesses):
        raise TlogError("BAD_KEY", "a witness is listed twice")
    return witnesses


def add_checkpoint_body(old_size: int, proof: Sequence[bytes], note: str) -> bytes:
    """The ``add-checkpoint`` request body."""
    if old_size < 0 or len(proof) > MAX_PROOF_LINES or any(len(h) != HASH_SIZE for h in proof):
        raise ValueError("old size >= 0 and at most 63 proof hashes of 32 bytes")
    if old_size == 0 and proof:
        raise ValueError("a proof from size 0 is empty")
    lines = [f"old {old_size}", *(base64.b64encode(h).decode() for h in proof), ""]
    return ("".join(line + "\n" for line in lines) + note).encode()


@dataclass(frozen=True)
class Cosigned:
    """``200``: the witness cosigned; ``lines`` are its verified cosignature lines, to be
    served after the note's own signature."""

    cosignature: Cosignature
    lines: str


@dataclass(frozen=True)
class SizeMismatch:
    """``409``: the witness's latest cosigned checkpoint has ``size`` leaves."""

    size: int


@dataclass(frozen=True)
class Refused:
    """Any other answer. ``conflict`` (``422``) means the witness holds a history this
    checkpoint is not consistent with, or a different root at the same size."""

    status: int
    detail: str

    @property
    def conflict(self) -> bool:
        return self.status == 422


Answer = Cosigned | SizeMismatch | Refused


def _read_size(content_type: str | None, body: bytes) -> int:
    text = body.decode("ascii", "replace")
    if (content_type or "").split(";")[0].strip().lower() != SIZE_CONTENT_TYPE:
        raise TlogError("WITNESS_PROTOCOL", f"a 409 answer is {SIZE_CONTENT_TYPE}")
    digits = text[:-1]
    if (not text.endswith("\n") or not digits.isascii() or not digits.isdigit()
            or (digits != "0" and digits.startswith("0")) or len(digits) > 20):
        raise TlogError("WITNESS_PROTOCOL", f"a 409 answer is a size and a newline, not {text!r}")
    return int(digits)


def _read_cosignature(body: bytes, witness: Witness, checkpoint: Checkpoint) -> Cosigned:
    text = body.decode("utf-8", "replace")
    if not text.startswith(SIGNATURE_PREFIX) or not text.endswith("\n"):
        raise TlogError("WITNESS_PROTOCOL", "a 200 answer is signature lines")
    try:
        opened = open_note(checkpoint.text() + "\n" + text, [witness.verifier])
    except TlogError as exc:
        if exc.code == "BAD_SIGNATURE":
            raise
        raise TlogError("WITNESS_PROTOCOL", f"no usable cosignature by {witness.name}: "
                                            f"{exc.detail}") from None
    (verified,) = opened.verified
    if verified.timestamp == 0:
        raise TlogError("WITNESS_PROTOCOL", "a witness's cosignature has a timestamp")
    return Cosigned(Cosignature(witness.name, verified.timestamp), verified.line)


def read_answer(status: int, content_type: str | None, body: bytes, *, witness: Witness,
                checkpoint: Checkpoint) -> Answer:
    """Interpret a witness's answer to ``add-checkpoint`` for ``checkpoint``."""
    if status == 200:
        return _read_cosignature(body, witness, checkpoint)
    if status == 409:
        return SizeMismatch(_read_size(content_type, body))
    detail = body[:200].decode("utf-8", "replace").strip()
    return Refused(status, "".join(c if c.isprintable() else "?" for c in detail))


@dataclass(frozen=True)
class Offer:
    """A checkpoint offered to one witness: the checkpoint, and its note as signed by the
    log (the text sent)."""

    witness: Witness
    checkpoint: Checkpoint
    note: str


async def add_checkpoint(session: aiohttp.ClientSession, offer: Offer, old_size: int,
                         proof: Sequence[bytes], *, timeout: float = 10.0) -> Answer:
    """One ``add-checkpoint`` request."""
    body = add_checkpoint_body(old_size, proof, offer.note)
    async with session.post(offer.witness.add_checkpoint_url, data=body,
                            timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
        try:  # the whole answer (``content.read(n)`` returns what has arrived so far)
            answer = await read_capped(resp, MAX_ANSWER_BYTES)
        except TooLarge:
            raise TlogError("WITNESS_PROTOCOL", "the answer is too long") from None
        return read_answer(resp.status, resp.headers.get("Content-Type"), answer,
                           witness=offer.witness, checkpoint=offer.checkpoint)


ProofFrom = Callable[[int], Awaitable[Sequence[bytes]]]


async def push_checkpoint(session: aiohttp.ClientSession, offer: Offer, known_size: int,
                          proof_from: ProofFrom, *, timeout: float = 10.0) -> Answer:
    """Send the offered checkpoint to its witness from the size the witness is believed
    to have (``known_size``, 0 when unknown). ``proof_from(m)`` gives the consistency
    proof from size ``m`` to the checkpoint's size. On a ``409`` naming a size no larger
    than the checkpoint's, the request is made once more from that size; the answer
    returned is the last one (a :class:`SizeMismatch` then names the witness's size,
    which may be larger than ours if a newer checkpoint reached it first). A witness
    already known to be past this checkpoint is not asked at all: the answer is that
    :class:`SizeMismatch`."""
    if known_size > offer.checkpoint.size:
        return SizeMismatch(known_size)
    answer = await add_checkpoint(session, offer, known_size, await proof_from(known_size),
                                  timeout=timeout)
    if (isinstance(answer, SizeMismatch) and answer.size != known_size
            and answer.size <= offer.checkpoint.size):
        answer = await add_checkpoint(session, offer, answer.size,
                                      await proof_from(answer.size), timeout=timeout)
    return answer
