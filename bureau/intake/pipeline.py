"""The intake pipeline, numbered against SPEC §5–§6:

1. parse     — the DSSE envelope's shape          (:mod:`bureau.intake.envelope`)
2. verify    — its one Ed25519 signature over PAE (:mod:`bureau.intake.envelope`)
3. decode    — strict JSON payload, schema        (:mod:`bureau.intake.envelope`)
4. authorize — may this signer send this?         (:mod:`bureau.intake.rules`)
5. admit     — does it fit the ledger?            (:mod:`bureau.intake.rules`)
6. append    — group commit, durable before ack   (:mod:`bureau.intake.committer`)

Stages 1–3 are pure and run on worker threads (libsodium releases the GIL, so signature
checks use every core). Stages 4–6 run under the ledger lock in the committer: with
``serve --workers N``, the node's one sequencer (:mod:`bureau.intake.sequencer`), or
this process's own committer while the sequencer is unreachable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from bureau import metrics
from bureau.errors import BureauError, Stage
from bureau.intake.committer import Committer
from bureau.intake.envelope import decode_payload, parse_envelope_bytes, verify_envelope
from bureau.intake.judging import Result
from bureau.intake.sequencer import SequencerLink, SequencerUnreachable
from bureau.intake.state import Submission
from bureau.kinds import SEAL_REQUEST

MAX_BATCH_LINES = 1000
MAX_BATCH_BYTES = 8 * 1024 * 1024
# Below this many envelopes, handing work to threads costs more than it saves.
_PARALLEL_THRESHOLD = 64


def prepare(raw: bytes) -> Submission | BureauError:
    """Stages 1–3 for one envelope. A decode failure still yields a Submission, because a
    correctly signed envelope from a known party is kept as evidence about its signer."""
    try:
        env = parse_envelope_bytes(raw)
        verify_envelope(env)
    except BureauError as err:
        return err
    try:
        payload = decode_payload(env)
    except BureauError as err:
        assert err.code.stage is Stage.DECODE
        return Submission(env, None, err)
    return Submission(env, payload)


def prepare_many(raws: Sequence[bytes]) -> list[Submission | BureauError]:
    return [prepare(r) for r in raws]


def count_refusal(err: BureauError, payload_type: str = "unknown") -> None:
    metrics.REFUSALS_TOTAL.labels(code=err.code.value).inc()
    metrics.INTAKE_TOTAL.labels(payload_type=payload_type, result="rejected").inc()


class Intake:
    """Stages 1–3 here; 4–6 by ``sequencer`` when there is one and it answers, else by
    ``committer`` (this process's committer, under the same head lock)."""

    def __init__(self, committer: Committer, workers: int = 2,
                 sequencer: SequencerLink | None = None) -> None:
        self.committer = committer
        self.sequencer = sequencer
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="verify")
        self._workers = workers

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def _prepare(self, raws: Sequence[bytes]) -> list[Submission | BureauError]:
        if len(raws) < _PARALLEL_THRESHOLD:
            return prepare_many(raws)
        loop = asyncio.get_running_loop()
        step = -(-len(raws) // self._workers)
        chunks = [raws[i:i + step] for i in range(0, len(raws), step)]
        parts = await asyncio.gather(
            *(loop.run_in_executor(self._pool, prepare_many, c) for c in chunks))
        return [item for part in parts for item in part]

    async def submit(self, raws: Sequence[bytes]) -> list[Result]:
        """Run every envelope through the pipeline, in input order, judged independently.

        Raises ``BureauError(UNAVAILABLE)`` when nothing could be written (queue full,
        database away); otherwise every envelope has a result.
        """
        prepared = await self._prepare(raws)
        subs = [p for p in prepared if isinstance(p, Submission)]
        committed = iter(await self._commit(subs))
        results: list[Result] = []
        for p in prepared:
            if isinstance(p, BureauError):
                count_refusal(p)
                results.append(Result("rejected", error=p))
            else:
                r = next(committed)
                if r.error is not None:
                    metrics.REFUSALS_TOTAL.labels(code=r.error.code.value).inc()
                results.append(r)
        return results

    async def _commit(self, subs: list[Submission]) -> list[Result]:
        # An admin seal runs the sealer's hook under the lock, and only a serving
        # process has a sealer: it is committed here (a seal is rare, and the head
        # lock orders it with the sequencer's groups).
        if self.sequencer is not None and subs and all(
                sub.envelope.name != SEAL_REQUEST.payload for sub in subs):
            try:
                return await self.sequencer.submit(subs)
            except SequencerUnreachable:
                metrics.SEQUENCER_FALLBACK_TOTAL.inc()
        return await self.committer.submit(subs)
