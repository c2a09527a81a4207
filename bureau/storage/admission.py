"""The admission store: what a group commit reads under the head lock, for the rules
(bureau.intake.state.GroupState loads it). The first read — the head, content keys
already admitted, facts and probes, the parties, the admin set and the tree frontier —
is ONE statement; the others run only when a group holds a kind that asks."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

import asyncpg

from bureau.storage.tree import frontier_rows_sql

#: The columns of every row the state loader reads in one statement (see
#: :meth:`GroupState._load_first`): ``what`` says which kind of row it is, and each row
#: fills the columns of its kind, leaving the others NULL.
_ROW_COLUMNS = (
    ("what", "text"), ("head", "text"), ("seq", "bigint"), ("recorded_at", "timestamptz"),
    ("content_key", "text"), ("entry_id", "text"), ("reporter", "text"),
    ("interaction", "text"), ("subject", "text"), ("caller", "text"), ("party", "text"),
    ("name", "text"), ("operator", "text"), ("anchor_kind", "text"),
    ("anchor_value", "text"), ("withdrawn", "boolean"), ("roles", "text[]"),
    ("issued_at", "timestamptz"), ("level", "smallint"), ("node_hash", "bytea"),
)


def _rows(what: str, source: str, **columns: str) -> str:
    """``SELECT`` of one kind of row in the shape of ``_ROW_COLUMNS``, from ``source``."""
    unknown = columns.keys() - {c for c, _ in _ROW_COLUMNS}
    assert not unknown, unknown
    values = [f"'{what}'"] + [columns.get(c, f"NULL::{t}") for c, t in _ROW_COLUMNS[1:]]
    return "SELECT " + ", ".join(f"{v} AS {c}" for v, (c, _) in
                                 zip(values, _ROW_COLUMNS, strict=True)) + " " + source


def _parties_sql(keys: str) -> str:
    """Reporters and agents whose key is in the array parameter ``keys``."""
    return (_rows("reporter", f"FROM reporters WHERE key = ANY({keys}::text[])",
                  party="key", roles="roles", issued_at="issued_at")
            + "\nUNION ALL " + _rows(
                "agent", f"FROM agents WHERE key = ANY({keys}::text[])", party="key",
                name="name", operator="operator", anchor_kind="anchor_kind",
                anchor_value="anchor_value", withdrawn="withdrawn", issued_at="amended_at"))


_PARTIES_SQL = _parties_sql("$1")
_FIRST_SQL = "\nUNION ALL ".join((
    _rows("head", "FROM ledger_head", head="head", seq="seq", recorded_at="recorded_at"),
    _rows("admitted", "FROM entries WHERE content_key = ANY($1::text[])",
          content_key="content_key", entry_id="id", seq="seq"),
    _rows("fact", "FROM facts f JOIN unnest($2::text[], $3::text[]) AS k(rep, ia)"
          " ON f.reporter = k.rep AND f.interaction = k.ia", reporter="f.reporter",
          interaction="f.interaction", content_key="f.content_key", subject="f.subject",
          caller="f.caller"),
    _rows("probe", "FROM probes p JOIN unnest($4::text[], $5::text[]) AS k(rep, ia)"
          " ON p.reporter = k.rep AND p.interaction = k.ia", reporter="p.reporter",
          interaction="p.interaction", content_key="p.content_key", subject="p.subject"),
    "(" + _parties_sql("$6") + ")",
    # the admin set in force (SPEC §3 r3): who may sign admin payloads in this group
    _rows("admins", "FROM (SELECT admins, issued_at FROM ledger_keys"
          " ORDER BY from_seq DESC LIMIT 1) k", roles="k.admins", issued_at="k.issued_at"),
    # the Merkle frontier at the head, unless the committer's is still that of the head
    _rows("node", frontier_rows_sql("h.seq", "$7", "$8"), level="t.level", seq="t.idx",
          node_hash="t.hash"),
))


@dataclass(frozen=True, slots=True)
class FirstRead:
    """What a group asks in the first read: the content keys it holds, the facts and
    the probes it names (``(reporters, interactions)``, pairwise), the parties it names,
    and the tree (size, head) the committer knows (``(-1, "")``: none), whose frontier
    is read only when it is no longer the head's."""

    content_keys: list[str]
    facts: tuple[list[str], list[str]]
    probes: tuple[list[str], list[str]]
    parties: list[str]
    tree: tuple[int, str]


class AdmissionStore:
    """The admission reads of one connection (the committer's, in its transaction)."""

    __slots__ = ("conn",)

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def first(self, asked: FirstRead) -> list[asyncpg.Record]:
        """Rows in the shape of ``_ROW_COLUMNS``, ``what`` naming each one's kind; no
        ``node`` row when ``asked.tree`` is still the head."""
        return await self._fetch(_FIRST_SQL, asked.content_keys, *asked.facts, *asked.probes,
                                 asked.parties, *asked.tree)

    async def parties(self, keys: list[str]) -> list[asyncpg.Record]:
        """'reporter' and 'agent' rows of ``keys``."""
        return await self._fetch(_PARTIES_SQL, keys)

    async def latest_engagement_fact(self, reporter: str, engagement: str) -> bytes | None:
        """The stored entry of ``reporter``'s latest fact of ``engagement``."""
        entry = await self.conn.fetchval(
            "SELECT e.entry FROM facts f JOIN entries e ON e.seq = f.seq"
            " WHERE f.reporter = $1 AND f.engagement = $2 ORDER BY f.seq DESC LIMIT 1",
            reporter, engagement)
        return None if entry is None else bytes(entry)

    async def verdicts(self, kinds: list[str], evaluators: list[str], reporters: list[str],
                       refs: list[str]) -> list[asyncpg.Record]:
        """(kind, evaluator, reporter, ref, content_key) of the verdicts with those keys."""
        return await self._fetch(
            "SELECT v.kind, v.evaluator, v.reporter, v.ref, v.content_key FROM verdicts v"
            " JOIN unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS k(kd, ev, rep, rf)"
            " ON v.kind = k.kd AND v.evaluator = k.ev AND v.reporter = k.rep AND v.ref = k.rf",
            kinds, evaluators, reporters, refs)

    async def favourable_verdicts_involving(self, agents: list[str]) -> list[asyncpg.Record]:
        """(entry_id, kind, evaluator, subject) of the favourable verdicts by or about
        ``agents``, in seq order (only those can be self-dealing, SPEC §5)."""
        return await self._fetch(
            "SELECT entry_id, kind, evaluator, subject FROM verdicts"
            " WHERE (evaluator = ANY($1::text[]) OR subject = ANY($1::text[])) AND favourable"
            " ORDER BY seq", agents)

    async def entries(self, ids: list[str]) -> list[asyncpg.Record]:
        """(id, kind, subject) of the entries ``ids``."""
        return await self._fetch(
            "SELECT id, kind, subject FROM entries WHERE id = ANY($1::text[])", ids)

    async def disputes(self, ids: list[str]) -> list[asyncpg.Record]:
        """(entry_id, target, resolution) of the disputes ``ids``."""
        return await self._fetch(
            "SELECT d.entry_id, d.target, r.entry_id AS resolution FROM disputes d"
            " LEFT JOIN resolutions r ON r.dispute = d.entry_id"
            " WHERE d.entry_id = ANY($1::text[])", ids)

    async def exclusions(self, ids: list[str]) -> list[asyncpg.Record]:
        """(target) of the exclusions of ``ids``."""
        return await self._fetch(
            "SELECT target FROM exclusions WHERE target = ANY($1::text[])", ids)

    async def in_force_at(self, table: Literal["policies", "pools"]) -> dt.datetime | None:
        """When the ``policy`` (or ``pool``) entry in force was issued."""
        at: dt.datetime | None = await self.conn.fetchval(
            f"SELECT issued_at FROM {table} ORDER BY seq DESC LIMIT 1")
        return at

    async def _fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        rows: list[asyncpg.Record] = await self.conn.fetch(sql, *args)
        return rows
