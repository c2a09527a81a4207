"""The end of a group commit: its refusals bounded, its entries added to the Merkle
tree, and every row written with the head's move in one statement."""

from __future__ import annotations

from bureau.intake.chaining import GroupTx
from bureau.intake.refusals import bound_envelopes
from bureau.storage.chain import write_group
from bureau.storage.tree import pack_nodes
from bureau.transparency.tree import TreeTip, load_tip
from reporters.tlog.merkle import entry_leaf_hash


async def flush(tx: GroupTx) -> None:
    """Write the group's rows, the Merkle tree nodes its entries complete, and move the
    head (one statement, see bureau.storage.chain); first, the refusals past their
    signer's budget lose their envelopes. Every entry appended, whoever appended it (a
    submission, an exclusion, a seal), extends the tree here."""
    if tx.writes.refusals:
        await bound_envelopes(tx.conn, tx.writes.refusals, tx.epoch_start)
    if tx.writes.entries:
        # The committer loaded the frontier with the head; a tool chaining entries
        # itself (genesis, benches) reads it now: the head row has not moved yet.
        tip = tx.state.tree or await load_tip(tx.conn)
        assert tip.size == tx.writes.entries[0][0] - 1, "the tree is not at the head"
        frontier, nodes = tip.frontier.extend(
            entry_leaf_hash(row[1]) for row in tx.writes.entries)
        tx.writes.tree = pack_nodes(nodes)
        tx.state.tree = TreeTip(tx.head, frontier)
    await write_group(tx.conn, tx.writes, tx.seq, tx.head, tx.recorded_at)
