-- Revision 3 (SPEC §3 `pool`, §8.2): the evaluators' pool and its settlements.

-- Every admitted `pool` entry: `units` is the pool of `from_epoch` and later. The one
-- with the highest seq is in force (its `issued_at` is the latest). An admission index:
-- derived from the entries and rebuilt by `bureau rebuild`.
CREATE TABLE pools (
    seq         bigint      PRIMARY KEY REFERENCES entries (seq),
    units       bigint      NOT NULL CHECK (units BETWEEN 0 AND 1000000000000000),
    from_epoch  bigint      NOT NULL CHECK (from_epoch >= 0),
    issued_at   timestamptz NOT NULL
);

-- The bureau-signed settlement document of each epoch whose pool was above zero,
-- written by the report builder with (before) the epoch's checkpoint. A view.
CREATE TABLE settlements (
    epoch    bigint PRIMARY KEY REFERENCES seals (epoch),
    envelope bytea  NOT NULL
);

-- Its allocation rows, one per evaluator that scored, in key-id order (`leaf`): the
-- leaves of the document's Merkle root. `row` is the canonical JSON of the row.
CREATE TABLE settlement_rows (
    epoch     bigint NOT NULL REFERENCES settlements (epoch),
    leaf      integer NOT NULL CHECK (leaf >= 0),
    evaluator text   NOT NULL,
    row       bytea  NOT NULL,
    PRIMARY KEY (epoch, evaluator),
    UNIQUE (epoch, leaf)
);

-- A settlement reads the ledger's reporter entries (their distrust) up to its seal: a
-- partial index holds just those rows, as `entries_policy_kinds` does for policies.
CREATE INDEX entries_reporter_kind ON entries (seq) WHERE kind = 'reporter';
