#!/bin/sh
# Run once by the postgres image on an empty data directory (docker-entrypoint-initdb.d):
# the least-privilege role the service runs as, and its login. The migrations grant
# bureau_app what it may do (migrations/0004_roles.sql).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     -v service_password="$BUREAU_DB_SERVICE_PASSWORD" <<'SQL'
CREATE ROLE bureau_app NOLOGIN;
CREATE ROLE bureau_service LOGIN PASSWORD :'service_password' IN ROLE bureau_app;
SQL
