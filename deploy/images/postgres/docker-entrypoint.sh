#!/bin/bash
# The entrypoint of the local PostgreSQL stand-in (deploy/images/postgres/Containerfile): `docker-entrypoint.sh
# postgres [ARGS…]` initialises PGDATA when it is empty, then runs the server in the foreground as `postgres`.
set -euo pipefail

if [ "${1:-}" != postgres ]; then exec "$@"; fi

if [ "$(id -u)" = 0 ]; then
  install -d -o postgres -g postgres -m 0700 "$PGDATA"
  install -d -o postgres -g postgres -m 2777 /var/run/postgresql
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?the data directory is empty: set POSTGRES_PASSWORD to initialise it}"
  export POSTGRES_USER="${POSTGRES_USER:-postgres}"
  export POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"
  # POSTGRES_INITDB_ARGS: further initdb options, split at spaces as in the official image.
  read -r -a initdb_args <<<"${POSTGRES_INITDB_ARGS:-}"
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 "${initdb_args[@]}" >/dev/null
  printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  # The scripts run against a server on the socket only: nothing reaches it over TCP (or sees it healthy) before
  # the databases and roles exist.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -X -q -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
      -c "CREATE DATABASE \"$POSTGRES_DB\""
  fi
  for script in /docker-entrypoint-initdb.d/*; do
    case "$script" in
      *.sh)
        echo "docker-entrypoint.sh: running $script"
        # shellcheck disable=SC1090
        if [ -x "$script" ]; then "$script"; else . "$script"; fi ;;
      *.sql)
        echo "docker-entrypoint.sh: running $script"
        psql -X -q -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -f "$script" ;;
      *) ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "docker-entrypoint.sh: PostgreSQL initialised in $PGDATA"
fi

exec "$@"
