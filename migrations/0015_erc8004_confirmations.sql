-- Issue 35 (SPEC §9.1 r4): ERC-8004 links the bureau has confirmed from the other side.
-- A link is the agent's claim; the operator confirms it with `bureau erc8004 confirm`,
-- which fetches the token's registration file (from a host of BUREAU_ERC8004_HOSTS,
-- bounded in size and time) and checks that it names the agent's key id and the token.
-- Operator state, not a view of the ledger: `bureau rebuild` leaves it as it is. The
-- exports read it to say `"confirmed": true` and to offer calldata.
CREATE TABLE erc8004_confirmations (
    agent        text        NOT NULL,
    registry     text        NOT NULL,
    agent_id     text        NOT NULL,
    url          text        NOT NULL,  -- where the registration file was read
    file_sha256  bytea       NOT NULL,  -- of the bytes that were checked
    confirmed_at timestamptz NOT NULL,
    PRIMARY KEY (agent, registry, agent_id)
);
