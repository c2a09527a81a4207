-- Refusal storage bounded (SPEC §5 r2): a decode-stage refusal keeps only its content
-- key, code, path and time, and any refusal past 1,000 of one signer in an epoch keeps
-- only those too. Such rows have no envelope and no detail (bureau.intake.refusals).
ALTER TABLE refusals ALTER COLUMN envelope DROP NOT NULL,
                     ALTER COLUMN detail DROP NOT NULL;

-- How many refusals of a signer kept their envelope in the current epoch: read at a
-- group commit that keeps one more, at most the budget's rows per signer.
CREATE INDEX refusals_kept_envelopes ON refusals (signer, refused_at)
    WHERE envelope IS NOT NULL;
