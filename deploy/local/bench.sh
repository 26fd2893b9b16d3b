#!/usr/bin/env bash
# Measures test-result-service (release build) against a throw-away database on the local cluster:
#   1. lab batch uploads of 100 results each (POST /api/v1/lab/results)
#   2. verification lookups (POST /api/v1/app/result), mostly of existing rows
# wrk runs on the same machine, so the figures are for client and server sharing the cores.
# Settings: BENCH_DURATION (default 15s), BENCH_CONNECTIONS (default 32), BENCH_THREADS (default 2).
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
pg="$root/deploy/local/postgres.sh"
binary="$root/.build/release/test-result-service"
duration="${BENCH_DURATION:-15s}"
connections="${BENCH_CONNECTIONS:-32}"
threads="${BENCH_THREADS:-2}"
lab_port=18003
internal_port=18013

[ -x "$binary" ] || { echo "bench.sh: $binary missing (make bench builds it)" >&2; exit 1; }
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
  [ -n "${service_pid:-}" ] && kill -TERM "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
  psql -q -d postgres -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" || true
  rm -f "$log"
}
trap cleanup EXIT

DATABASE_URL="postgres://$PGUSER:$PGPASSWORD@$PGHOST:$PGPORT/$database?sslmode=disable" HTTP_PORT=$lab_port INTERNAL_HTTP_PORT=$internal_port \
  LOG_LEVEL=warning DATABASE_POOL_SIZE=16 "$binary" >"$log" 2>&1 &
service_pid=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$lab_port/health/ready" >/dev/null && break; sleep 0.1; done

echo "== test-result-service (release), $threads threads, $connections connections, $duration each =="
echo
echo "-- lab uploads, 100 results per batch"
wrk -t"$threads" -c"$connections" -d"$duration" --latency -s "$root/deploy/local/bench/lab-upload.lua" "http://127.0.0.1:$lab_port" \
  | grep -E "Requests/sec|Latency|50%|99%|Non-2xx|requests in"
echo
echo "-- verification lookups (1000 distinct ids)"
wrk -t"$threads" -c"$connections" -d"$duration" --latency -s "$root/deploy/local/bench/lookup.lua" "http://127.0.0.1:$internal_port" \
  | grep -E "Requests/sec|Latency|50%|99%|Non-2xx|requests in"
echo
rows="$(psql -tA -d "$database" -c 'SELECT count(*) FROM test_result')"
echo "rows stored: $rows"
echo "service RSS: $(ps -o rss= -p "$service_pid" | awk '{printf "%.0f MB", $1/1024}')"
