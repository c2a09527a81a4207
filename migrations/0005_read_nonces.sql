-- Nonces of authenticated reads already accepted (RFC 9421 `nonce`), shared by every
-- bureau process on the database: a captured signed read cannot be replayed to another
-- process (`serve --workers N`, several servers) or after a restart. A row is useless
-- once its signature is stale, so expired rows are deleted as new ones arrive.
CREATE TABLE read_nonces (
    keyid       text        NOT NULL,
    nonce       text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (keyid, nonce)
);
CREATE INDEX read_nonces_expiry ON read_nonces (expires_at);
