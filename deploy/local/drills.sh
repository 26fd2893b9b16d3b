#!/usr/bin/env bash
# make drills (and a step of make test): reliability drills against a fleet of their own, as make run starts it — its
# own PostgreSQL cluster in .data/drills on port 54409 (DRILLS_PG_PORT), every port moved by 600 (DRILLS_PORT_OFFSET),
# the gateway in front, federation-service with a local federation gateway (EN_FEDERATION=on) — so they run beside a
# development fleet and the other test fleets.
#
# The drills so far:
#   races  the single-use secrets used many times at once through the gateway (DRILLS_RACE_COUNT, 1000): one GUID
#          registered, one teleTAN registered, one registration token polled while its TAN is asked for, one TAN
#          redeemed by submissions, one self-report OTP redeemed by self-reports. Each has exactly one winner; every
#          other answer is the documented refusal, none a 5xx;
#   outage PostgreSQL's postmaster killed (SIGKILL) under a steady load of lab uploads and registrations
#          (DRILLS_OUTAGE_RATE of each per second for DRILLS_OUTAGE_SECONDS, 10 and 20) and of key submissions
#          through the gateway (DRILLS_OUTAGE_SUBMISSIONS CWA phones with a TAN, 100, and DRILLS_OUTAGE_NHS NHS
#          phones with a submission token, 40, each retrying every 503 with the same keys), started again 4 s
#          later: every acknowledged lab result and registration is stored, every other answer is a 503, every
#          acknowledged and every retried submission's keys are stored once the held ones are resolved (0 lost), and
#          each service's /health/ready goes to 503 and is 200 again within 5 s of the database's return, without a
#          restart;
#   peer   verification-service killed (SIGKILL) while TANs are submitted (DRILLS_PEER_COUNT, 150, 10 a second), and
#          test-result-service while results are polled; each started again 10 s later (run.sh restart): only
#          successes and the documented 503s; each refused submission's TAN is used again with new keys, and exactly
#          one of its two key sets ends up stored (its first, when verification-service spent the TAN before dying);
#   abuse  abuse.py against the gateway: DRILLS_ABUSE_SLOW (300) slow-header and slow-body clients held for 30 s, a
#          body one byte over every location's limit (413), DRILLS_ABUSE_FORGED (10,000) requests with forged
#          X-Forwarded-For, X-SSL-Client-Cert, X-Gateway-Secret and X-Request-ID on the app, lab and portal ports;
#          meanwhile a phone's journey takes at most 2 s a step, and the services log only the gateway's request ids;
#   fuzz   every OpenAPI document fuzzed by Schemathesis (deploy/local/fuzz.sh, DRILLS_EXAMPLES, 300, examples per
#          operation, and FUZZ_PLAIN_EXAMPLES, 300, for health, metrics and the documents) on each service's own
#          listeners, and the protobuf endpoints by deploy/local/protofuzz.py
#          (DRILLS_PROTOFUZZ_COUNT, 1000, mutated bodies): no 5xx, every status, content type and body as documented;
#   at rest  afterwards no table of any database and no log line holds the drills' GUIDs, teleTAN, registration
#          tokens, TANs, OTP, or the forged addresses and request ids in clear;
#   distribution  distribution-service killed (SIGKILL) at DRILLS_DISTRIBUTION_KILLS (10) random moments of runs over
#          DRILLS_DISTRIBUTION_KEYS (200,000) keys, to a directory and to an S3 bucket on moto
#          (distribution-drill.py): after every kill the published tree is consistent (indexes name only objects that
#          exist, archives verify with the public key, nothing temporary is served); the next run completes, and its
#          tree is the uninterrupted run's.
#
# Prints one line per check and `N passed, M failed`; exits 1 when a check failed. The fleet is stopped at the end
# (also on Ctrl-C); its logs stay in .data/drills/logs until the next run. CONFIG (debug) chooses the binaries.
set -uo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
export EN_DATA_DIR="$root/.data/drills" EN_PG_PORT="${DRILLS_PG_PORT:-54409}" EN_PORT_OFFSET="${DRILLS_PORT_OFFSET:-600}"
export CONFIG="${CONFIG:-debug}"
unset EN_SERVICES EN_GATEWAY EN_EFGS_URL   # the whole fleet, with the gateway
export EN_FEDERATION=on   # and federation-service with a local federation gateway, so its callback is fuzzed too
export EN_PROMETHEUS=off   # nothing watches the drills but the drills
race_count="${DRILLS_RACE_COUNT:-1000}"
outage_seconds="${DRILLS_OUTAGE_SECONDS:-20}" outage_rate="${DRILLS_OUTAGE_RATE:-10}"
outage_submissions="${DRILLS_OUTAGE_SUBMISSIONS:-100}" outage_nhs="${DRILLS_OUTAGE_NHS:-40}"
# Held submissions are resolved every 5 s here (1 min by default), and an unspent TAN's attempt is released after 40 s
# (10 min), so the drills need not wait long for them.
export SUBMISSION_RECOVERY_INTERVAL="${DRILLS_RECOVERY_INTERVAL:-5s}"
export SUBMISSION_RELEASE_AFTER="${DRILLS_RELEASE_AFTER:-40s}"
peer_count="${DRILLS_PEER_COUNT:-150}"
abuse_slow="${DRILLS_ABUSE_SLOW:-300}" abuse_forged="${DRILLS_ABUSE_FORGED:-10000}"
run="$root/deploy/local/run.sh"
pg="$root/deploy/local/postgres.sh"
cwa="$root/.build/$CONFIG/cwa"
work="$(mktemp -d)"
log="$work/steps.log"
# shellcheck source=SCRIPTDIR/checks.sh
. "$root/deploy/local/checks.sh"
lib_name=drills

[ -x "$cwa" ] || fail "$cwa is missing (make drills builds it)"
if ! [[ ${DRILLS_DISTRIBUTION_KEYS:-200000} =~ ^[0-9]+$ ]] || ! [[ ${DRILLS_DISTRIBUTION_KILLS:-10} =~ ^[0-9]+$ ]]; then
  fail "DRILLS_DISTRIBUTION_KEYS and DRILLS_DISTRIBUTION_KILLS must be whole numbers"
fi
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

# drills_python: a Python with cryptography and moto (the distribution drill's S3 server): the system's when it has
# them, else a venv under the data folder, made once.
drills_python() {
  if python3 -c 'import cryptography, moto.server' 2>/dev/null; then command -v python3; return; fi
  local venv="$root/.data/drills-venv"
  if ! "$venv/bin/python" -c 'import cryptography, moto.server' 2>/dev/null; then
    python3 -c 'import venv, ensurepip' 2>/dev/null || install_packages python3-venv
    rm -rf "$venv"
    if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q 'moto[server]==5.*' 'cryptography>=42'; } >&2; then
      fail "could not install moto and cryptography into $venv"
    fi
  fi
  printf '%s\n' "$venv/bin/python"
}
# drill_line FILE KIND: the answers of a drill's line `KIND: 204×188 503×12, slowest …`, without its name.
drill_line() { sed -n "s/^$2: //p" "$1"; }
# only_statuses FILE KIND ALLOWED: every answer of the kind's line is an allowed status (an extended regex).
only_statuses() {
  local line
  line="$(drill_line "$1" "$2" | sed 's/,.*//')"
  [ -n "$line" ] || return 1
  # shellcheck disable=SC2086 # one status×count per word
  ! printf '%s\n' $line | grep -vqE "^($3)×"
}
# some_of FILE KIND ALLOWED STATUS: only allowed answers, and at least one of STATUS among them.
some_of() { only_statuses "$1" "$2" "$3" && drill_line "$1" "$2" | sed 's/,.*//' | tr ' ' '\n' | grep -qE "^$4×[1-9]"; }

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
  check "races: $race_count $race: ${line#* "$race": }" grep -q "^ok   $race_count $race:" "$work/races"
done

# ---- PostgreSQL killed under load ----
# Lab uploads, registrations and key submissions at a steady rate; 5 s in, the postmaster gets SIGKILL and comes back
# 4 s later. Every acknowledged write must be in its table; every other answer a 503 (no 500, no request without an
# answer); every submission retried until its answer is final, and then every acknowledged or retried one's keys stored;
# each service's /health/ready must go to 503 and be 200 again within 5 s of the database's return, without a restart.
"$cwa" drill outage --seconds "$outage_seconds" --rate "$outage_rate" --acked-file "$work/acked" \
  --submissions "$outage_submissions" --nhs-submissions "$outage_nhs" --started-file "$work/outage-started" \
  --submitted-file "$work/submitted" >"$work/outage" 2>&1 &
load_pid=$!
for _ in $(seq 1 1200); do
  if [ -f "$work/outage-started" ] || ! kill -0 "$load_pid" 2>/dev/null; then break; fi
  sleep 0.1
done
: >"$work/ready"
watch_ready() {
  while [ ! -f "$work/outage-over" ]; do
    printf '%s %s %s\n' "$(date +%s.%N)" "$1" "$(curl -s -m 3 -o /dev/null -w '%{http_code}' "$2/health/ready")" >>"$work/ready"
    sleep 0.2
  done
}
watchers=()
for pair in "test-result $EN_TEST_RESULT_URL" "verification $EN_VERIFICATION_URL" "submission $EN_SUBMISSION_URL" \
  "portal $EN_PORTAL_URL" "data-donation $EN_DATA_DONATION_URL"; do
  read -r name url <<<"$pair"
  watch_ready "$name" "$url" &
  watchers+=($!)
done
sleep 5
killed=$(date +%s.%N)
kill -9 "$(head -n 1 "$EN_DATA_DIR/postgres/postmaster.pid")" 2>>"$log"
sleep 4
for _ in 1 2 3 4 5; do "$pg" start >>"$log" 2>&1 && break; sleep 1; done   # its children may still be leaving
back=$(date +%s.%N)
wait "$load_pid"
sleep 6
touch "$work/outage-over"
wait "${watchers[@]}" 2>/dev/null
cat "$work/outage" >>"$log"
outage_line() { drill_line "$work/outage" "$1"; }
check "outage: lab uploads answered 204 or 503 only ($(outage_line results))" only_statuses "$work/outage" results '204|503'
check "outage: registrations answered 201 or 503 only ($(outage_line registrations))" \
  only_statuses "$work/outage" registrations '201|503'
acked_results="$(grep -c '^result ' "$work/acked")"
ids="$(sed -n "s/^result \(.*\)$/'\1'/p" "$work/acked" | paste -sd,)"
stored="$("$pg" psql -X -q -t -A -d testresult -c "SELECT count(*) FROM test_result WHERE result_id IN (${ids:-''})" 2>>"$log")"
check "outage: every acknowledged lab result is stored ($stored of $acked_results)" test "$stored" = "$acked_results" -a "$acked_results" -gt 0
acked_registrations="$(grep -c '^registration ' "$work/acked")"
hashes="$(sed -n "s/^registration \(.*\)$/'\1'/p" "$work/acked" | paste -sd,)"
sessions="$("$pg" psql -X -q -t -A -d verification -c "SELECT count(*) FROM app_session WHERE hashed_guid IN (${hashes:-''})" 2>>"$log")"
check "outage: every acknowledged registration is stored ($sessions of $acked_registrations)" \
  test "$sessions" = "$acked_registrations" -a "$acked_registrations" -gt 0
check "outage: CWA submissions answered 200 or 503 at first, 200 or (after a 503) 403 at last ($(outage_line submissions))" \
  python3 -c "import sys; rows = [l.split() for l in open(sys.argv[1]) if l.startswith('cwa ')]; sys.exit(0 if rows and all(r[1] == '200' or (r[1] == '403' and r[2] == 'retried') for r in rows) else 1)" "$work/submitted"
check "outage: NHS submissions answered 200 at last ($(outage_line nhs-submissions))" \
  python3 -c "import sys; rows = [l.split() for l in open(sys.argv[1]) if l.startswith('nhs ')]; sys.exit(0 if rows and all(r[1] == '200' for r in rows) else 1)" "$work/submitted"
# held_drained: no submission is held any more (the recovery resolves them every SUBMISSION_RECOVERY_INTERVAL once they
# are older than SUBMISSION_RECOVERY_AFTER, 30 s); at most 120 s.
held_drained() {
  local held
  for _ in $(seq 1 120); do
    held="$("$pg" psql -X -q -t -A -d keys -c "SELECT count(*) FROM pending_submission" 2>>"$log")"
    [ "$held" = 0 ] && return 0
    sleep 1
  done
  return 1
}
check "outage: every held submission is resolved within 120 s" held_drained
"$pg" psql -X -q -t -A -d keys -c "SELECT encode(key_data, 'hex') FROM diagnosis_key" >"$work/stored-keys" 2>>"$log"
python3 - "$work/submitted" "$work/stored-keys" >"$work/submission-count" 2>&1 <<'PY'
import sys
stored = set(line.strip() for line in open(sys.argv[2]))
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
counted = [r for r in rows if r[1] == "200" or r[2] == "retried"]
lost = [r for r in counted if not set(r[3].split(",")) <= stored]
acked = sum(1 for r in rows if r[1] == "200")
retried = sum(1 for r in rows if r[2] == "retried")
print(f"{len(counted)} of {len(rows)} submissions acknowledged or retried ({acked} acknowledged, {retried} retried), {len(lost)} lost")
PY
cat "$work/submission-count" >>"$log"
check "outage: every acknowledged or retried submission's keys are stored ($(cat "$work/submission-count"))" \
  grep -q ', 0 lost$' "$work/submission-count"
python3 - "$killed" "$back" "$work/ready" >"$work/recovery" 2>&1 <<'PY'
import sys
killed, back = float(sys.argv[1]), float(sys.argv[2])
rows = [line.split() for line in open(sys.argv[3]) if len(line.split()) == 3]
for name in dict.fromkeys(n for _, n, _ in rows):
    seen = [(float(t), c) for t, n, c in rows if n == name]
    down = next((t - killed for t, c in seen if killed < t < back and c == "503"), None)
    up = next((t - back for t, c in seen if t > back and c == "200"), None)
    print(name, "-" if down is None else f"{down:.1f}", "-" if up is None else f"{up:.1f}")
PY
cat "$work/recovery" >>"$log"
while read -r name down up; do
  check "outage: $name's /health/ready went to 503 (${down} s after the kill) and was 200 ${up} s after the database returned" \
    python3 -c "import sys; d, u = sys.argv[1:]; sys.exit(0 if d != '-' and u != '-' and float(u) <= 5 else 1)" "$down" "$up"
done <"$work/recovery"

# ---- a peer killed ----
# peer_outage KIND PEER: cwa drill peer-outage's load; 2 s after it begins the peer gets SIGKILL, 10 s later it is
# started again (run.sh restart) and the load's second round runs (a TAN whose submission got a 503 is used again).
# Ten seconds: the callers ride out a shorter outage (three connection attempts of 2 s each, then 503).
peer_outage() {
  local kind="$1" peer="$2" started="$work/$1-started" resume="$work/$1-resume" pid
  shift 2
  "$cwa" drill peer-outage --kind "$kind" --started-file "$started" --resume-file "$resume" \
    --secrets-file "$work/secrets-$kind" "$@" >"$work/peer-$kind" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    if [ -f "$started" ] || ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  sleep 2
  kill -9 "$(cat "$EN_DATA_DIR/run/$peer.pid")" 2>>"$log"
  sleep 10
  local restarted=$SECONDS
  "$run" restart "$peer" >"$work/restart-$peer" 2>&1; echo "rc=$?" >>"$work/restart-$peer"
  echo "ready after $(( SECONDS - restarted )) s" >>"$work/restart-$peer"
  touch "$resume"
  wait "$pid"
  cat "$work/peer-$kind" "$work/restart-$peer" >>"$log"
}
peer_outage submissions verification --count "$peer_count" --rate 10 --refused-file "$work/refused"
peer="$work/peer-submissions"
check "peer killed: verification-service started again ($(grep '^ready' "$work/restart-verification"))" \
  grep -q '^rc=0' "$work/restart-verification"
check "peer killed: submissions answered 200 or 503 only, some 503 ($(drill_line "$peer" submissions))" \
  some_of "$peer" submissions '200|503' 503
# 200: the TAN was intact; 403: verification-service used it and died before answering, and the first keys are held
# (Services/Submission/README.md, "Order of work").
check "peer killed: the TANs of those submissions used again afterwards: 200, or 403 if verification used one up before dying ($(drill_line "$peer" after))" \
  some_of "$peer" after '200|403' 200
check "peer killed: every held submission is resolved within 120 s" held_drained
"$pg" psql -X -q -t -A -d keys -c "SELECT encode(key_data, 'hex') FROM diagnosis_key" >"$work/stored-keys" 2>>"$log"
python3 - "$work/refused" "$work/stored-keys" >"$work/refused-count" 2>&1 <<'PY'
import sys
stored = set(line.strip() for line in open(sys.argv[2]))
rounds = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 3:
        rounds.setdefault(parts[0], {})[parts[1]] = set(parts[2].split(","))
outcomes = {"first": 0, "second": 0, "none": 0, "both": 0}
for sets in rounds.values():
    first, second = sets.get("first", set()) <= stored, sets.get("second", set()) <= stored
    outcomes["both" if first and second else "first" if first else "second" if second else "none"] += 1
print(f"{len(rounds)} refused TANs: first keys stored {outcomes['first']}, second {outcomes['second']}, none {outcomes['none']}, both {outcomes['both']}")
PY
cat "$work/refused-count" >>"$log"
check "peer killed: of each refused submission's TAN exactly one key set is stored ($(cat "$work/refused-count"))" \
  grep -qE '^[1-9][0-9]* refused TANs: .* none 0, both 0$' "$work/refused-count"
# Every poll 200, or 503 with `Retry-After: 30` (some), as Services/Verification/README.md documents.
polls_answered() { some_of "$1" polls '200|503' 503 && grep -q 'Retry-After 30: 0$' "$1"; }
peer_outage polls test-result --count 20 --rate 20 --seconds 15
peer="$work/peer-polls"
check "peer killed: test-result-service started again ($(grep '^ready' "$work/restart-test-result"))" \
  grep -q '^rc=0' "$work/restart-test-result"
check "peer killed: result polls answered 200 or 503 (Retry-After: 30) only, some 503 ($(drill_line "$peer" polls))" \
  polls_answered "$peer"
check "peer killed: every token polled again afterwards gets its result ($(drill_line "$peer" after))" \
  only_statuses "$peer" after 200

# ---- the gateway under abuse ----
# abuse.py holds slow clients open on the app port, sends a body one byte over every route's limit and forged
# X-Forwarded-For, X-SSL-Client-Cert, X-Gateway-Secret (the real one) and X-Request-ID headers to every port, while a
# phone's journey runs step by step, each timed.
abuse="$work/abuse"
mkdir -p "$abuse"
python3 "$root/deploy/local/abuse.py" --conf "$EN_DATA_DIR/gateway/gateway.conf" --ca "$EN_DATA_DIR/pki/ca.pem" \
  --lab-cert "$EN_DATA_DIR/pki/lab-1.pem" --lab-key "$EN_DATA_DIR/pki/lab-1.key" \
  --secret-file "$EN_DATA_DIR/secrets/gateway" --out "$abuse" --slow "$abuse_slow" --forged "$abuse_forged" \
  --hold 30 >"$work/abuse.log" 2>&1 &
abuse_pid=$!
for _ in $(seq 1 300); do
  if [ -f "$abuse/started" ] || ! kill -0 "$abuse_pid" 2>/dev/null; then break; fi
  sleep 0.1
done
# timed STEP COMMAND…: runs the step; prints `ok|FAIL <seconds> <step>`.
timed() {
  local name="$1" t0=$EPOCHREALTIME status=ok
  shift
  "$@" >>"$log" 2>&1 || status=FAIL
  printf '%s %s %s\n' "$status" "$(awk -v from="$t0" -v to="$EPOCHREALTIME" 'BEGIN { printf "%.2f", to - from }')" "$name"
}
journey_guid="abuse-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$journey_guid" >"$work/secrets-journey"
"$cwa" phone new --state "$work/abuse-phone.json" >>"$log" 2>&1
{
  timed "a lab posts the result" "$cwa" lab upload --result positive --guid "$journey_guid"
  timed "the phone registers" "$cwa" phone register --state "$work/abuse-phone.json" --guid "$journey_guid"
  timed "the phone polls its result" "$cwa" phone poll --state "$work/abuse-phone.json"
  timed "the phone gets a TAN and submits" "$cwa" phone submit --state "$work/abuse-phone.json"
  timed "the phone downloads the CDN index" curl -sf --cacert "$EN_DATA_DIR/pki/ca.pem" -o /dev/null \
    "$CWA_APP_URL/version/v1/diagnosis-keys/country"
} >"$work/journey"
[ -f "$abuse/started" ] || echo "FAIL 0 the abuse had not begun" >>"$work/journey"
wait "$abuse_pid"
cat "$work/abuse.log" "$abuse/report" "$work/journey" >>"$log" 2>/dev/null
report_line() { sed -n "s/^$1: //p" "$abuse/report"; }
while read -r status seconds step; do
  check "abuse: meanwhile $step in ${seconds} s (at most 2 s)" \
    python3 -c 'import sys; sys.exit(0 if sys.argv[1] == "ok" and float(sys.argv[2]) <= 2 else 1)' "$status" "$seconds"
done <"$work/journey"
while read -r kind; do
  check "abuse: $kind: $(report_line "$kind")" grep -q "^$kind: .*, unexpected: 0$" "$abuse/report"
done < <(sed -n 's/^\(forged [^:]*\): .*, unexpected: [0-9]*$/\1/p' "$abuse/report")
check "abuse: forged requests in all: $(report_line 'forged total')" grep -q '^forged total: [1-9]' "$abuse/report"
check "abuse: a body one byte over each route's limit gets 413 ($(report_line oversize))" \
  grep -q '^oversize: 413×[0-9]*, routes: [1-9][0-9]*, not 413: 0$' "$abuse/report"
check "abuse: slow headers: $(report_line 'slow header') (client_header_timeout 15 s)" \
  grep -q "^slow header: \([0-9]*\) opened, \1 closed by the gateway" "$abuse/report"
check "abuse: slow bodies: $(report_line 'slow body'); the journey above ran beside them" \
  grep -q "^slow body: [1-9][0-9]* opened, .* 0 refused$" "$abuse/report"
# Every request a service logged on its public listeners carries an id the gateway made (its access log's last field);
# no forged X-Request-ID reached one.
python3 - "$EN_DATA_DIR/logs" >"$work/ids" 2>&1 <<'PY'
import glob, os, re, sys
logs = sys.argv[1]
made = {line.split()[-1] for line in open(os.path.join(logs, "gateway-access.log")) if line.strip()}
seen = foreign = 0
for path in glob.glob(os.path.join(logs, "*.log")):
    if os.path.basename(path).startswith("gateway"):
        continue
    for line in open(path, errors="replace"):
        if not line.rstrip().endswith("[ENServiceKit] Request") or "http.route=/health" in line:
            continue
        listener = re.search(r"\blistener=(\w+)", line)
        request_id = re.search(r"\brequest\.id=(\S+)", line)
        if listener and request_id and listener.group(1) in ("app", "lab"):
            seen += 1
            if request_id.group(1) not in made:
                foreign += 1
                print("not the gateway's:", os.path.basename(path), request_id.group(1)[:12])
print(f"{seen} requests logged, {foreign} with an id the gateway did not make")
sys.exit(0 if seen > 0 and foreign == 0 else 1)
PY
check "abuse: the services logged only the gateway's request ids ($(tail -n 1 "$work/ids"))" \
  grep -q ' 0 with an id the gateway did not make$' "$work/ids"
cp "$abuse/forged-ids" "$work/secrets-forged-ids" 2>/dev/null
cp "$abuse/forged-addresses" "$work/secrets-forged-addresses" 2>/dev/null

# ---- every API fuzzed ----
# fuzz.sh: Schemathesis over every OpenAPI document of the fleet, on each service's own listener (DRILLS_EXAMPLES per
# operation); protofuzz.py: DRILLS_PROTOFUZZ_COUNT (1000) mutated protobuf bodies at the submission and data-donation
# endpoints. No 5xx, every answer documented; one line per document.
fuzz_started=$(date +%s)
FUZZ_OUT="$work/fuzz" "$root/deploy/local/fuzz.sh" >"$work/fuzz.out" 2>&1
fuzz_status=$?
cat "$work/fuzz.out" >>"$log"
say "fuzzing: $(( $(date +%s) - fuzz_started )) s ($(sed -n 's/^fuzz.sh: \([0-9]* documents.*\); reports.*/\1/p' "$work/fuzz.out"))"
# A document whose service is not running is named, not counted.
while IFS= read -r line; do
  if [ "${line%% *}" = skip ]; then say "fuzzing: ${line#* }"; else check "fuzzing: ${line#* }" test "${line%% *}" = ok; fi
done < <(grep -E '^(ok|FAIL|skip) ' "$work/fuzz.out" | sed 's/  */ /')
check "fuzzing: every document's run finished (fuzz.sh exited $fuzz_status)" test "$fuzz_status" = 0
protofuzz_started=$(date +%s)
# In fuzz.sh's venv, which holds the protobuf runtime; protoc compiles protos/ for it.
need_commands protoc:protobuf-compiler
"${FUZZ_VENV:-$root/.data/fuzz-venv}/bin/python" "$root/deploy/local/protofuzz.py" \
  --count "${DRILLS_PROTOFUZZ_COUNT:-1000}" --out "$work/protofuzz" >"$work/protofuzz.out" 2>&1
protofuzz_status=$?
cat "$work/protofuzz.out" >>"$log"
say "protobuf fuzzing: $(( $(date +%s) - protofuzz_started )) s"
check "fuzzing: $(grep -E '^protofuzz: [0-9]+ requests' "$work/protofuzz.out" | sed 's/^protofuzz: //')" \
  test "$protofuzz_status" = 0

# ---- secrets at rest: no dump and no log line holds the drills' secrets ----
"$run" stop >/dev/null 2>&1   # flushes every log and makes the databases quiet
"$pg" start >/dev/null 2>&1
logs=("$EN_DATA_DIR"/logs/*.log "$EN_DATA_DIR"/postgres.log)
dump_local keys verification testresult portal datadonation >"$work/dump" 2>>"$log"
check "the database dump of the drills is not empty ($(wc -l <"$work/dump") lines)" test "$(wc -l <"$work/dump")" -gt 50
secrets="$(printf '%s\n%s\n' "$guid" "$teletan"; cat "$work"/secrets* 2>/dev/null)"
check "no table and no log line holds the drills' GUIDs, teleTAN, registration tokens, TANs, OTP, forged addresses or request ids ($(printf '%s\n' "$secrets" | grep -c .) values)" \
  absent "$secrets" "${logs[@]}" "$work/dump"

# ---- distribution killed mid-run ----
# distribution-drill.py: DRILLS_DISTRIBUTION_KEYS (200,000) keys over the last 10 days in a database of their own;
# runs to a directory and to an S3 bucket (moto) killed at DRILLS_DISTRIBUTION_KILLS (10) random moments each. After
# every kill the tree is consistent as a phone sees it; the next run completes with the uninterrupted run's tree.
distribution_keys="${DRILLS_DISTRIBUTION_KEYS:-200000}" distribution_kills="${DRILLS_DISTRIBUTION_KILLS:-10}"
distribution="$root/.build/$CONFIG/distribution-service" submission="$root/.build/$CONFIG/submission-service"
distribution_python="$(drills_python)"
eval "$("$pg" env)"
export PGHOST="$POSTGRES_HOST" PGPORT="$POSTGRES_PORT" PGUSER="$POSTGRES_USER" PGPASSWORD="$POSTGRES_PASSWORD"
distribution_url="postgres://$PGUSER:$PGPASSWORD@$PGHOST:$PGPORT/drill_distribution?sslmode=disable"
{
  psql -q -d postgres -c "DROP DATABASE IF EXISTS drill_distribution WITH (FORCE)" -c "CREATE DATABASE drill_distribution"
  openssl ecparam -name prime256v1 -genkey -noout -out "$work/distribution-signing.pem"
  # submission-service applies the keys schema (it needs a service-token key to start at all).
  DATABASE_URL="$distribution_url" SERVICE_TOKEN_KEY_FILE="$work/distribution-signing.pem" "$submission" --migrate-only
  insert_synthetic_keys drill_distribution "$distribution_keys"
} >>"$log" 2>&1
distribution_started=$(date +%s)
mkdir -p "$work/distribution"
"$distribution_python" "$root/deploy/local/distribution-drill.py" --service "$distribution" \
  --database-url "$distribution_url" --signing-key "$work/distribution-signing.pem" --work "$work/distribution" \
  --kills "$distribution_kills" >"$work/distribution.out" 2>&1
cat "$work/distribution.out" >>"$log"
say "distribution killed: $(( $(date +%s) - distribution_started )) s for $distribution_kills kills per store over $distribution_keys keys"
check "distribution killed: $(grep '^uninterrupted run:' "$work/distribution.out")" \
  grep -q '^uninterrupted run: ' "$work/distribution.out"
# store_held STORE: the store has its report line and no failure.
store_held() { grep -q "^$1: " "$work/distribution.out" && ! grep -F "FAIL $1: " "$work/distribution.out"; }
for store in "directory" "S3 (moto)"; do
  line="$(grep -F "$store: " "$work/distribution.out" | grep -v '^FAIL' | head -n 1)"
  check "distribution killed: ${line:-$store: no report}" store_held "$store"
done
psql -q -d postgres -c "DROP DATABASE IF EXISTS drill_distribution WITH (FORCE)" >>"$log" 2>&1

"$pg" stop >/dev/null 2>&1

say "$passed passed, $failed failed ($(( $(date +%s) - started )) s; logs in $EN_DATA_DIR/logs)"
[ "$failed" -eq 0 ]
