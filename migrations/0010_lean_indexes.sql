-- Only the indexes a query needs (issue 15): each one is written for every row, under
-- the ledger lock. Every index of `entries` and of the index tables was checked against
-- the queries that read them (docs/benchmarks.md, "Issue 15").
--
-- `entries (kind, seq)` answered one query, the ledger's policies (bureau.views.policies:
-- the genesis entry and the `policy` entries, a handful in all); a partial index holds
-- just those rows, and every other entry skips it.
CREATE INDEX entries_policy_kinds ON entries (seq) WHERE kind IN ('genesis', 'policy');
DROP INDEX entries_kind;

-- No query reads facts or probes by subject: an agent's file finds them through
-- `entries (subject, seq)`, which every entry with a subject is in.
DROP INDEX facts_subject;
DROP INDEX probes_subject;
