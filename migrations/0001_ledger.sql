-- The ledger: one append-only hash-chained sequence of entries (SPEC §9 entry shape).
-- `entry` holds the canonical JSON of the entry without its id, byte for byte what was
-- hashed; everything else in the row is an index over it.

CREATE TABLE ledger_head (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    seq         bigint      NOT NULL,
    head        text        NOT NULL,
    recorded_at timestamptz          -- null before the first entry
);
INSERT INTO ledger_head (seq, head) VALUES (0, repeat('0', 64));

CREATE TABLE entries (
    seq         bigint      PRIMARY KEY CHECK (seq >= 1),
    id          text        NOT NULL UNIQUE CHECK (id ~ '^[0-9a-f]{64}$'),
    prev        text        NOT NULL UNIQUE CHECK (prev ~ '^[0-9a-f]{64}$'),
    kind        text        NOT NULL,
    recorded_at timestamptz NOT NULL,
    epoch       bigint      NOT NULL,
    signer      text,                    -- null for entries the bureau wrote itself
    subject     text,                    -- the agent the entry is about, when it has one
    content_key text        UNIQUE,      -- null for entries the bureau wrote itself
    entry       bytea       NOT NULL
);
CREATE INDEX entries_signer ON entries (signer, seq);
CREATE INDEX entries_kind ON entries (kind, seq);
CREATE INDEX entries_subject ON entries (subject, seq) WHERE subject IS NOT NULL;

-- Refusals of correctly signed envelopes from known parties: evidence about the signer.
-- Not part of the chain (they were not admitted), but append-only like it.
CREATE TABLE refusals (
    ref          bigserial   PRIMARY KEY,
    content_key  text        NOT NULL,
    signer       text        NOT NULL,
    kind         text        NOT NULL,
    code         text        NOT NULL,
    path         text        NOT NULL,
    detail       text        NOT NULL,
    refused_at   timestamptz NOT NULL,
    envelope     bytea       NOT NULL,
    UNIQUE (content_key, code)
);
CREATE INDEX refusals_signer ON refusals (signer, ref);

CREATE FUNCTION refuse_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the % table is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries
    FOR EACH ROW EXECUTE FUNCTION refuse_rewrite();
CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_rewrite();
CREATE TRIGGER refusals_append_only BEFORE UPDATE OR DELETE ON refusals
    FOR EACH ROW EXECUTE FUNCTION refuse_rewrite();
CREATE TRIGGER refusals_no_truncate BEFORE TRUNCATE ON refusals
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_rewrite();

-- Admission indexes: derived from the entries, rebuilt by `bureau rebuild`.
CREATE TABLE reporters (
    key       text    PRIMARY KEY,
    name      text    NOT NULL,
    operator  text    NOT NULL,
    roles     text[]  NOT NULL,
    seq       bigint  NOT NULL REFERENCES entries (seq)
);

CREATE TABLE facts (
    reporter       text    NOT NULL,
    interaction    text    NOT NULL,
    seq            bigint  NOT NULL REFERENCES entries (seq),
    content_key    text    NOT NULL,
    subject        text    NOT NULL,
    caller         text,
    engagement     text,
    PRIMARY KEY (reporter, interaction)
);
CREATE INDEX facts_subject ON facts (subject, seq);
CREATE INDEX facts_caller ON facts (caller, seq) WHERE caller IS NOT NULL;
CREATE INDEX facts_engagement ON facts (reporter, engagement, seq) WHERE engagement IS NOT NULL;

-- One probe result per (reporter, interaction): a different second one is a rewrite.
CREATE TABLE probes (
    reporter       text    NOT NULL,
    interaction    text    NOT NULL,
    seq            bigint  NOT NULL REFERENCES entries (seq),
    content_key    text    NOT NULL,
    subject        text    NOT NULL,
    PRIMARY KEY (reporter, interaction)
);
CREATE INDEX probes_subject ON probes (subject, seq);

CREATE TABLE agents (
    key          text     PRIMARY KEY,
    name         text     NOT NULL,
    operator     text     NOT NULL,   -- as enrolled; compared trimmed and lowercased
    anchor_kind  text     NOT NULL,
    anchor_value text     NOT NULL,
    withdrawn    boolean  NOT NULL DEFAULT false,
    seq          bigint   NOT NULL REFERENCES entries (seq)
);

-- One verdict per evaluator per interaction (attestations) or engagement (value judgments).
CREATE TABLE verdicts (
    seq          bigint   PRIMARY KEY REFERENCES entries (seq),
    entry_id     text     NOT NULL UNIQUE,
    kind         text     NOT NULL CHECK (kind IN ('attestation', 'value-judgment')),
    evaluator    text     NOT NULL,
    reporter     text     NOT NULL,
    ref          text     NOT NULL,   -- interaction (attestation) or engagement id
    subject      text     NOT NULL,
    content_key  text     NOT NULL,
    UNIQUE (kind, evaluator, reporter, ref)
);
CREATE INDEX verdicts_evaluator ON verdicts (evaluator);
CREATE INDEX verdicts_subject ON verdicts (subject);

CREATE TABLE exclusions (
    target       text     PRIMARY KEY,   -- the excluded entry's id
    seq          bigint   NOT NULL REFERENCES entries (seq),
    reason       text     NOT NULL
);

CREATE TABLE disputes (
    entry_id     text     PRIMARY KEY,   -- the dispute's own entry id
    target       text     NOT NULL,
    signer       text     NOT NULL,
    seq          bigint   NOT NULL REFERENCES entries (seq)
);

CREATE TABLE resolutions (
    dispute      text     PRIMARY KEY REFERENCES disputes (entry_id),
    entry_id     text     NOT NULL UNIQUE,
    decision     text     NOT NULL,
    seq          bigint   NOT NULL REFERENCES entries (seq)
);
