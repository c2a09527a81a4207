-- Revision 3 (SPEC §3 "Who signs for the ledger"): the bureau's signing key and the
-- admin set, as the genesis entry and the `keys` entries set them. An admission index
-- like the others: derived from the entries, rebuilt by `bureau rebuild`.
--
-- One row per period: from entry `from_seq` on (until the next row's), the bureau
-- signs with `bureau` and the admins are exactly `admins` (sorted). The genesis entry
-- (seq 1) gives the row with from_seq 1; a `keys` entry at seq n the row from n + 1.
CREATE TABLE ledger_keys (
    from_seq   bigint      PRIMARY KEY CHECK (from_seq >= 1),
    seq        bigint      NOT NULL UNIQUE REFERENCES entries (seq),
    bureau     text        NOT NULL CHECK (bureau ~ '^ed25519:[A-Za-z0-9_-]{43}$'),
    admins     text[]      NOT NULL CHECK (cardinality(admins) BETWEEN 1 AND 64),
    -- the `keys` entry's issued_at (NULL for the genesis entry's row): a new one must
    -- be later than the one in force
    issued_at  timestamptz,
    CHECK (from_seq = seq + 1 OR (seq = 1 AND from_seq = 1))
);
