#!/usr/bin/env bash
# Times federation through the rehearsal gateway on the local cluster, in throw-away databases: BENCH_KEYS (100000)
# consented keys of DE go up in one `federation-service upload` run (batches of 4000, each signed), the gateway forms
# its download batches, and one date-based `federation-service download` run of FR walks them, checks every upload
# batch's signature and stores the keys. The gateway terminates mutual TLS itself here (no nginx front). Prints keys/s
# and wall time of both runs, and each as a multiple of a plain COPY of the same rows into a table like diagnosis_key.
# CONFIG (release) chooses the binaries. The cluster is a private one in .data/bench-federation on port 54357.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
lib_name=bench-federation
pg="$root/deploy/local/postgres.sh"
bin="$root/.build/${CONFIG:-release}"
keys="${BENCH_KEYS:-100000}"
port="${BENCH_EFGS_PORT:-18790}"
for b in federation-service efgs-gateway submission-service; do
  [ -x "$bin/$b" ] || fail "$bin/$b missing (make bench-federation builds it)"
done

export EN_DATA_DIR="${EN_DATA_DIR:-$root/.data/bench-federation}" EN_PG_PORT="${EN_PG_PORT:-54357}"
"$pg" start >/dev/null
database_env="$("$pg" env)"
eval "$database_env"
export PGHOST="$POSTGRES_HOST" PGPORT="$POSTGRES_PORT" PGUSER="$POSTGRES_USER" PGPASSWORD="$POSTGRES_PASSWORD"
stamp="$(date +%s)"
de="en_bench_fed_de_$stamp" fr="en_bench_fed_fr_$stamp" efgs="en_bench_fed_efgs_$stamp"
url() { echo "postgres://$PGUSER:$PGPASSWORD@$PGHOST:$PGPORT/$1?sslmode=disable"; }
work="$(mktemp -d)"
gateway_pid=""
cleanup() {
  [ -n "$gateway_pid" ] && kill "$gateway_pid" 2>/dev/null && wait "$gateway_pid" 2>/dev/null
  for database in "$de" "$fr" "$efgs"; do psql -q -d postgres -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" || true; done
  rm -rf "$work"
}
trap cleanup EXIT
for database in "$de" "$fr" "$efgs"; do psql -q -d postgres -c "CREATE DATABASE $database"; done
# submission-service applies the keys schema (it needs a service-token key to start at all).
openssl ecparam -name prime256v1 -genkey -noout -out "$work/service-token.pem" 2>/dev/null
for database in "$de" "$fr"; do
  DATABASE_URL="$(url "$database")" SERVICE_TOKEN_KEY_FILE="$work/service-token.pem" "$bin/submission-service" --migrate-only >/dev/null
done
fed="$work/federation"
"$root/deploy/local/federation-pki.sh" "$fed" DE FR
for country in DE FR; do
  DATABASE_URL="$(url "$efgs")" "$bin/efgs-gateway" country add "$country" --auth-cert "$fed/$country/client.pem" \
    --signing-cert "$fed/$country/signing.pem" --trust-anchor-cert "$fed/efgs-trust-anchor.pem" \
    --trust-anchor-key "$fed/efgs-trust-anchor.key" >/dev/null
done
port_open "$port" && fail "port $port is in use (BENCH_EFGS_PORT)"
DATABASE_URL="$(url "$efgs")" HTTP_PORT="$port" TLS_CERT_FILE="$fed/efgs.pem" TLS_KEY_FILE="$fed/efgs.key" \
  TLS_CLIENT_CA_FILE="$fed/ca.pem" EFGS_TRUST_ANCHOR_FILE="$fed/efgs-trust-anchor.pem" EFGS_BATCH_INTERVAL=1s \
  "$bin/efgs-gateway" serve >"$work/gateway.log" 2>&1 &
gateway_pid=$!
ready() { curl -fs --cacert "$fed/ca.pem" --cert "$fed/DE/client.pem" --key "$fed/DE/client.key" "https://127.0.0.1:$port/health/ready"; }
wait_for --pid "$gateway_pid" --log "$work/gateway.log" 30 efgs-gateway ready

# The keys of DE: each valid for a whole day two days ago, submitted an hour ago, consented (so mirrored for upload).
psql -q -d "$de" <<SQL
INSERT INTO diagnosis_key (key_data, submission_type, rolling_start_interval_number, rolling_period, submission_timestamp,
                           transmission_risk_level, origin_country, visited_countries, report_type,
                           days_since_onset_of_symptoms, consent_to_federation)
SELECT decode(md5(random()::text || i::text), 'hex'), 'SUBMISSION_TYPE_PCR_TEST',
       (extract(epoch FROM now())::bigint / 86400 - 2) * 144, 144, extract(epoch FROM now())::bigint / 3600 - 1,
       3 + i % 6, 'DE', ARRAY['DE', 'FR'], 'CONFIRMED_TEST', 3990 + i % 8, true
  FROM generate_series(1, $keys) AS i;
ANALYZE diagnosis_key; ANALYZE federation_upload_key;
SQL

# federation COUNTRY DATABASE COMMAND [SETTING=VALUE ...]
federation() {
  local country="$1" database="$2" command="$3"; shift 3
  env DATABASE_URL="$(url "$database")" FEDERATION_OWN_COUNTRY="$country" EFGS_URL="https://127.0.0.1:$port" \
    EFGS_CLIENT_CERT_FILE="$fed/$country/client.pem" EFGS_CLIENT_KEY_FILE="$fed/$country/client.key" EFGS_CA_FILE="$fed/ca.pem" \
    FEDERATION_SIGNING_CERT_FILE="$fed/$country/signing.pem" FEDERATION_SIGNING_KEY_FILE="$fed/$country/signing.key" \
    FEDERATION_TRUST_ANCHORS="$fed/trust-anchors.pem" "$@" "$bin/federation-service" "$command"
}
seconds() { local start=$1; echo "$(( ${EPOCHREALTIME//[!0-9]/} - start ))" | awk '{ printf "%.2f", $1 / 1000000 }'; }

start=${EPOCHREALTIME//[!0-9]/}
federation DE "$de" upload >"$work/upload.log" 2>&1 || fail_with_log "$work/upload.log" "the upload run failed"
upload_s="$(seconds "$start")"
sent="$(psql -A -t -q -d "$efgs" -c "SELECT count(*) FROM diagnosis_key")"
[ "$sent" = "$keys" ] || fail_with_log "$work/upload.log" "the gateway holds $sent keys, not $keys"
batched() { [ "$(psql -A -t -q -d "$efgs" -c "SELECT count(*) FROM upload_batch WHERE download_batch_tag IS NULL")" = 0 ]; }
wait_for 60 "the gateway's download batches" batched

start=${EPOCHREALTIME//[!0-9]/}
federation FR "$fr" download FEDERATION_DATE_BASED_DOWNLOAD=true >"$work/download.log" 2>&1 \
  || fail_with_log "$work/download.log" "the download run failed"
download_s="$(seconds "$start")"
stored="$(psql -A -t -q -d "$fr" -c "SELECT count(*) FROM diagnosis_key WHERE origin_country = 'DE'")"
[ "$stored" = "$keys" ] || fail_with_log "$work/download.log" "FR stored $stored keys, not $keys"

# The baseline: the same rows copied into a table like diagnosis_key (its checks and primary key) in FR's database.
psql -q -d "$de" -c "\\copy (SELECT * FROM diagnosis_key) TO '$work/keys.copy'"
psql -q -d "$fr" -c "CREATE TABLE bench_copy (LIKE diagnosis_key INCLUDING ALL)"
start=${EPOCHREALTIME//[!0-9]/}
psql -q -d "$fr" -c "\\copy bench_copy FROM '$work/keys.copy'"
copy_s="$(seconds "$start")"

batches="$(psql -A -t -q -d "$efgs" -c "SELECT count(*) || ' upload batches, ' || (SELECT count(*) FROM download_batch) || ' download batches' FROM upload_batch")"
awk -v n="$keys" -v u="$upload_s" -v d="$download_s" -v c="$copy_s" -v b="$batches" -v cfg="${CONFIG:-release}" 'BEGIN {
  printf "keys %d (%s binaries; %s)\n", n, cfg, b
  printf "upload    %6.2f s  %8.0f keys/s  %5.1f x COPY\n", u, n / u, u / c
  printf "download  %6.2f s  %8.0f keys/s  %5.1f x COPY\n", d, n / d, d / c
  printf "COPY      %6.2f s  %8.0f keys/s\n", c, n / c }'
