-- Issue 35: public listings read rows built at seal time, never every report of the
-- epoch per request. Written by the report builder in the transaction that stores the
-- epoch's checkpoint (bureau.storage.public_rows), so they are visible exactly when the
-- epoch's reports are; derived views, rebuilt by `bureau rebuild`.

-- One row per agent of the epoch whose report carries a link: what a listing shows of
-- it (`summary`: its score and interval as its signed report says) and its links as the
-- report carries them. (Its reputation card is read from `cards`, migration 0016, for
-- the few agents of a page: a card's log proof grows as witnesses cosign.)
CREATE TABLE agent_summaries (
    epoch   bigint NOT NULL REFERENCES seals (epoch),
    agent   text   NOT NULL,
    summary jsonb  NOT NULL,
    links   jsonb  NOT NULL,
    PRIMARY KEY (epoch, agent)
);

-- The MCP server names agents linked, one row per name, with how many agents claim it:
-- `GET /v0/servers` pages these by name.
CREATE TABLE mcp_servers (
    epoch  bigint  NOT NULL REFERENCES seals (epoch),
    server text    NOT NULL,
    claims integer NOT NULL CHECK (claims > 0),
    PRIMARY KEY (epoch, server)
);

-- Each claim of a name by an agent: a page shows a bounded number of them per name, by
-- agent key id, from this index.
CREATE TABLE mcp_claims (
    epoch  bigint NOT NULL,
    server text   NOT NULL,
    agent  text   NOT NULL,
    PRIMARY KEY (epoch, server, agent),
    FOREIGN KEY (epoch, server) REFERENCES mcp_servers (epoch, server),
    FOREIGN KEY (epoch, agent) REFERENCES agent_summaries (epoch, agent)
);
