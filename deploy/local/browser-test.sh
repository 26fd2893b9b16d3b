#!/usr/bin/env bash
# Drives portal-service in headless Chromium (make test-browser, and the last step of make test): creates an officer
# with the portal's CLI, then Tests/Browser/portal_flow.py logs in with password and TOTP, issues a TEST teleTAN,
# registers it at verification-service, sees the rate-limit page for a second one, logs out and checks that the back
# button does not bring the teleTAN back. It prints how long the officer needed from the login page to the teleTAN.
#
# test-result-, verification- and portal-service run from .build/debug (make test-browser builds them) on
# ports 18103/18113, 18102/18112 and 18104, against throw-away databases on the local cluster (dropped on exit), with
# a fresh P-256 key for the portal's tokens. A screenshot of the result page goes to
# .build/test-artifacts/portal-teletan.png. Chromium and its driver (Debian's packages) and Selenium (PyPI, in the
# venv .data/browser-venv) are installed when missing. Exits with the flow's status.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
data="${EN_DATA_DIR:-$root/.data}"
pg="$root/deploy/local/postgres.sh"
bin="$root/.build/debug"
venv="$data/browser-venv"
screenshot="$root/.build/test-artifacts/portal-teletan.png"
testresult_port=18103
testresult_internal_port=18113
verification_port=18102
verification_internal_port=18112
portal_port=18104
username=officer1

say() { printf 'browser-test.sh: %s\n' "$*"; }
fail() { printf 'browser-test.sh: %s\n' "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Whether the venv has Selenium 4.10 or later.
selenium_ready() {
  "$venv/bin/python" - 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
sys.exit(0 if tuple(int(part) for part in version("selenium").split(".")[:2]) >= (4, 10) else 1)
PY
}

# Chromium, chromedriver and a venv with Selenium; quick when all are there already.
ensure_browser() {
  local missing=() need_venv=0
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  [ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  selenium_ready || need_venv=1
  # Debian's python3 creates venvs only with python3-venv (it brings ensurepip).
  if [ $need_venv = 1 ] && ! python3 -c 'import venv, ensurepip' 2>/dev/null; then missing+=(python3-venv); fi
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if [ $need_venv = 1 ]; then
    say "installing Selenium into $venv"
    rm -rf "$venv"
    mkdir -p "$data"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check 'selenium>=4.10'
    selenium_ready || fail "Selenium did not install into $venv"
  fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Starts one binary in the background with the given KEY=VALUE settings exported (never on its command line: the
# database URL holds a password), logging to $work/<name>.log; its pid goes to pids[name].
declare -A pids=()
start() {
  local name="$1" binary="$2" settings=("${@:3}")
  ( export "${settings[@]}"; exec "$bin/$binary" ) >>"$work/$name.log" 2>&1 &
  pids[$name]=$!
}

wait_ready() {
  local name="$1" port="$2"
  for _ in $(seq 1 300); do
    curl -fsS "http://127.0.0.1:$port/health/ready" >/dev/null 2>&1 && return 0
    kill -0 "${pids[$name]}" 2>/dev/null || { tail -n 20 "$work/$name.log" >&2; fail "$name exited during start-up"; }
    sleep 0.1
  done
  tail -n 20 "$work/$name.log" >&2
  fail "$name did not become ready within 30 s"
}

# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local name
  for name in portal verification test-result; do
    [ -n "${pids[$name]:-}" ] || continue
    kill -TERM "${pids[$name]}" 2>/dev/null || true
    wait "${pids[$name]}" 2>/dev/null || true
  done
  if [ -n "${databases:-}" ]; then
    for database in $databases; do psql -q -d postgres -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" || true; done
  fi
  [ -n "${work:-}" ] && rm -rf "$work"
}

for binary in test-result-service verification-service portal-service; do
  [ -x "$bin/$binary" ] || fail "$bin/$binary is missing (make test-browser builds it)"
done
for port in $testresult_port $testresult_internal_port $verification_port $verification_internal_port $portal_port; do
  port_in_use "$port" && fail "port $port is already in use"
done
started=$(date +%s)
ensure_browser
installed=$(date +%s)

"$pg" start >/dev/null
database_env="$("$pg" env)"
eval "$database_env"
# psql reads the password from the environment, so it never appears in a process list.
export PGHOST="$POSTGRES_HOST" PGPORT="$POSTGRES_PORT" PGUSER="$POSTGRES_USER" PGPASSWORD="$POSTGRES_PASSWORD"
work="$(mktemp -d)"
trap cleanup EXIT
trap 'exit 130' INT TERM
suffix="$(date +%s)_$$"
databases="en_browser_verification_$suffix en_browser_testresult_$suffix en_browser_portal_$suffix"
for database in $databases; do psql -q -d postgres -c "CREATE DATABASE $database"; done
url() { printf 'postgres://%s:%s@%s:%s/en_browser_%s_%s?sslmode=disable' "$PGUSER" "$PGPASSWORD" "$PGHOST" "$PGPORT" "$1" "$suffix"; }

# A fresh key for the portal's teleTAN tokens; verification-service trusts its public half (the PEM text itself).
( umask 077; openssl ecparam -name prime256v1 -genkey -noout -out "$work/portal-jwt.pem" 2>/dev/null ) \
  || fail "could not create the portal's token key"
portal_public_key="$(openssl ec -in "$work/portal-jwt.pem" -pubout 2>/dev/null)"

common=(LOG_LEVEL=warning)
testresult_env=("${common[@]}" DATABASE_URL="$(url testresult)" HTTP_PORT="$testresult_port"
  INTERNAL_HTTP_PORT="$testresult_internal_port")
verification_env=("${common[@]}" DATABASE_URL="$(url verification)" HTTP_PORT="$verification_port"
  INTERNAL_HTTP_PORT="$verification_internal_port" TEST_RESULT_INTERNAL_URL="http://127.0.0.1:$testresult_internal_port"
  TELETAN_JWT_PUBLIC_KEYS="$portal_public_key")
portal_env=("${common[@]}" DATABASE_URL="$(url portal)" HTTP_PORT="$portal_port"
  VERIFICATION_INTERNAL_URL="http://127.0.0.1:$verification_internal_port" PORTAL_JWT_KEY_FILE="$work/portal-jwt.pem"
  PORTAL_ALLOWED_HOSTS="127.0.0.1:$portal_port,localhost:$portal_port")

# The officer, with both roles, before the portal starts; the CLI prints only the otpauth:// URI on standard output.
password="$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')"
totp_uri="$(printf '%s\n' "$password" | ( export "${portal_env[@]}"; exec "$bin/portal-service" user add "$username" c19hotline,c19hotline_event ))" \
  || fail "portal-service user add failed"
if [ "$(printf '%s\n' "$totp_uri" | wc -l)" != 1 ] || [[ $totp_uri != otpauth://totp/* ]]; then
  fail "portal-service user add printed something other than one otpauth://totp/ URI"
fi

start test-result test-result-service "${testresult_env[@]}"
start verification verification-service "${verification_env[@]}"
start portal portal-service "${portal_env[@]}"
wait_ready test-result $testresult_port
wait_ready verification $verification_port
wait_ready portal $portal_port
say "services ready in $(( $(date +%s) - installed )) s (installation check $(( installed - started )) s); driving the portal"

# The password and the URI (it holds the TOTP secret) reach the flow through its environment, not its command line.
status=0
PORTAL_FLOW_PASSWORD="$password" PORTAL_FLOW_TOTP_URI="$totp_uri" SE_OFFLINE=true \
  "$venv/bin/python" "$root/Tests/Browser/portal_flow.py" \
    --portal "http://127.0.0.1:$portal_port" --verification "http://127.0.0.1:$verification_port" \
    --username "$username" --check-event-form --screenshot "$screenshot" || status=$?
if [ "$status" -ne 0 ]; then
  for name in portal verification test-result; do
    if [ -s "$work/$name.log" ]; then say "last lines of $name's log:"; tail -n 20 "$work/$name.log" | sed 's/^/    /'; fi
  done
  say "FAILED (exit $status)"
else
  say "passed in $(( $(date +%s) - started )) s"
fi
exit "$status"
