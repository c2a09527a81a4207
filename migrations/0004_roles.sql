-- A least-privilege database role for the service: `bureau_app` (NOLOGIN).
--
-- The ledger is append-only twice over: the triggers of 0001 refuse UPDATE, DELETE and
-- TRUNCATE on `entries` and `refusals` for everyone, and this role is never granted those
-- privileges at all, so a service (or a stolen service credential) running as it cannot
-- rewrite history even with the triggers disabled. Only the table owner can.
--
-- Operators: apply migrations as the owner, and run `bureau serve` as a login that is a
-- member of this role (THREAT_MODEL.md, "Running as bureau_app"):
--
--     CREATE ROLE bureau_service LOGIN PASSWORD '...' IN ROLE bureau_app;
--     BUREAU_DATABASE_URL=postgresql://bureau_service:...@db/bureau bureau serve
--
-- Roles belong to the cluster, not to one database: the role is created once (if the
-- migrating user may create roles; otherwise a notice says so and nothing is granted),
-- and each database's grants are made here.

DO $migration$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bureau_app') THEN
        BEGIN
            CREATE ROLE bureau_app NOLOGIN;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN
                NULL;  -- another database's migration created it a moment ago
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'bureau: cannot create role bureau_app here; '
                             'create it and re-run these grants by hand';
                RETURN;
        END;
    END IF;

    EXECUTE format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO bureau_app',
                   current_database());
    GRANT USAGE ON SCHEMA public TO bureau_app;

    -- Derived tables (admission indexes, seals, reports, checkpoints, the head row):
    -- the service writes them, `bureau rebuild` empties and re-derives them.
    GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA public
        TO bureau_app;
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO bureau_app;

    -- The ledger and the refusals: read and append, nothing else.
    REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON entries, refusals
        FROM bureau_app;
    -- Which migrations ran is the owner's business.
    REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON schema_migrations FROM bureau_app;

    -- Tables added by later migrations are derived views unless their migration says
    -- otherwise: an append-only table must REVOKE as above (a test checks that every
    -- table guarded by refuse_rewrite() is not writable by this role).
    ALTER DEFAULT PRIVILEGES IN SCHEMA public
        GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON TABLES TO bureau_app;
    ALTER DEFAULT PRIVILEGES IN SCHEMA public
        GRANT USAGE, SELECT ON SEQUENCES TO bureau_app;
END
$migration$;
