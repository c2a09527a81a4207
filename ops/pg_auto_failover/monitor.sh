#!/bin/sh
# The pg_auto_failover monitor (ops/compose.yaml, profile ha; docs/runbook.md, "Highly
# available, with pg_auto_failover"). On its first start: the monitor's PostgreSQL, with
# password authentication, and the password the nodes connect with (autoctl_node).
# Then, every start: pg_autoctl run, as the container's main process.
set -eu
: "${PGDATA:?}" "${MONITOR_HOSTNAME:?}"
: "${AUTOCTL_NODE_PASSWORD:?set BUREAU_DB_MONITOR_PASSWORD}"

if [ ! -f "$PGDATA/PG_VERSION" ]; then
    pg_autoctl create monitor --pgdata "$PGDATA" --hostname "$MONITOR_HOSTNAME" \
        --auth scram-sha-256 --ssl-self-signed
    # pg_autoctl sets no passwords: the server alone, on its socket, for this one.
    pg_ctl --pgdata "$PGDATA" --wait --options "-c listen_addresses=''" start
    psql --no-psqlrc --set ON_ERROR_STOP=1 --dbname pg_auto_failover \
         --set pw="$AUTOCTL_NODE_PASSWORD" <<'SQL'
ALTER USER autoctl_node PASSWORD :'pw';
SQL
    pg_ctl --pgdata "$PGDATA" --wait --mode fast stop
fi
exec pg_autoctl run --pgdata "$PGDATA"
