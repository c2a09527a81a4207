-- The ledger as a transparency log (SPEC §8.1, docs/transparency.md).

-- Every complete node of the RFC 6962 tree over the entry ids: node (level, idx) is the
-- perfect subtree over leaves [idx * 2^level, (idx + 1) * 2^level), leaf i being entry
-- seq i + 1. Written by the group commit in the same transaction as the entries that
-- complete it (about two rows an entry), never updated. Derived: `bureau rebuild`
-- recomputes it from the entry ids and compares.
CREATE TABLE tree_nodes (
    level  smallint NOT NULL CHECK (level BETWEEN 0 AND 63),
    idx    bigint   NOT NULL CHECK (idx >= 0),
    hash   bytea    NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (level, idx)
);

-- Every tree head the bureau signed, as the signed note it published: the `/checkpoint`
-- notes and each epoch's note (the same bytes for the same size: Ed25519 is
-- deterministic and a checkpoint is origin, size, root). A promise to the world, not a
-- view: append-only, like the ledger, and never rebuilt. The proof routes serve any size
-- up to the largest one here.
CREATE TABLE tree_heads (
    size       bigint      PRIMARY KEY CHECK (size >= 0),
    root       bytea       NOT NULL CHECK (length(root) = 32),
    note       text        NOT NULL,
    signed_at  timestamptz NOT NULL DEFAULT now()
);

-- Witness cosignatures (C2SP cosignature/v1 lines), one per witness per tree head,
-- served after the note's own signature by GET /checkpoint. Append-only too.
CREATE TABLE cosignatures (
    size         bigint      NOT NULL REFERENCES tree_heads (size),
    witness      text        NOT NULL,   -- the witness's vkey
    line         text        NOT NULL,   -- the signature line, newline included
    signed_time  bigint      NOT NULL,   -- the cosignature's own timestamp (POSIX s)
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (size, witness)
);
CREATE INDEX cosignatures_witness ON cosignatures (witness, size);

CREATE TRIGGER tree_heads_append_only BEFORE UPDATE OR DELETE ON tree_heads
    FOR EACH ROW EXECUTE FUNCTION refuse_rewrite();
CREATE TRIGGER tree_heads_no_truncate BEFORE TRUNCATE ON tree_heads
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_rewrite();
CREATE TRIGGER cosignatures_append_only BEFORE UPDATE OR DELETE ON cosignatures
    FOR EACH ROW EXECUTE FUNCTION refuse_rewrite();
CREATE TRIGGER cosignatures_no_truncate BEFORE TRUNCATE ON cosignatures
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_rewrite();

-- The least-privilege role (0004_roles.sql) reads and appends them, nothing else.
DO $migration$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'bureau_app') THEN
        REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON tree_heads, cosignatures
            FROM bureau_app;
    END IF;
END
$migration$;

-- An agent's file (SPEC §9) holds every fact with the agent as caller; the report
-- builder asks which facts of a seq range have a caller (bureau.views.files), which
-- facts_caller (caller, seq) cannot answer without reading every fact.
CREATE INDEX facts_seq_caller ON facts (seq) INCLUDE (caller) WHERE caller IS NOT NULL;
