#!/usr/bin/env bash
# What the scripts of deploy/ and .ci/run share; they source it (`. "$root/deploy/local/lib.sh"`). The scripts the
# images run (deploy/healthcheck.sh, deploy/postgres/init.sh) stand alone. Run directly, it runs one of its functions:
# `deploy/local/lib.sh need_commands shellcheck`.
#
#   say MESSAGE…                 one line on stderr after "$lib_name: " (the script's file name unless the script sets
#                                another), so that stdout stays the script's output
#   fail MESSAGE…                say it and exit 1
#   fail_with_log FILE MESSAGE…  say it, then the last lines of FILE, and exit 1
#   is_root                      whether this runs as root
#   as_root COMMAND…             run COMMAND as root: directly, or through sudo
#   install_packages PACKAGE…    install the Debian packages that are not installed yet
#   need_commands COMMAND[:PACKAGE]…  install the package (default: the command's name) of each missing command
#   port_open PORT [HOST]        whether something accepts TCP connections there (HOST: 127.0.0.1)
#   http_ok CURL-ARGS…           whether the URL answers 2xx; http_answers: whether it answers at all
#   wait_for [--pid PID] [--alive COMMAND] [--log FILE] SECONDS WHAT CHECK…
#                                run CHECK until it succeeds; fail after SECONDS, or as soon as process PID is gone or
#                                COMMAND fails (WHAT names the awaited thing in the message, FILE explains it)

lib_name="$(basename -- "$0")"

say() { printf '%s: %s\n' "$lib_name" "$*" >&2; }
fail() { say "$*"; exit 1; }
fail_with_log() {
  local log="$1"
  shift
  say "$*"
  if [ -s "$log" ]; then
    say "last lines of $log:"
    tail -n 20 -- "$log" | sed 's/^/    /' >&2
  fi
  exit 1
}

# fleet_up RUN LOG: starts the fleet of RUN (deploy/local/run.sh, configured by the EN_* variables) with its output in
# LOG, and loads its environment (CWA_*, EN_*_URL); fails with LOG's last lines when it does not start.
fleet_up() {
  "$1" up >"$2" 2>&1 || fail_with_log "$2" "the fleet did not start"
  eval "$("$1" env)"
}

is_root() { [ "$EUID" -eq 0 ]; }

as_root() {
  if is_root; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    fail "'$*' needs root, and there is no sudo: run this as root"
  fi
}

# apt-get update runs once per process tree: the first one exports EN_APT_UPDATED, and the scripts started afterwards
# skip it. No recommended packages (docker-compose would bring a whole container engine), no questions, no chatter on
# stdout.
install_packages() {
  local package missing=()
  for package in "$@"; do
    [ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" = "install ok installed" ] || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || fail "${missing[*]} missing, and there is no apt-get here: install them yourself"
  say "installing ${missing[*]}"
  if [ -z "${EN_APT_UPDATED:-}" ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || fail "apt-get update failed"
    export EN_APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || fail "could not install ${missing[*]}"
}

# Commands are looked for in /usr/sbin and /sbin too: Debian puts nginx there, out of a normal user's PATH.
need_commands() {
  local item packages=()
  for item in "$@"; do
    PATH="$PATH:/usr/sbin:/sbin" command -v "${item%%:*}" >/dev/null || packages+=("${item#*:}")
  done
  [ ${#packages[@]} -eq 0 ] || install_packages "${packages[@]}"
}

port_open() { (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null; }

http_ok() { curl -fs -o /dev/null "$@"; }
http_answers() { curl -s -o /dev/null "$@"; }

wait_for() {
  local pid="" alive="" log=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --pid) pid="$2"; shift 2 ;;
      --alive) alive="$2"; shift 2 ;;
      --log) log="$2"; shift 2 ;;
      *) break ;;
    esac
  done
  local seconds="$1" what="$2"
  shift 2
  # In microseconds (EPOCHREALTIME without its decimal mark): SECONDS counts whole seconds only.
  local deadline=$((${EPOCHREALTIME//[!0-9]/} + seconds * 1000000))
  until "$@" >/dev/null 2>&1; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then fail_with_log "$log" "$what exited before it was ready"; fi
    if [ -n "$alive" ] && ! "$alive"; then fail_with_log "$log" "$what exited before it was ready"; fi
    if ((${EPOCHREALTIME//[!0-9]/} >= deadline)); then fail_with_log "$log" "$what was not ready within $seconds s"; fi
    sleep 0.1
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  "$@"
fi

# insert_synthetic_keys DATABASE COUNT: COUNT random keys of the `keys` schema for distribution runs (bench, drills),
# spread over the 240 complete hours before now, TRL 3–8, all from DE, each key's day ended two days before its
# submission (past the expiry policy). psql connects with the caller's PG* settings.
insert_synthetic_keys() {
  psql -q -d "$1" <<SQL
INSERT INTO diagnosis_key (key_data, submission_type, rolling_start_interval_number, rolling_period, submission_timestamp,
                           transmission_risk_level, origin_country, visited_countries, report_type,
                           days_since_onset_of_symptoms, consent_to_federation)
SELECT decode(md5(random()::text || i::text), 'hex'), 'SUBMISSION_TYPE_PCR_TEST',
       ((h - 48) / 24) * 144, 144, h, 3 + i % 6, 'DE', ARRAY['DE'], 'CONFIRMED_TEST', 0, false
  FROM (SELECT i, (extract(epoch FROM now())::bigint / 3600) - 1 - (i % 240) AS h
          FROM generate_series(1, $2) AS i) AS s;
ANALYZE diagnosis_key;
SQL
}

# bench_keys_database PREFIX SUBMISSION: a throw-away database PREFIX_<time> on the local cluster with the `keys`
# schema (applied by the submission-service binary SUBMISSION, which needs a service-token key to start), and a work
# directory; both are removed on exit. Sets the PG* settings, DATABASE_URL (LOG_LEVEL=info), `database`, `work`, and
# `$work/signing.pem`, a new P-256 key.
bench_keys_database() {
  local pg database_env
  pg="$(dirname "${BASH_SOURCE[0]}")/postgres.sh"
  "$pg" start >/dev/null
  database_env="$("$pg" env)"
  eval "$database_env"
  export PGHOST="$POSTGRES_HOST" PGPORT="$POSTGRES_PORT" PGUSER="$POSTGRES_USER" PGPASSWORD="$POSTGRES_PASSWORD"
  database="$1_$(date +%s)"
  work="$(mktemp -d)"
  trap 'psql -q -d postgres -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" || true; rm -rf "$work"' EXIT
  psql -q -d postgres -c "CREATE DATABASE $database"
  export DATABASE_URL="postgres://$PGUSER:$PGPASSWORD@$PGHOST:$PGPORT/$database?sslmode=disable" LOG_LEVEL=info
  openssl ecparam -name prime256v1 -genkey -noout -out "$work/signing.pem" 2>/dev/null
  SERVICE_TOKEN_KEY_FILE="$work/signing.pem" "$2" --migrate-only >/dev/null
}
