#!/usr/bin/env bash
# Runs the suite on loopback for development: PostgreSQL (deploy/local/postgres.sh) and every service built so far.
#
#   deploy/local/run.sh          start everything, print the URLs, follow the logs; Ctrl-C stops everything
#   deploy/local/run.sh stop     stop what a previous run left running (services, then PostgreSQL)
#   deploy/local/run.sh distribute   one distribution run now (`distribution-service run`), beside a running suite
#
# Binaries come from .build/<CONFIG> (make run builds them first). State lives under .data/: the database
# cluster, logs in .data/logs, process ids in .data/run. A second run reuses .data/.
set -euo pipefail
shopt -s nullglob

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
data="${EN_DATA_DIR:-$root/.data}"
pg="$root/deploy/local/postgres.sh"
config="${CONFIG:-debug}"
bin="$root/.build/$config"
logs="$data/logs"
pids="$data/run"

# name | binary [arguments] | environment (space-separated KEY=VALUE; @db:<role> is replaced by that role's database
# URL, @jwt-public-key by the development key of deploy/local/dev-jwt.sh, @data by the data folder)
services=(
  "test-result|test-result-service|HTTP_PORT=8003 INTERNAL_HTTP_PORT=8013 DATABASE_URL=@db:testresult"
  "verification|verification-service|HTTP_PORT=8002 INTERNAL_HTTP_PORT=8012 DATABASE_URL=@db:verification TEST_RESULT_INTERNAL_URL=http://127.0.0.1:8013 TELETAN_JWT_PUBLIC_KEYS=@data/keys/teletan-trusted.pem"
  "submission|submission-service|HTTP_PORT=8001 DATABASE_URL=@db:submission VERIFICATION_INTERNAL_URL=http://127.0.0.1:8012"
  "portal|portal-service|HTTP_PORT=8004 DATABASE_URL=@db:portal VERIFICATION_INTERNAL_URL=http://127.0.0.1:8012 PORTAL_JWT_KEY_FILE=@data/keys/portal-jwt.pem PORTAL_ALLOWED_HOSTS=127.0.0.1:8004,localhost:8004"
  "distribution|distribution-service serve|HTTP_PORT=8005 DATABASE_URL=@db:distribution SIGNING_KEY_FILES=@data/keys/cdn-signing.pem CDN_DIRECTORY=@data/cdn SIGNATURE_APP_BUNDLE_ID=de.rki.coronawarnapp-dev"
)
distribution_entry="${services[4]}"

# The development key that signs the CDN tree: P-256, created once, kept in .data/keys (never committed).
ensure_cdn_key() {
  local key="$data/keys/cdn-signing.pem"
  [ -s "$key" ] && return 0
  command -v openssl >/dev/null || fail "openssl is required to create the development CDN signing key"
  mkdir -p "$data/keys"
  chmod 700 "$data/keys"
  ( umask 077; openssl ecparam -name prime256v1 -genkey -noout -out "$key" 2>/dev/null ) || fail "could not create $key"
  say "created the development CDN signing key $key"
}

# The portal's token key, and the keys verification-service trusts for teleTAN requests: the portal's and the one
# deploy/local/dev-jwt.sh signs hand-made tokens with.
ensure_portal_keys() {
  local key="$data/keys/portal-jwt.pem" dev_public
  if [ ! -s "$key" ]; then
    mkdir -p "$data/keys"
    ( umask 077; openssl ecparam -name prime256v1 -genkey -noout -out "$key" 2>/dev/null ) || fail "could not create $key"
  fi
  dev_public="$("$root/deploy/local/dev-jwt.sh" keys)"
  { cat "$dev_public"; openssl ec -in "$key" -pubout 2>/dev/null; } >"$data/keys/teletan-trusted.pem"
}

# The development officer (both roles), created once; the password and the TOTP URI stay in .data.
ensure_officer() {
  local password_file="$data/secrets/portal-officer" uri_file="$data/keys/portal-officer.otpauth"
  [ -s "$uri_file" ] && return 0
  mkdir -p "$data/secrets"
  ( umask 077; head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$password_file" )
  ( export DATABASE_URL="$("$pg" url portal)"; "$bin/portal-service" user add officer c19hotline,c19hotline_event <"$password_file" >"$uri_file" ) \
    || fail "could not create the development officer"
  say "created the development officer 'officer'"
}

cdn_public_key() { openssl ec -in "$data/keys/cdn-signing.pem" -pubout 2>/dev/null; }

say() { printf '%s\n' "$*"; }
fail() { printf 'run.sh: %s\n' "$*" >&2; exit 1; }

# Whether pid runs one of our binaries: after a reboot a stale pidfile may name an unrelated process.
is_ours() {
  local exe
  exe="$(readlink "/proc/$1/exe" 2>/dev/null)" || return 1
  case "$exe" in "$root"/.build/*) return 0 ;; *) return 1 ;; esac
}

stop_services() {
  local pidfile pid name
  for pidfile in "$pids"/*.pid; do
    name="$(basename "$pidfile" .pid)"
    pid="$(cat "$pidfile")"
    if is_ours "$pid"; then
      kill -TERM "$pid" 2>/dev/null || true
      # The services drain for at most 8 s; give them 12 before insisting.
      for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && { say "  $name did not stop in time; killing it"; kill -KILL "$pid" 2>/dev/null || true; }
      say "  stopped $name"
    fi
    rm -f "$pidfile"
  done
}

stop_all() {
  say "stopping…"
  if [ -n "${tail_pid:-}" ]; then kill "$tail_pid" 2>/dev/null || true; fi
  stop_services
  "$pg" stop >/dev/null 2>&1 || true
  say "  stopped PostgreSQL"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The environment of a service entry, one KEY=VALUE per line.
service_env() {
  local settings="$1" item role
  for item in $settings; do
    case "$item" in
      *=@db:*) role="${item#*=@db:}"; printf '%s\n' "${item%%=*}=$("$pg" url "$role")" ;;
      *=@jwt-public-key) printf '%s\n' "${item%%=*}=$("$root/deploy/local/dev-jwt.sh" keys)" ;;
      *=@data/*) printf '%s\n' "${item%%=*}=$data/${item#*=@data/}" ;;
      *) printf '%s\n' "$item" ;;
    esac
  done
}

start_service() {
  local name="$1" binary="${2%% *}" args=() env=() item
  [[ "$2" == *" "* ]] && read -ra args <<<"${2#* }"
  [ -x "$bin/$binary" ] || fail "$bin/$binary is missing: run 'make run' (it builds first)"
  mapfile -t env < <(service_env "$3")
  for item in "${env[@]}"; do
    case "$item" in *_PORT=*) port_in_use "${item#*=}" && fail "port ${item#*=} (for $name) is already in use; is another run active? ('make stop')" ;; esac
  done
  # Exported in a subshell, not passed to env(1): a command line is visible to every user in ps, and
  # DATABASE_URL holds a password.
  ( export "${env[@]}" LOG_LEVEL="${LOG_LEVEL:-info}"; exec "$bin/$binary" "${args[@]}" ) >>"$logs/$name.log" 2>&1 &
  echo $! >"$pids/$name.pid"
}

wait_ready() {
  local name="$1" port="$2"
  for _ in $(seq 1 300); do
    if curl -fsS "http://127.0.0.1:$port/health/ready" >/dev/null 2>&1; then return 0; fi
    kill -0 "$(cat "$pids/$name.pid")" 2>/dev/null || { tail -n 20 "$logs/$name.log" >&2; fail "$name exited during start-up (log: $logs/$name.log)"; }
    sleep 0.1
  done
  tail -n 20 "$logs/$name.log" >&2
  fail "$name did not become ready within 30 s (log: $logs/$name.log)"
}

# One distribution run with the suite's settings, e.g. right after a submission (the served one runs hourly).
distribute_now() {
  local env=() settings
  IFS='|' read -r _ _ settings <<<"$distribution_entry"
  mapfile -t env < <(service_env "$settings" | grep -v '^HTTP_PORT=')
  ensure_cdn_key
  ( export "${env[@]}" LOG_LEVEL="${LOG_LEVEL:-info}"; exec "$bin/distribution-service" run )
}

case "${1:-run}" in
  stop) stop_all; exit 0 ;;
  distribute) distribute_now; exit $? ;;
  run) ;;
  -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
  *) fail "unknown command '$1' (run or stop)" ;;
esac

command -v curl >/dev/null || fail "curl is required"
mkdir -p "$logs" "$pids"
stop_services >/dev/null   # leftovers of a run that was killed
"$pg" start >/dev/null
ensure_cdn_key
ensure_portal_keys
ensure_officer
trap 'stop_all; exit 0' INT TERM

for entry in "${services[@]}"; do
  IFS='|' read -r name binary settings <<<"$entry"
  start_service "$name" "$binary" "$settings"
done
for entry in "${services[@]}"; do
  IFS='|' read -r name binary settings <<<"$entry"
  port="$(tr ' ' '\n' <<<"$settings" | sed -n 's/^HTTP_PORT=//p')"
  wait_ready "$name" "$port"
done

guid_hash="$(printf 'example-guid' | sha256sum | cut -d' ' -f1)"
cat <<INFO

The suite is running on loopback (Ctrl-C stops everything; 'make stop' from another terminal does the same).

  PostgreSQL            127.0.0.1:${EN_PG_PORT:-54329}   (URLs: deploy/local/postgres.sh url <service>)
  test-result-service   http://127.0.0.1:8003   lab API (POST /api/v1/lab/results …), /openapi.yaml, /metrics
                        http://127.0.0.1:8013   internal API for verification (POST /api/v1/app/result)
  verification-service  http://127.0.0.1:8002   app API (POST /version/v1/registrationToken, /testresult, /tan)
                        http://127.0.0.1:8012   internal API (POST /version/v1/tan/verify, /tan/teletan, /testresult)
  submission-service    http://127.0.0.1:8001   app API (POST /version/v1/diagnosis-keys, /submission-on-behalf)
  portal-service        http://127.0.0.1:8004   officers' portal: user 'officer', password in $data/secrets/portal-officer,
                        TOTP secret: $(cat "$data/keys/portal-officer.otpauth" 2>/dev/null)
  distribution-service  http://127.0.0.1:8005   health and metrics; runs hourly (and now: 'deploy/local/run.sh distribute')
                        CDN tree in $data/cdn (make run serves it through the gateway once that exists)

The CDN signing key (development; verify archives with 'openssl dgst -sha256 -verify'):
$(cdn_public_key)

Try it:
  curl -i -X POST http://127.0.0.1:8003/api/v1/lab/results -H 'Content-Type: application/json' \\
       -d '{"labId":"lab-1","testResults":[{"id":"$guid_hash","result":2}]}'
  curl -s -X POST http://127.0.0.1:8013/api/v1/app/result -H 'Content-Type: application/json' \\
       -d '{"id":"$guid_hash"}'
  curl -s -X POST http://127.0.0.1:8002/version/v1/registrationToken -H 'Content-Type: application/json' \\
       -d '{"key":"$guid_hash","keyType":"GUID"}'
  curl -s -X POST http://127.0.0.1:8012/version/v1/tan/teletan \\
       -H "Authorization: Bearer \$(deploy/local/dev-jwt.sh token c19hotline)"
  deploy/local/example-payload.sh 14 | curl -s -o /dev/null -w '%{http_code}\\n' -X POST \\
       http://127.0.0.1:8001/version/v1/diagnosis-keys -H 'Content-Type: application/x-protobuf' \\
       -H 'cwa-fake: 1' --data-binary @-
  (the README walks through the whole GUID, teleTAN and submission journeys)

Logs: $logs (following them below)
INFO

tail -n 0 -F "$logs"/*.log &
tail_pid=$!
# Wait until a service dies, `make stop` runs elsewhere (it removes the pidfiles), or the user presses Ctrl-C.
while true; do
  remaining=("$pids"/*.pid)
  if [ ${#remaining[@]} -eq 0 ]; then
    kill "$tail_pid" 2>/dev/null || true
    say "stopped by 'make stop'"
    exit 0
  fi
  for pidfile in "${remaining[@]}"; do
    if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile" 2>/dev/null || echo 0)" 2>/dev/null; then
      say "run.sh: $(basename "$pidfile" .pid) stopped unexpectedly (log in $logs)" >&2
      stop_all
      exit 1
    fi
  done
  sleep 1
done
