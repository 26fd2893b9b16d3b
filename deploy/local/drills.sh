#!/usr/bin/env bash
# make drills (and a step of make test): reliability drills against a fleet of their own, as make run starts it — its
# own PostgreSQL cluster in .data/drills on port 54409 (DRILLS_PG_PORT), every port moved by 600 (DRILLS_PORT_OFFSET),
# the gateway in front — so they run beside a development fleet and the other test fleets.
#
# The drills so far:
#   races  the single-use secrets used many times at once through the gateway (DRILLS_RACE_COUNT, 1000): one GUID
#          registered, one teleTAN registered, one registration token polled while its TAN is asked for, one TAN
#          redeemed by submissions, one self-report OTP redeemed by self-reports. Each has exactly one winner; every
#          other answer is the documented refusal, none a 5xx;
#   at rest  afterwards no table of any database and no log line holds the drills' GUID, teleTAN, registration
#          token, TAN or OTP in clear.
#
# Prints one line per check and `N passed, M failed`; exits 1 when a check failed. The fleet is stopped at the end
# (also on Ctrl-C); its logs stay in .data/drills/logs until the next run. CONFIG (debug) chooses the binaries.
set -uo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
export EN_DATA_DIR="$root/.data/drills" EN_PG_PORT="${DRILLS_PG_PORT:-54409}" EN_PORT_OFFSET="${DRILLS_PORT_OFFSET:-600}"
export CONFIG="${CONFIG:-debug}"
unset EN_SERVICES EN_GATEWAY   # the whole fleet, with the gateway
race_count="${DRILLS_RACE_COUNT:-1000}"
run="$root/deploy/local/run.sh"
pg="$root/deploy/local/postgres.sh"
cwa="$root/.build/$CONFIG/cwa"
work="$(mktemp -d)"
log="$work/steps.log"
# shellcheck source=SCRIPTDIR/checks.sh
. "$root/deploy/local/checks.sh"
lib_name=drills

[ -x "$cwa" ] || fail "$cwa is missing (make drills builds it)"
if ! [[ $race_count =~ ^[0-9]+$ ]] || [ "$race_count" -lt 2 ] || [ "$race_count" -gt 10000 ]; then
  fail "DRILLS_RACE_COUNT must be 2…10000"
fi

"$run" stop >/dev/null 2>&1 || true
rm -rf "$EN_DATA_DIR"
mkdir -p "$EN_DATA_DIR"
cleanup() {
  "$run" stop >/dev/null 2>&1 || true
  "$pg" stop >/dev/null 2>&1 || true   # the drills' own cluster, also when the dump below started it again
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

started=$(date +%s)
say "starting the fleet (data in $EN_DATA_DIR, ports +$EN_PORT_OFFSET)"
fleet_up "$run" "$work/up.log"
say "fleet ready in $(( $(date +%s) - started )) s"
cd "$work" || exit 1

# ---- races on single-use secrets ----
guid="drill-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
check "a lab posts the drill GUID's positive result (204)" "$cwa" lab upload --result positive --guid "$guid"
"$cwa" officer teletan --type TEST >"$work/teletan" 2>>"$log"; teletan="$(head -n 1 "$work/teletan")"
check "an officer issues the drill's teleTAN" test "${#teletan}" = 10
race_started=$(date +%s)
"$cwa" drill races --count "$race_count" --guid "$guid" --teletan "${teletan:-none}" --secrets-file "$work/secrets" \
  >"$work/races" 2>&1
cat "$work/races" >>"$log"
say "races: $(( $(date +%s) - race_started )) s for 5 races of $race_count requests (and $race_count polls)"
for race in "registrations of one GUID" "registrations of one teleTAN" "result polls during the TAN's issue" \
  "TAN requests for one registration token" "submissions with one TAN" "self-reports with one OTP"; do
  line="$(grep -F "$race_count $race:" "$work/races")"
  cp "$work/races" "$work/out"
  check "races: $race_count $race: ${line#* "$race": }" grep -q "^ok   $race_count $race:" "$work/races"
done

# ---- secrets at rest: no dump and no log line holds the drills' secrets ----
"$run" stop >/dev/null 2>&1   # flushes every log and makes the databases quiet
"$pg" start >/dev/null 2>&1
logs=("$EN_DATA_DIR"/logs/*.log "$EN_DATA_DIR"/postgres.log)
: >"$work/dump"
for database in keys verification testresult portal datadonation; do
  PGPASSWORD="$(cat "$EN_DATA_DIR/secrets/postgres")" "${EN_PG_BIN:-/usr/lib/postgresql/15/bin}/pg_dump" -h 127.0.0.1 \
    -p "$EN_PG_PORT" -U postgres --data-only "$database" >>"$work/dump" 2>>"$log"
done
check "the database dump of the drills is not empty ($(wc -l <"$work/dump") lines)" test "$(wc -l <"$work/dump")" -gt 50
secrets="$(printf '%s\n%s\n' "$guid" "$teletan"; cat "$work/secrets" 2>/dev/null)"
check "no table and no log line holds the drills' GUID, teleTAN, registration token, TAN or OTP ($(printf '%s\n' "$secrets" | grep -c .) secrets)" \
  absent "$secrets" "${logs[@]}" "$work/dump"

"$pg" stop >/dev/null 2>&1

say "$passed passed, $failed failed ($(( $(date +%s) - started )) s; logs in $EN_DATA_DIR/logs)"
[ "$failed" -eq 0 ]
