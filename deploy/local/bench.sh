#!/usr/bin/env bash
# Measures the release builds, started by deploy/local/run.sh without the gateway (a fresh fleet of test-result-,
# verification- and submission-service in .data/bench, its own PostgreSQL cluster on port 54359, every port moved by
# 300; BENCH_PG_PORT and BENCH_PORT_OFFSET change them):
#   1. test-result-service: lab batch uploads of 100 results each (POST /api/v1/lab/results)
#   2. test-result-service: verification lookups (POST /api/v1/app/result), mostly of existing rows
#   3. verification-service: registrations, each with a new GUID (POST /version/v1/registrationToken)
#   4. verification-service: result polls of one token, each asking test-result-service (POST /version/v1/testresult)
#   5. submission-service: real submissions of 14 keys, each verifying a fresh TAN with verification-service
#      (POST /version/v1/diagnosis-keys); the TANs are written into the verification database beforehand
# wrk runs on the same machine, so the figures are for client and server sharing the cores.
# Settings: BENCH_DURATION (default 15s), BENCH_CONNECTIONS (default 32), BENCH_THREADS (default 2).
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
export EN_DATA_DIR="${EN_DATA_DIR:-$root/.data}/bench" EN_PG_PORT="${BENCH_PG_PORT:-54359}" EN_PORT_OFFSET="${BENCH_PORT_OFFSET:-300}"
# The services inherit LOG_LEVEL and DATABASE_POOL_SIZE from run.sh.
export EN_SERVICES="test-result verification submission" EN_GATEWAY=off CONFIG=release LOG_LEVEL=warning DATABASE_POOL_SIZE=16
run="$root/deploy/local/run.sh"
pg="$root/deploy/local/postgres.sh"
duration="${BENCH_DURATION:-15s}"
connections="${BENCH_CONNECTIONS:-32}"
threads="${BENCH_THREADS:-2}"

for binary in test-result-service verification-service submission-service; do
  [ -x "$root/.build/release/$binary" ] || fail "$root/.build/release/$binary missing (make bench builds it)"
done
need_commands wrk

"$run" stop >/dev/null 2>&1 || true
rm -rf "$EN_DATA_DIR"
mkdir -p "$EN_DATA_DIR"
tans="$(mktemp)"
trap '"$run" stop >/dev/null 2>&1 || true; rm -f "$tans"' EXIT
fleet_up "$run" "$EN_DATA_DIR/up.log"

# sql DATABASE QUERY: one value, as the cluster's superuser (the password stays in the environment).
sql() { "$pg" psql -X -q -t -A -d "$1" -c "$2"; }
rss() { ps -o rss= -p "$(cat "$EN_DATA_DIR/run/$1.pid")" | awk '{printf "%.0f MB", $1/1024}'; }

# One wrk run with a Lua script of bench/, printing the summary lines.
measure() {
  local script="$1" url="$2"
  wrk -t"$threads" -c"$connections" -d"$duration" --latency -s "$root/deploy/local/bench/$script" "$url" \
    | grep -E "Requests/sec|Latency|50%|99%|Non-2xx|requests in"
}

echo "== test-result-service (release), $threads threads, $connections connections, $duration each =="
echo
echo "-- lab uploads, 100 results per batch"
measure lab-upload.lua "$EN_TEST_RESULT_URL"
echo
echo "-- verification lookups (1000 distinct ids)"
# verification-service's service token for the internal port, valid 60 s: keep BENCH_DURATION below that.
BENCH_SERVICE_TOKEN="$("$root/deploy/local/dev-jwt.sh" service verification test-result-service)" \
  measure lookup.lua "$EN_TEST_RESULT_INTERNAL_URL"
echo
echo "rows stored: $(sql testresult 'SELECT count(*) FROM test_result')"
echo "service RSS: $(rss test-result)"

echo
echo "== verification-service (release) with test-result-service, same settings =="
echo
echo "-- registrations, a new hashed GUID each"
measure register.lua "$EN_VERIFICATION_URL"
guid="$(head -c 32 /dev/urandom | sha256sum | cut -d' ' -f1)"
curl -fsS -o /dev/null -X POST "$EN_TEST_RESULT_URL/api/v1/lab/results" -H 'Content-Type: application/json' \
  -d '{"labId":"bench","testResults":[{"id":"'"$guid"'","result":2}]}'
token="$(curl -fsS -X POST "$EN_VERIFICATION_URL/version/v1/registrationToken" -H 'Content-Type: application/json' \
  -d '{"key":"'"$guid"'","keyType":"GUID"}' | sed 's/.*"registrationToken":"\([^"]*\)".*/\1/')"
echo
echo "-- result polls of one token (each reads the session and asks test-result-service)"
BENCH_TOKEN="$token" measure poll.lua "$EN_VERIFICATION_URL"
echo
echo "sessions stored: $(sql verification 'SELECT count(*) FROM app_session')"
echo "verification-service RSS: $(rss verification)"

# Unused TANs as verification-service stores them (SHA-256 of the text), more than a run can use.
sql verification "
  WITH fresh AS MATERIALIZED (SELECT gen_random_uuid()::text AS tan FROM generate_series(1, 40000)),
       added AS (INSERT INTO tan (tan_hash, source, created_at, valid_from, valid_until)
                 SELECT encode(sha256(convert_to(tan, 'UTF8')), 'hex'), 'CONNECTED_LAB', now(), now(), now() + interval '1 day' FROM fresh)
  SELECT tan FROM fresh" >"$tans"

echo
echo "== submission-service (release) with verification-service, same settings =="
echo
echo "-- real submissions of 14 keys, a fresh TAN each (TAN verification, validation, one transaction)"
BENCH_TANS="$tans" BENCH_THREADS="$threads" measure submit.lua "$EN_SUBMISSION_URL"
echo
echo "keys stored: $(sql keys 'SELECT count(*) FROM diagnosis_key')"
echo "submission-service RSS: $(rss submission)"
