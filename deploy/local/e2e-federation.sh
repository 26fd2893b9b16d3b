#!/usr/bin/env bash
# make e2e-federation (and a step of make test): two national fleets, DE and FR, federate through one efgs-gateway.
#
# Each fleet is make run's (deploy/local/run.sh with EN_FEDERATION=on): its own PostgreSQL cluster, ports, CDN tree,
# gateway, signing keys, and federation-service, whose callback comes through its gateway's mutual TLS. The gateway of
# the EFGS protocol runs behind its own nginx with mutual TLS (deploy/local/efgs.sh), on a third cluster. All of it
# lives in .data/e2e-federation, made afresh at every run:
#
#   DE: ports +300 (gateway 8743, callback 8746), PostgreSQL 54379     FR: ports +400 (8843, 8846), PostgreSQL 54389
#   efgs-gateway: front https://127.0.0.1:8791, the gateway on 8792, PostgreSQL 54399
#
# The journeys, each printed as it happens:
#   1. A person in FR who visited DE tests positive and uploads with consent; FR's upload run sends the batch; the
#      gateway calls DE back; DE downloads, checks each upload batch's signature, stores; DE's distribution publishes;
#      a DE phone that met that person finds the exposure on the right day.
#   2. The reverse: a person in DE who visited FR, found by a phone syncing FR's CDN.
#   3. Failures: a batch signed by a certificate the gateway does not know is refused and nothing is stored anywhere;
#      a used batch tag gets 409; the gateway down during an upload run fails the run (exit 1) and the next run sends
#      every key once; a callback with a certificate of another common name is refused (401) and records nothing.
#   4. No log line of either fleet or the gateway holds a batch signature, key data or certificate content.
#
# Prints one line per check and `N passed, M failed`; exits 1 when a check failed. CONFIG (debug) chooses the
# binaries; SKIP_BUILD=1 uses them as they are (make test built them).
set -uo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
lib_name=e2e-federation
export CONFIG="${CONFIG:-debug}"
bin="$root/.build/$CONFIG"
cwa="$bin/cwa"
area="$root/.data/e2e-federation"
fed="$area/federation"
run="$root/deploy/local/run.sh"
efgs="$root/deploy/local/efgs.sh"
pg="$root/deploy/local/postgres.sh"
unset EN_SERVICES EN_GATEWAY
export EN_PROMETHEUS=off
# Uploads run when the journey says so; downloads when the gateway calls back. The gateway forms batches and calls
# back every second.
export EN_FEDERATION=on EN_FEDERATION_DIR="$fed" EN_EFGS_URL=https://127.0.0.1:8791
export FEDERATION_UPLOAD_INTERVAL=1h FEDERATION_DOWNLOAD_INTERVAL=1h FEDERATION_UPLOAD_MIN_KEYS=1
export EFGS_BATCH_INTERVAL=1s EFGS_CALLBACK_INTERVAL=1s EFGS_CALLBACK_RETRY_WAIT=1s
work="$(mktemp -d)"
log="$work/steps.log"
# shellcheck source=SCRIPTDIR/checks.sh
. "$root/deploy/local/checks.sh"

# The settings of one fleet (de, fr) or the gateway (efgs), for run.sh, efgs.sh and postgres.sh.
in_de() { EN_DATA_DIR="$area/de" EN_PORT_OFFSET=300 EN_PG_PORT=54379 EN_COUNTRY=DE "$@"; }
in_fr() { EN_DATA_DIR="$area/fr" EN_PORT_OFFSET=400 EN_PG_PORT=54389 EN_COUNTRY=FR "$@"; }
in_efgs() {
  EN_DATA_DIR="$area/efgs" EN_PG_PORT=54399 EN_EFGS_PORT=8791 EN_EFGS_COUNTRIES="DE FR" \
    EN_EFGS_CALLBACK_CA="$area/national-cas.pem" "$@"
}
# sql FLEET DATABASE QUERY: one value.
sql() { "in_$1" "$pg" psql -X -q -t -A -d "$2" -c "$3" 2>/dev/null; }
# A phone command with FLEET's addresses (its gateway, CA and CDN key).
phone() { local fleet="$1"; shift; ( eval "$(cat "$area/$fleet.env")"; "$cwa" "$@" ); }
# The waiting keys of FLEET an upload run may send now: those its expiry policy lets go (a phone's key of today is
# still valid, so it waits).
uploadable() {
  sql "$1" keys "SELECT count(*) FROM federation_upload_key WHERE batch_tag IS NULL AND (
    submission_timestamp * 3600 - (rolling_start_interval_number + rolling_period)::bigint * 600 > 7200
    OR ((rolling_start_interval_number + rolling_period)::bigint * 600 + 10800) / 3600 * 3600 <= extract(epoch FROM now())::bigint)"
}
# wait_until SECONDS COMMAND…: polls COMMAND every half second.
wait_until() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.5; done
}

if [ -z "${SKIP_BUILD:-}" ]; then
  say "building ($CONFIG)"
  for product in test-result-service verification-service submission-service portal-service distribution-service \
                 federation-service efgs-gateway data-donation-service cwa; do
    swift build -c "$CONFIG" --product "$product" >"$work/build.log" 2>&1 || fail_with_log "$work/build.log" "swift build failed"
  done
fi
for product in federation-service efgs-gateway cwa submission-service; do [ -x "$bin/$product" ] || fail "$bin/$product is missing"; done

stop_everything() {
  in_fr "$run" stop >/dev/null 2>&1 || true
  in_de "$run" stop >/dev/null 2>&1 || true
  in_efgs "$efgs" stop >/dev/null 2>&1 || true
}
stop_everything
rm -rf "$area"
mkdir -p "$area"
cleanup() { stop_everything; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

started=$(date +%s)
say "starting efgs-gateway and the fleets DE and FR (data in $area)"
"$root/deploy/local/federation-pki.sh" "$fed" DE FR
"$root/deploy/local/pki.sh" "$area/de"
"$root/deploy/local/pki.sh" "$area/fr"
cat "$area/de/pki/ca.pem" "$area/fr/pki/ca.pem" >"$area/national-cas.pem"
in_efgs "$efgs" up >"$work/efgs.log" 2>&1 || fail_with_log "$work/efgs.log" "efgs-gateway did not start"
in_de "$run" up >"$work/de.log" 2>&1 || fail_with_log "$work/de.log" "the DE fleet did not start"
in_de "$run" env >"$area/de.env"
in_fr "$run" up >"$work/fr.log" 2>&1 || fail_with_log "$work/fr.log" "the FR fleet did not start"
in_fr "$run" env >"$area/fr.env"
say "ready in $(( $(date +%s) - started )) s"

cd "$work" || exit 1
meeting_day="$(date -u -d '2 days ago' +%F)"
registered() { [ "$(sql efgs efgs "SELECT string_agg(country, ',' ORDER BY country) FROM callback")" = "DE,FR" ]; }
check "both countries registered their callbacks at the gateway at start" wait_until 20 registered
check "every certificate row at the gateway carries the trust anchor's signature, which it checks on every lookup" test \
  "$(sql efgs efgs "SELECT count(*) FILTER (WHERE signature IS NOT NULL) || '/' || count(*) FROM certificate")" = 6/6
# The expiry of each certificate DE's federation-service loaded, for the alert CertificateExpiringSoon.
expiries() {
  curl -fsS "$(sed -n 's/^export EN_FEDERATION_URL=//p' "$area/de.env")/metrics" | grep -Ec \
    '^en_certificate_expiry_timestamp_seconds\{certificate="federation-(client|gateway-ca|signing|trust-anchors|callback-ca)"\} [0-9]'
}
check "DE's federation-service exports the expiry of the five certificates it loaded ($(expiries) found)" \
  test "$(expiries)" = 5

# journey COUNTRY_OF_PERSON HOST_FLEET OTHER_FLEET: a person of HOST who visited OTHER meets a phone of OTHER, tests
# positive at home and uploads; HOST's upload run sends the keys; OTHER stores them, publishes, and its phone finds the
# exposure.
journey() {
  local home="$1" abroad="$2" home_code abroad_code guid keys stored
  home_code="${home^^}" abroad_code="${abroad^^}"
  guid="fed-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  echo "  -- $home_code → $abroad_code"
  check "a person of $home_code and a phone of $abroad_code meet on $meeting_day" bash -c \
    "'$cwa' phone new --state $home-person.json && '$cwa' phone new --state $abroad-phone.json && \
     '$cwa' phone meet $home-person.json --state $abroad-phone.json --minutes 25 --attenuation 50 --at ${meeting_day}T12:00:00Z"
  expect "$home_code's lab posts the person's positive result" "HTTP 204" phone "$home" lab upload --result positive --guid "$guid"
  check "the person registers and polls a positive result" bash -c \
    "$(declare -f phone); cwa='$cwa' area='$area'; phone $home phone register --state $home-person.json --guid $guid && \
     phone $home phone poll --state $home-person.json | grep -q 'test result 2 '"
  expect "the person uploads with consent, origin $home_code, visited $abroad_code" "HTTP 200" \
    phone "$home" phone submit --state "$home-person.json" --origin "$home_code" --visited "$abroad_code"
  keys="$(uploadable "$home")"
  check "$home_code's federation mirror holds the person's $keys expired keys, waiting (today's key waits longer)" \
    test "${keys:-0}" -ge 10
  expect "$home_code's upload run sends them in one signed batch" "keys.accepted=$keys" "in_$home" "$run" federate upload
  check "the gateway holds one batch of $keys keys from $home_code" test \
    "$(sql efgs efgs "SELECT count(*) || '/' || sum(amount) FROM upload_batch WHERE country = '$home_code'")" = "1/$keys"
  stored_keys() { [ "$(sql "$abroad" keys "SELECT count(*) FROM diagnosis_key WHERE origin_country = '$home_code'")" = "$keys" ]; }
  check "the gateway calls $abroad_code back; $abroad_code downloads, verifies and stores the $keys keys" wait_until 30 stored_keys
  stored="$(sql "$abroad" keys "SELECT count(*) FROM diagnosis_key WHERE origin_country = '$home_code' AND NOT consent_to_federation AND visited_countries @> ARRAY['$abroad_code']")"
  check "they are stored without consent (never sent on) and name $abroad_code as visited ($stored)" test "$stored" = "$keys"
  # (A country is also called back for batches that hold only its own keys: it downloads none of them.)
  check "every batch announced to $abroad_code is PROCESSED" test \
    "$(sql "$abroad" keys "SELECT count(*) || '/' || count(*) FILTER (WHERE status = 'PROCESSED') FROM federation_batch_info")" \
    = "$(sql "$abroad" keys "SELECT count(*) || '/' || count(*) FROM federation_batch_info WHERE (SELECT count(*) FROM federation_batch_info) > 0")"
  check "$abroad_code's distribution publishes" \
    "in_$abroad" env SHIFTING_POLICY_THRESHOLD=1 INCLUDE_INCOMPLETE_HOURS=true "$run" distribute
  "in_$abroad" env SHIFTING_POLICY_THRESHOLD=1 INCLUDE_INCOMPLETE_HOURS=true "$run" audit >"$work/audit" 2>&1
  audited=$?
  cat "$work/audit" >>"$log"; cp "$work/audit" "$work/out"
  check "$abroad_code's audit finds every planned key, $home_code's federated ones among them, in a listed archive ($(grep -E '^audit: (DE|FR|EUR): ' "$work/audit" | sed 's/^audit: //' | paste -sd';' -))" \
    test "$audited" = 0 -a "$(grep -c '^audit: 0 missing$' "$work/audit")" = 1
  phone "$abroad" phone sync --state "$abroad-phone.json" --country "$abroad_code" >"$work/sync" 2>&1
  cat "$work/sync" >>"$log"
  cp "$work/sync" "$work/out"
  if grep -q "^EXPOSURE on $meeting_day: 25 min" "$work/sync" && [ "$(grep -c '^EXPOSURE' "$work/sync")" = 1 ]; then
    pass "$abroad_code's phone syncing $abroad_code's CDN finds the exposure: $(grep '^EXPOSURE' "$work/sync" | cut -c1-60)"
  else
    flunk "$abroad_code's phone finds exactly the exposure on $meeting_day"
  fi
}
journey fr de
journey de fr

echo "  -- failures"
# Another person of FR with keys waiting.
guid="fed-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
check "another person of FR tests positive and uploads" bash -c \
  "$(declare -f phone); cwa='$cwa' area='$area'; '$cwa' phone new --state fr-e.json && \
   phone fr lab upload --result positive --guid $guid >/dev/null && phone fr phone register --state fr-e.json --guid $guid && \
   phone fr phone poll --state fr-e.json >/dev/null && phone fr phone submit --state fr-e.json --origin FR --visited DE"
waiting="$(sql fr keys "SELECT count(*) FROM federation_upload_key WHERE batch_tag IS NULL")"
sendable="$(uploadable fr)"
efgs_keys="$(sql efgs efgs "SELECT count(*) FROM diagnosis_key")"
de_keys="$(sql de keys "SELECT count(*) FROM diagnosis_key WHERE origin_country = 'FR'")"

# FR's federation settings with a signing certificate of FR that the gateway does not know.
cp -R "$fed" "$work/rogue"
openssl ecparam -name prime256v1 -genkey -noout -out "$work/rogue/FR/signing.key" 2>/dev/null
openssl req -x509 -new -key "$work/rogue/FR/signing.key" -sha256 -days 2 -subj "/C=FR/CN=rogue-signing" \
  -out "$work/rogue/FR/signing.pem" 2>/dev/null
expect "a batch signed by an unregistered certificate is refused by the gateway (400 Invalid signature)" \
  "Invalid signature.*gateway.status=400|gateway.status=400.*Invalid signature" \
  in_fr env EN_FEDERATION_DIR="$work/rogue" "$run" federate upload
check "nothing of it is stored anywhere: the gateway's keys ($efgs_keys), DE's ($de_keys), FR's $waiting keys still waiting" test \
  "$(sql efgs efgs "SELECT count(*) FROM diagnosis_key")/$(sql de keys "SELECT count(*) FROM diagnosis_key WHERE origin_country = 'FR'")/$(sql fr keys "SELECT count(*) FROM federation_upload_key WHERE batch_tag IS NULL")" \
  = "$efgs_keys/$de_keys/$waiting"

# A used batch tag, with FR's client certificate through the front.
used_tag="$(sql efgs efgs "SELECT batch_tag FROM upload_batch WHERE country = 'FR' LIMIT 1")"
python3 - "$work/one-key.bin" <<'PY'
import os, struct, sys, time
def varint(n):
    out = b""
    while True:
        b = n & 0x7F; n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n: return out
start = int(time.time()) // 86400 * 144 - 144
key = b"\x0a\x10" + os.urandom(16) + b"\x10" + varint(start) + b"\x18" + varint(144) + b"\x20\x05" + b"\x2a\x02DE" + b"\x32\x02FR" + b"\x38\x01"
open(sys.argv[1], "wb").write(b"\x0a" + varint(len(key)) + key)
PY
expect "an upload with a used batch tag gets 409 from the gateway" "^409$" \
  curl -s -o /dev/null -w '%{http_code}\n' --cacert "$fed/ca.pem" --cert "$fed/FR/client.pem" --key "$fed/FR/client.key" \
  -H "Content-Type: application/protobuf; version=1.0" -H "batchTag: $used_tag" -H "batchSignature: AAAA" \
  --data-binary "@$work/one-key.bin" https://127.0.0.1:8791/diagnosiskeys/upload

# The gateway down during an upload run.
in_efgs "$efgs" kill
in_fr "$run" federate upload >"$work/out" 2>&1
status=$?
cat "$work/out" >>"$log"
if [ "$status" = 1 ] && [ "$(sql fr keys "SELECT count(*) FROM federation_upload_key WHERE batch_tag IS NULL")" = "$waiting" ]; then
  pass "with the gateway down the upload run fails cleanly (exit 1) and the $waiting keys keep waiting"
else
  flunk "with the gateway down the upload run fails (exit $status, expected 1) and the keys keep waiting"
fi
check "the gateway comes back" in_efgs "$efgs" start-gateway
expect "the next upload run sends the $sendable keys that may go" "keys.accepted=$sendable" in_fr "$run" federate upload
check "the gateway holds them once ($((efgs_keys + sendable)) keys)" test "$(sql efgs efgs "SELECT count(*) FROM diagnosis_key")" = "$((efgs_keys + sendable))"
de_has_all() { [ "$(sql de keys "SELECT count(*) FROM diagnosis_key WHERE origin_country = 'FR'")" = "$((de_keys + sendable))" ]; }
check "DE receives them once ($((de_keys + sendable)) keys from FR)" wait_until 30 de_has_all

# A callback with a certificate of the federation CA but another common name.
openssl ecparam -name prime256v1 -genkey -noout -out "$work/intruder.key" 2>/dev/null
openssl req -new -key "$work/intruder.key" -subj "/CN=intruder" -out "$work/intruder.csr" 2>/dev/null
openssl x509 -req -in "$work/intruder.csr" -CA "$fed/ca.pem" -CAkey "$fed/ca.key" -CAcreateserial -days 1 -sha256 \
  -out "$work/intruder.pem" 2>/dev/null
rm -f "$fed/ca.srl"
batches_before="$(sql de keys "SELECT count(*) FROM federation_batch_info")"
expect "a callback with a certificate of another common name is refused (401)" "^401$" \
  curl -s -o /dev/null -w '%{http_code}\n' --cacert "$area/de/pki/ca.pem" --cert "$work/intruder.pem" --key "$work/intruder.key" \
  "https://127.0.0.1:8746/version/v1/callback?batchTag=intruder-1&date=$(date -u +%F)"
expect "a callback without a client certificate is refused by DE's gateway (400)" "^400$" \
  curl -s -o /dev/null -w '%{http_code}\n' --cacert "$area/de/pki/ca.pem" \
  "https://127.0.0.1:8746/version/v1/callback?batchTag=intruder-2&date=$(date -u +%F)"
check "and nothing was recorded ($batches_before batches at DE)" test "$(sql de keys "SELECT count(*) FROM federation_batch_info")" = "$batches_before"

echo "  -- privacy"
# no_leak FILE: FILE names strings (one per line), and no log line of the fleets or the gateway holds any of them.
no_leak() { [ -s "$1" ] && ! cat "$area"/{de,fr,efgs}/logs/*.log 2>/dev/null | grep -qF -f "$1"; }
sql efgs efgs "SELECT substr(batch_signature, 1, 40) FROM upload_batch" >"$work/signatures"
check "no log line holds a batch signature ($(grep -c . "$work/signatures") batches)" no_leak "$work/signatures"
sql fr keys "SELECT encode(key_data, 'hex') || E'\n' || encode(key_data, 'base64') FROM diagnosis_key" >"$work/keys"
check "no log line holds key data, in hex or Base64 ($(grep -c . "$work/keys") strings of FR's keys)" no_leak "$work/keys"
for file in "$fed/DE/client.pem" "$fed/FR/signing.pem" "$fed/efgs-callback.pem"; do sed -n 3p "$file"; done >"$work/certificates"
check "no log line holds certificate content (client, signing and callback certificates)" no_leak "$work/certificates"

echo
echo "$passed passed, $failed failed ($(( $(date +%s) - started )) s)"
if [ "$failed" -gt 0 ]; then
  say "the steps' output: $area/steps.log; logs in $area/{de,fr,efgs}/logs"
  cp "$log" "$area/steps.log"
  exit 1
fi
