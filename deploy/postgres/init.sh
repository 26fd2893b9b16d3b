#!/usr/bin/env bash
# Databases and roles of the suite in a PostgreSQL 15 server (Shared/README.md, "Databases"): one database per
# bounded context, one login role per service, the same layout deploy/local/postgres.sh gives the local cluster.
#
#   database      owner          also
#   keys          submission     distribution (CONNECT; SELECT, DELETE on its tables),
#                                federation (CONNECT; SELECT, INSERT, UPDATE, DELETE on its tables)
#   verification  verification
#   testresult    testresult
#   portal        portal
#   datadonation  datadonation
#   efgs          efgs           (the rehearsal gateway, Tools/EFGSGateway)
#
# The official postgres image runs it once, when it initialises an empty data directory (mounted at
# /docker-entrypoint-initdb.d/ by deploy/compose.yaml and by the Kubernetes local overlay). It is idempotent: run it
# again (`docker-compose exec postgres /docker-entrypoint-initdb.d/10-en-roles.sh`) after changing a password.
#
# Passwords come from the environment, never from this file: SUBMISSION_DB_PASSWORD, DISTRIBUTION_DB_PASSWORD,
# VERIFICATION_DB_PASSWORD, TESTRESULT_DB_PASSWORD and PORTAL_DB_PASSWORD are required; FEDERATION_DB_PASSWORD,
# DATADONATION_DB_PASSWORD and EFGS_DB_PASSWORD are optional (a deployment without federation, data donation or a
# rehearsal gateway): without one the role exists but cannot log in. Each password needs 16 to 128 characters of [A-Za-z0-9_-], because the services take it inside
# DATABASE_URL. psql reads them from the environment itself (`\getenv`, psql 15), so they appear neither in the SQL
# text nor on psql's command line, where `ps` would show them.
# EN_TEST_DB_PASSWORD (development and CI only: deploy/local/postgres.sh sets it) adds the test suite's role en_test,
# which creates and drops a database per test.
# Connection: the image's POSTGRES_USER (default postgres) over the local socket, or PGHOST/PGPORT/PGPASSWORD.
set -euo pipefail

fail() { printf 'init.sh: %s\n' "$*" >&2; exit 1; }

roles=(submission distribution federation verification testresult portal datadonation efgs)
declare -A passwords=()
for role in "${roles[@]}" en_test; do
  variable="${role^^}_DB_PASSWORD"
  value="${!variable:-}"
  case "$role" in
    federation | datadonation | efgs | en_test) [ -z "$value" ] && continue ;;
    *) [ -n "$value" ] || fail "$variable is not set" ;;
  esac
  [[ $value =~ ^[A-Za-z0-9_-]{16,128}$ ]] || fail "$variable must be 16 to 128 characters of A-Z a-z 0-9 _ -"
  passwords[$role]="$value"
done
[ -z "${passwords[en_test]:-}" ] || roles+=(en_test)

psql_args=(-X -q -v ON_ERROR_STOP=1 --no-password --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}")

sql() {
  local role attributes list
  list="$(printf "'%s'," "${roles[@]}")"
  cat <<SQL
SELECT format('CREATE ROLE %I', r)
  FROM unnest(ARRAY[${list%,}]) AS r
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r)
\gexec
SQL
  for role in "${roles[@]}"; do
    attributes="NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
    # en_test creates and drops one database per test (from a template).
    [ "$role" != en_test ] || attributes="${attributes/NOCREATEDB/CREATEDB}"
    if [ -n "${passwords[$role]:-}" ]; then
      printf '\\getenv pw_%s %s_DB_PASSWORD\n' "$role" "${role^^}"
      printf "ALTER ROLE %s WITH LOGIN %s PASSWORD :'pw_%s';\n" "$role" "$attributes" "$role"
    else
      printf 'ALTER ROLE %s WITH NOLOGIN %s PASSWORD NULL;\n' "$role" "$attributes"
    fi
  done
  cat <<'SQL'
SELECT format('CREATE DATABASE %I OWNER %I', d, o)
  FROM (VALUES ('keys','submission'), ('verification','verification'),
               ('testresult','testresult'), ('portal','portal'),
               ('datadonation','datadonation'), ('efgs','efgs')) AS v(d, o)
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = d)
\gexec
ALTER DATABASE keys OWNER TO submission;
ALTER DATABASE verification OWNER TO verification;
ALTER DATABASE testresult OWNER TO testresult;
ALTER DATABASE portal OWNER TO portal;
ALTER DATABASE datadonation OWNER TO datadonation;
ALTER DATABASE efgs OWNER TO efgs;
-- Each service reaches only its own database; keys is shared (Shared/README.md, "Databases").
REVOKE CONNECT, TEMPORARY ON DATABASE keys, verification, testresult, portal, datadonation, efgs FROM PUBLIC;
GRANT CONNECT ON DATABASE keys TO distribution, federation;
-- Analysts read data donation's analytics tables (cwa-satellites §4.5): a group role without login that the
-- datadonation migration grants SELECT on those tables; an operator adds members with their own logins.
SELECT 'CREATE ROLE datadonation_analyst NOLOGIN'
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'datadonation_analyst')
\gexec
GRANT CONNECT ON DATABASE datadonation TO datadonation_analyst;
SQL
  if [ -n "${passwords[en_test]:-}" ]; then
    # The test suite drops each test's database WITH (FORCE). An autovacuum worker on it has no role, and PostgreSQL
    # 15 lets a non-superuser terminate it only as a member of pg_signal_backend (else SQLSTATE 42501, "must be a
    # member of the role whose process is being terminated").
    echo 'GRANT pg_signal_backend TO en_test;'
  fi
  cat <<'SQL'
-- submission-service applies the key store's migrations (the keys tables); distribution reads them and deletes what is
-- past retention; federation reads the upload mirror and marks it, stores downloaded keys and keeps its batch list.
-- Default privileges cover tables created later, the plain GRANT those that exist already.
\c keys
ALTER DEFAULT PRIVILEGES FOR ROLE submission IN SCHEMA public GRANT SELECT, DELETE ON TABLES TO distribution;
GRANT SELECT, DELETE ON ALL TABLES IN SCHEMA public TO distribution;
ALTER DEFAULT PRIVILEGES FOR ROLE submission IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO federation;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO federation;
SQL
}

sql | psql "${psql_args[@]}"
echo "init.sh: databases keys, verification, testresult, portal, datadonation, efgs and their roles are in place"
