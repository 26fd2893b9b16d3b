#!/usr/bin/env bash
# Measures the release builds against a throw-away database on the local cluster:
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
pg="$root/deploy/local/postgres.sh"
binary="$root/.build/release/test-result-service"
verification_binary="$root/.build/release/verification-service"
submission_binary="$root/.build/release/submission-service"
duration="${BENCH_DURATION:-15s}"
connections="${BENCH_CONNECTIONS:-32}"
threads="${BENCH_THREADS:-2}"
lab_port=18003
internal_port=18013
app_port=18002
verification_internal_port=18012
submission_port=18001

for b in "$binary" "$verification_binary" "$submission_binary"; do [ -x "$b" ] || { echo "bench.sh: $b missing (make bench builds it)" >&2; exit 1; }; done
if ! command -v wrk >/dev/null; then
  echo "bench.sh: installing wrk"
  $( [ "$(id -u)" = 0 ] || echo sudo ) apt-get update -qq
  $( [ "$(id -u)" = 0 ] || echo sudo ) apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi

"$pg" start >/dev/null
database_env="$("$pg" env)"
eval "$database_env"
# psql reads the password from the environment, so it never appears in a process list.
export PGHOST="$POSTGRES_HOST" PGPORT="$POSTGRES_PORT" PGUSER="$POSTGRES_USER" PGPASSWORD="$POSTGRES_PASSWORD"
database="en_bench_$(date +%s)"
psql -q -d postgres -c "CREATE DATABASE $database"
log="$(mktemp)"
cleanup() {
  [ -n "${submission_pid:-}" ] && kill -TERM "$submission_pid" 2>/dev/null && wait "$submission_pid" 2>/dev/null
  [ -n "${verification_pid:-}" ] && kill -TERM "$verification_pid" 2>/dev/null && wait "$verification_pid" 2>/dev/null
  [ -n "${service_pid:-}" ] && kill -TERM "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
  psql -q -d postgres -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" || true
  rm -f "$log" "${tans:-}"
}
trap cleanup EXIT

# Services get the URL through their environment, never on a command line.
export DATABASE_URL="postgres://$PGUSER:$PGPASSWORD@$PGHOST:$PGPORT/$database?sslmode=disable" LOG_LEVEL=warning DATABASE_POOL_SIZE=16

# Waits for a service's readiness; a service that never gets ready ends the benchmark.
wait_ready() {
  for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$1/health/ready" >/dev/null && return 0; sleep 0.1; done
  echo "bench.sh: the service on port $1 did not become ready; its log:" >&2
  cat "$log" >&2
  exit 1
}

# One wrk run with a Lua script of bench/, printing the summary lines.
measure() {
  local script="$1" port="$2"
  wrk -t"$threads" -c"$connections" -d"$duration" --latency -s "$root/deploy/local/bench/$script" "http://127.0.0.1:$port" \
    | grep -E "Requests/sec|Latency|50%|99%|Non-2xx|requests in"
}

HTTP_PORT=$lab_port INTERNAL_HTTP_PORT=$internal_port "$binary" >"$log" 2>&1 &
service_pid=$!
wait_ready $lab_port

echo "== test-result-service (release), $threads threads, $connections connections, $duration each =="
echo
echo "-- lab uploads, 100 results per batch"
measure lab-upload.lua $lab_port
echo
echo "-- verification lookups (1000 distinct ids)"
measure lookup.lua $internal_port
echo
rows="$(psql -tA -d "$database" -c 'SELECT count(*) FROM test_result')"
echo "rows stored: $rows"
echo "service RSS: $(ps -o rss= -p "$service_pid" | awk '{printf "%.0f MB", $1/1024}')"

HTTP_PORT=$app_port INTERNAL_HTTP_PORT=$verification_internal_port TEST_RESULT_INTERNAL_URL="http://127.0.0.1:$internal_port" \
  TELETAN_JWT_PUBLIC_KEYS="$("$root/deploy/local/dev-jwt.sh" keys)" "$verification_binary" >>"$log" 2>&1 &
verification_pid=$!
wait_ready $app_port

echo
echo "== verification-service (release) with test-result-service, same settings =="
echo
echo "-- registrations, a new hashed GUID each"
measure register.lua $app_port
guid="$(head -c 32 /dev/urandom | sha256sum | cut -d' ' -f1)"
curl -fsS -o /dev/null -X POST "http://127.0.0.1:$lab_port/api/v1/lab/results" -H 'Content-Type: application/json' \
  -d '{"labId":"bench","testResults":[{"id":"'"$guid"'","result":2}]}'
token="$(curl -fsS -X POST "http://127.0.0.1:$app_port/version/v1/registrationToken" -H 'Content-Type: application/json' \
  -d '{"key":"'"$guid"'","keyType":"GUID"}' | sed 's/.*"registrationToken":"\([^"]*\)".*/\1/')"
echo
echo "-- result polls of one token (each reads the session and asks test-result-service)"
BENCH_TOKEN="$token" measure poll.lua $app_port
echo
echo "sessions stored: $(psql -tA -d "$database" -c 'SELECT count(*) FROM app_session')"
echo "verification-service RSS: $(ps -o rss= -p "$verification_pid" | awk '{printf "%.0f MB", $1/1024}')"

HTTP_PORT=$submission_port VERIFICATION_INTERNAL_URL="http://127.0.0.1:$verification_internal_port" "$submission_binary" >>"$log" 2>&1 &
submission_pid=$!
wait_ready $submission_port
# Unused TANs as verification-service stores them (SHA-256 of the text), more than a run can use.
tans="$(mktemp)"
psql -tA -d "$database" -c "
  WITH fresh AS MATERIALIZED (SELECT gen_random_uuid()::text AS tan FROM generate_series(1, 40000)),
       added AS (INSERT INTO tan (tan_hash, source, created_at, valid_from, valid_until)
                 SELECT encode(sha256(convert_to(tan, 'UTF8')), 'hex'), 'CONNECTED_LAB', now(), now(), now() + interval '1 day' FROM fresh)
  SELECT tan FROM fresh" >"$tans"

echo
echo "== submission-service (release) with verification-service, same settings =="
echo
echo "-- real submissions of 14 keys, a fresh TAN each (TAN verification, validation, one transaction)"
BENCH_TANS="$tans" BENCH_THREADS="$threads" measure submit.lua $submission_port
echo
echo "keys stored: $(psql -tA -d "$database" -c 'SELECT count(*) FROM diagnosis_key')"
echo "submission-service RSS: $(ps -o rss= -p "$submission_pid" | awk '{printf "%.0f MB", $1/1024}')"
