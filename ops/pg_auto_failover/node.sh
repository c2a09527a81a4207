#!/bin/sh
# A pg_auto_failover data node (ops/compose.yaml, profile ha; docs/runbook.md, "Highly
# available, with pg_auto_failover"). On its first start: registered with the monitor.
# The first node registered becomes the primary: it gets the replication password and
# the bureau's roles (the owner of the schema, bureau_app and its login bureau_service,
# as ops/compose/initdb-roles.sh makes them for the single server); a later node is
# cloned from the primary (pg_basebackup, with the replication password), so it has
# them too. Then, every start: pg_autoctl run, as the container's main process.
set -eu
: "${PGDATA:?}" "${NODE_NAME:?}" "${NODE_HOSTNAME:?}" "${MONITOR_HOSTNAME:?}"
: "${AUTOCTL_NODE_PASSWORD:?set BUREAU_DB_MONITOR_PASSWORD}"
: "${REPLICATION_PASSWORD:?set BUREAU_DB_REPLICATION_PASSWORD}"
: "${OWNER_PASSWORD:?set BUREAU_DB_OWNER_PASSWORD}"
: "${SERVICE_PASSWORD:?set BUREAU_DB_SERVICE_PASSWORD}"

if [ ! -f "$PGDATA/PG_VERSION" ]; then
    # pg_basebackup, when this node is cloned, authenticates with this.
    PGPASSWORD="$REPLICATION_PASSWORD" pg_autoctl create postgres --pgdata "$PGDATA" \
        --name "$NODE_NAME" --hostname "$NODE_HOSTNAME" --dbname bureau \
        --auth scram-sha-256 --ssl-self-signed --pg-hba-lan \
        --monitor "postgres://autoctl_node:${AUTOCTL_NODE_PASSWORD}@${MONITOR_HOSTNAME}:${MONITOR_PORT:-5432}/pg_auto_failover?sslmode=require"
    pg_autoctl config set --pgdata "$PGDATA" replication.password "$REPLICATION_PASSWORD"
    # Stopped as a primary, not as a standby: this is the first node.
    if pg_controldata "$PGDATA" | grep -q '^Database cluster state: *shut down$'; then
        pg_ctl --pgdata "$PGDATA" --wait --options "-c listen_addresses=''" start
        psql --no-psqlrc --set ON_ERROR_STOP=1 --dbname bureau \
             --set replication_password="$REPLICATION_PASSWORD" \
             --set owner_password="$OWNER_PASSWORD" \
             --set service_password="$SERVICE_PASSWORD" <<'SQL'
ALTER USER pgautofailover_replicator PASSWORD :'replication_password';
CREATE ROLE bureau_owner LOGIN PASSWORD :'owner_password';
ALTER DATABASE bureau OWNER TO bureau_owner;
CREATE ROLE bureau_app NOLOGIN;
CREATE ROLE bureau_service LOGIN PASSWORD :'service_password' IN ROLE bureau_app;
SQL
        pg_ctl --pgdata "$PGDATA" --wait --mode fast stop
    fi
fi
exec pg_autoctl run --pgdata "$PGDATA"
