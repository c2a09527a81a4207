-- Reputation cards (SPEC §9.1 r4; docs/transparency.md, "Proof bundles and cards"): for
-- each report, its bureau-signed card statement (a DSSE envelope of type
-- application/vnd.bureau.card.v1+json, canonical JSON), signed when the epoch is built,
-- with the key in force at its seal, and stored in the transaction that stores the
-- epoch's checkpoint. A derived view like the reports: `bureau rebuild` re-derives it.
CREATE TABLE cards (
    epoch     bigint  NOT NULL,
    agent     text    NOT NULL,
    envelope  bytea   NOT NULL,
    PRIMARY KEY (epoch, agent)
);
