"""``bureau-check monitor``: follow a bureau's ``/checkpoint`` as Sigstore's and Go's
log monitors do. The last verified head (size and root) is kept in a state file; each
new head must be a proven extension of it: a consistency proof *from the kept size and
root* to the new size and root — never from the sizes the answer states. A head that is
smaller, or the same size with another root, or that the proof does not carry, is an
inconsistency: the bureau has shown two histories. The monitor then stops, says so,
keeps its state as it was, and writes both notes beside the state file
(``<state>.evidence.json``): two notes signed with the bureau's key that cannot both be
true are the proof to show anyone.

The state also keeps the bureau's key history. A later history may only add keys (the
kept one is a prefix of it), and the kept head must still verify under it: a bureau
cannot rotate its key "back in time" over a head it already signed.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from reporters import (
    KeyHistory,
    TreeHead,
    VerificationError,
    VerifiedCheckpoint,
    verify_consistency,
)
from reporters.check.bureau import Bureau, CannotCheck, CheckFailed, Trust, open_note
from reporters.check.checks import NO_WITNESSES, Outcome, Witnessing


@dataclass(frozen=True)
class State:
    """The last head verified, as kept between runs."""

    url: str
    vkey: str
    size: int
    root: str  # lowercase hex
    note: str  # the note as served, signatures and all
    checked_at: float
    keys: list[dict[str, Any]] | None = None  # the key history, as /v1/bureau served it

    @classmethod
    def read(cls, path: Path) -> State | None:
        try:
            doc = json.loads(path.read_text())
            state = cls(**{k: doc[k] for k in ("url", "vkey", "size", "root", "note",
                                               "checked_at")}, keys=doc.get("keys"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise CannotCheck(f"{path}: not a monitor state file ({exc})") from None
        if (not isinstance(state.url, str) or not isinstance(state.vkey, str)
                or type(state.size) is not int or state.size < 0
                or not isinstance(state.root, str) or not isinstance(state.note, str)):
            raise CannotCheck(f"{path}: not a monitor state file (a field of the wrong type)")
        try:
            TreeHead(state.size, state.root)
            if state.keys is not None:
                KeyHistory.from_json(state.keys)
        except VerificationError as exc:
            raise CannotCheck(f"{path}: not a monitor state file ({exc.detail})") from None
        return state

    @property
    def head(self) -> TreeHead:
        return TreeHead(self.size, self.root)

    def history(self) -> KeyHistory | None:
        return None if self.keys is None else KeyHistory.from_json(self.keys)

    def write(self, path: Path) -> None:
        _write_atomically(path, asdict(self))


def _write_atomically(path: Path, doc: dict[str, Any]) -> None:
    """Write, fsync, rename: a crash leaves the old file or the new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as fh:
        json.dump(doc, fh, indent=2)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _inconsistent(state_path: Path, state: State, note: str, why: str) -> CheckFailed:
    evidence = state_path.with_name(state_path.name + ".evidence.json")
    _write_atomically(evidence, {"why": why, "earlier": state.note, "later": note,
                                 "url": state.url, "vkey": state.vkey,
                                 "found_at": time.time()})
    return CheckFailed(f"INCONSISTENT: {why} (both notes kept in {evidence})")


async def monitor_step(bureau: Bureau, trust: Trust, state_path: Path,
                       witnessing: Witnessing = NO_WITNESSES) -> Outcome:
    """One look at ``/checkpoint`` against the state file; the state moves on only when
    the new head is verified and consistent with the last one."""
    out = Outcome("monitor", trust)
    state = State.read(state_path)
    if state is not None:
        _same_keys(state, trust, state_path)
    note = await bureau.get_text("/checkpoint", "note")
    head = open_note(note, trust, witnessing.witnesses, witnessing.threshold,
                     f"{bureau.url}/checkpoint")
    out.facts.update(size=head.size, root=head.root_hex,
                     cosignatures=[c.witness for c in head.cosignatures])
    if state is None:
        out.step(f"first head seen: size {head.size}, root {head.root_hex}; kept in "
                 f"{state_path}")
    elif head.size < state.size:
        raise _inconsistent(state_path, state, note, f"the bureau rewound its tree: it "
                            f"now shows size {head.size}, after size {state.size}")
    elif head.size == state.size:
        if head.root_hex != state.root:
            raise _inconsistent(state_path, state, note, f"two roots at size {head.size}: "
                                f"{state.root} before, {head.root_hex} now")
        out.step(f"no new head: size {head.size}, root {head.root_hex}")
    else:
        await _extends(bureau, state, head, state_path, note)
        out.step(f"size {state.size} -> {head.size}: consistent; root {head.root_hex}")
    out.facts["previous"] = None if state is None else {"size": state.size,
                                                        "root": state.root}
    State(bureau.url, trust.vkey, head.size, head.root_hex, note, time.time(),
          trust.history.as_json()).write(state_path)
    return out


def _same_keys(state: State, trust: Trust, state_path: Path) -> None:
    """The key history served now only adds keys to the one kept, and the head kept
    still verifies under it."""
    kept = state.history()
    if kept is None:  # a state file written before key histories
        if trust.history.with_vkey(state.vkey) is None:
            raise CheckFailed(f"the state in {state_path} was kept for the key {state.vkey}, "
                              "which is not in the bureau's key history (another bureau?)")
    elif not trust.history.extends(kept):
        raise CheckFailed(f"the bureau's key history changed: {kept.describe()} was kept in "
                          f"{state_path}, /v1/bureau now serves {trust.history.describe()}")
    open_note(state.note, trust, (), 0, f"the head kept in {state_path}, under the key "
              "history served now,")


async def _extends(bureau: Bureau, state: State, head: VerifiedCheckpoint, state_path: Path,
                   note: str) -> None:
    proof = await bureau.consistency(state.size, head)
    try:
        verify_consistency(proof, state.head, head)
    except VerificationError as exc:
        raise _inconsistent(state_path, state, note, f"the tree of size {head.size} does "
                            f"not extend the tree of size {state.size} kept before "
                            f"({exc.code}: {exc.detail})") from None
