-- Epochs, seals, reports and checkpoints (SPEC §8). Every table here is a derived view:
-- `bureau rebuild` empties and re-derives them from the entries alone.

-- One row per `seal` entry, written in the same transaction as the entry, under the
-- ledger head lock. The primary key on epoch is the belt-and-braces guard behind the
-- lock: a second seal of an epoch cannot commit, whatever a process believed.
-- The FK is deferred because the entry itself is COPYed when the group flushes.
CREATE TABLE seals (
    epoch     bigint  PRIMARY KEY,
    seq       bigint  NOT NULL UNIQUE
                      REFERENCES entries (seq) DEFERRABLE INITIALLY DEFERRED,
    last_seq  bigint  NOT NULL,   -- body "seq": the last entry whose epoch <= this epoch
    head      text    NOT NULL    -- body "head": that entry's id
);

-- Bureau-signed report envelopes (canonical JSON of the DSSE envelope), one per agent
-- per sealed epoch; the bytes served by GET /v1/agents/{agent}/report.
CREATE TABLE reports (
    agent     text    NOT NULL,
    epoch     bigint  NOT NULL,
    envelope  bytea   NOT NULL,
    PRIMARY KEY (agent, epoch)
);
CREATE INDEX reports_epoch ON reports (epoch);

-- One bureau-signed checkpoint per sealed epoch. It is written in the same transaction
-- as that epoch's reports, so a checkpoint also means "every report of this epoch is in".
CREATE TABLE checkpoints (
    epoch     bigint  PRIMARY KEY,
    envelope  bytea   NOT NULL
);
