-- Revision 2 (SPEC §3): updates ordered by `issued_at`, and the `policy` entries.
-- Every table here is an admission index, derived from the entries and rebuilt by
-- `bureau rebuild`. (The ledger's own settings need no table: they are its entry 1,
-- the `genesis` entry, read back at every start.)

-- The registration in force of each reporter: a new one must be issued later; and the
-- distrust it declares, if any (scoring reads the entries themselves).
ALTER TABLE reporters ADD COLUMN issued_at timestamptz;
ALTER TABLE reporters ADD COLUMN distrusted_from timestamptz;

-- The amendment in force of each agent: a new one must be issued later.
ALTER TABLE agents ADD COLUMN amended_at timestamptz;

-- Every admitted `policy` entry: the policy (by hash) that scores `from_epoch` and later.
-- The one with the highest seq is in force (its `issued_at` is the latest).
CREATE TABLE policies (
    seq         bigint      PRIMARY KEY REFERENCES entries (seq),
    policy      text        NOT NULL CHECK (policy ~ '^[0-9a-f]{64}$'),
    from_epoch  bigint      NOT NULL CHECK (from_epoch >= 0),
    issued_at   timestamptz NOT NULL
);
