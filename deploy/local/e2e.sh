#!/usr/bin/env bash
# make e2e (and the last step of make test): boots a second fleet as make run does — its own PostgreSQL cluster in
# .data/e2e on port 54339, every port moved by 100 (gateway 8543/8544/8545) so it runs beside a development fleet —
# then walks one journey only through the gateway, with the cwa client connecting from 127.0.0.7:
#
#   phones A and B meet; a lab posts A's positive result; A registers, polls, gets a TAN and submits keys and
#   encrypted check-ins; a distribution run publishes; B syncs, every signature verifies, and B finds exactly the
#   exposure with A on the right day; the TAN cannot be used again; a teleTAN from the portal lets phone C submit;
#   a dummy submission is accepted and stores nothing; a lab without a client certificate (or with one that is not
#   allowlisted) is refused; the NHS test path (loopback fleet only: compose does not enable it): phone N orders a
#   test, a lab reports it by CTA token with an API key, N polls and submits with its submission token (every answer's
#   signature checked), phone M finds the exposure to N; a token-API result reaches phone T by CTA exchange; internal
#   routes, health and metrics are not routed; the internal ports refuse calls
#   without a valid service token or off the caller's allowlist; a client over its own rate budget
#   (from 127.0.0.8) gets 429 while another client (127.0.0.9) still gets through, on the portal, on registrations
#   and (NHS) on circuit-breaker approvals, so one client's flood does not make the spike rule hold the next phone's;
#   afterwards no log line and no table of any database holds any of the clients' addresses, a TAN or an NHS token.
#
# Prints one line per check and `N passed, M failed`; exits 1 when a check failed. The fleet is stopped at the end;
# its logs stay in .data/e2e/logs until the next run. CONFIG (debug) chooses the binaries.
#
# E2E_FLEET=containers (make e2e-containers): the same journey against the containerised fleet, deploy/compose.yaml
# run by podman (deploy/local/containers.sh; the images of make images). The clients connect from the host's
# addresses on the gateway's network; the database is read in its container; logs are the containers' logs (kept in
# .data/containers/en-e2e/logs). Some checks look at what only one kind of fleet has: on loopback two (the metrics and
# internal ports, asked from the host); in containers four (published ports, the metrics port and the networks, asked
# from inside the containers, and what the images promise: non-root user, read-only root filesystem, HEALTHCHECK,
# libraries). The rendered gateway configuration is read from its file on loopback and from the gateway container.
set -uo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
fleet="${E2E_FLEET:-local}"
if [ "$fleet" = containers ]; then
  # shellcheck source=SCRIPTDIR/podman.sh
  . "$root/deploy/local/podman.sh"
  export EN_DATA_DIR="$root/.data/containers/en-e2e" EN_COMPOSE_PROJECT=en-e2e
  run="$root/deploy/local/containers.sh"
else
  export EN_DATA_DIR="$root/.data/e2e" EN_PG_PORT="${E2E_PG_PORT:-54339}" EN_PORT_OFFSET="${E2E_PORT_OFFSET:-100}"
  run="$root/deploy/local/run.sh"
fi
export CONFIG="${CONFIG:-debug}"
in_containers() { [ "$fleet" = containers ]; }
unset EN_SERVICES EN_GATEWAY   # the whole fleet, with the gateway
export EN_PROMETHEUS=on EN_PROMETHEUS_INTERVAL=2s   # the loopback fleet's Prometheus, scraping often enough to check
# The gateway's portal limits as compose and Kubernetes set them, and a registration budget per client small enough to
# exceed in a dozen requests; the app's per-client and global budgets stay make run's (deploy/README.md, "The gateway").
export GATEWAY_PORTAL_RATE=20r/s GATEWAY_PORTAL_BURST=40 GATEWAY_PORTAL_CLIENT_RATE=2r/s GATEWAY_PORTAL_CLIENT_BURST=20
export GATEWAY_REGISTRATION_RATE=2r/m GATEWAY_REGISTRATION_BURST=5
# The circuit breakers' spike rule holds the 4th request of an hour (a fresh fleet has no history: the median is 0),
# and one client's approval requests count for at most 2 a minute (1 and a burst of 1), so it cannot reach that alone.
export NHS_CB_SPIKE_MINIMUM=3 GATEWAY_CIRCUIT_BREAKER_RATE=1r/m GATEWAY_CIRCUIT_BREAKER_BURST=1
pg="$root/deploy/local/postgres.sh"
cwa="$root/.build/$CONFIG/cwa"
client_address=127.0.0.7
# The fairness checks: a client that floods, and one that arrives meanwhile.
noisy_address=127.0.0.8
other_address=127.0.0.9
work="$(mktemp -d)"
log="$work/steps.log"
# shellcheck source=SCRIPTDIR/checks.sh
. "$root/deploy/local/checks.sh"

lib_name=e2e
sql() {
  if in_containers; then "$run" psql "$1" -X -q -t -A -c "$2" 2>/dev/null; else "$pg" psql -X -q -t -A -d "$1" -c "$2" 2>/dev/null; fi
}

[ -x "$cwa" ] || fail "$cwa is missing (make e2e builds it)"
[ -x "$root/.build/$CONFIG/submission-service" ] || fail "the services are not built (make e2e builds them)"

# A fresh fleet every time, so what the checks find in its logs and tables comes from this journey only.
"$run" stop >/dev/null 2>&1 || true
rm -rf "$EN_DATA_DIR"
mkdir -p "$EN_DATA_DIR"
cleanup() {
  in_containers && "$run" logs "$EN_DATA_DIR/logs" >/dev/null 2>&1
  "$run" stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

started=$(date +%s)
if in_containers; then say "starting the container fleet (data in $EN_DATA_DIR)"; else say "starting the fleet (data in $EN_DATA_DIR, ports +$EN_PORT_OFFSET)"; fi
fleet_up "$run" "$work/up.log"
# The container fleet's clients connect from the host's addresses on the gateway's network.
in_containers && read -r client_address noisy_address other_address <<<"$EN_CLIENT_ADDRESSES"
export CWA_SOURCE_ADDRESS="$client_address"
say "fleet ready in $(( $(date +%s) - started )) s; the journey, through $CWA_APP_URL from $client_address"

cd "$work" || exit 1
guid="e2e-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
meeting_day="$(date -u -d '2 days ago' +%F)"

# ---- phones meet; a lab posts A's positive result ----
check "phones A, B and C are created" bash -c "'$cwa' phone new --state a.json && '$cwa' phone new --state b.json && '$cwa' phone new --state c.json"
check "B hears A for 20 minutes two days ago" "$cwa" phone meet a.json --state b.json --minutes 20 --attenuation 50 --at "${meeting_day}T12:00:00Z"
expect "a lab posts A's positive result over mutual TLS (204)" "HTTP 204" "$cwa" lab upload --result positive --guid "$guid"
expect "a lab without a client certificate is refused by the gateway (400)" "HTTP 400" "$cwa" lab upload --no-cert --result positive --guid "$guid"
expect "a lab certificate of the lab CA that is not allowlisted is refused (401)" "HTTP 401" \
  "$cwa" lab upload --cert "$EN_DATA_DIR/pki/lab-2.pem" --key "$EN_DATA_DIR/pki/lab-2.key" --result positive --guid "$guid"

# ---- A: register, poll, TAN, submit ----
check "A registers its test's GUID" "$cwa" phone register --state a.json --guid "$guid"
expect "A polls: positive" "test result 2 " "$cwa" phone poll --state a.json
expect "A submits its keys and 2 encrypted check-ins (200)" "HTTP 200.*check-ins saved: 2" "$cwa" phone submit --state a.json --checkins 2
keys_after_a="$(sql keys 'SELECT count(*) FROM diagnosis_key')"
reports="$(sql keys 'SELECT count(*) FROM check_in_protected_reports')"
check "the keys database holds A's keys ($keys_after_a) and 2 check-in reports ($reports)" test "${keys_after_a:-0}" -ge 13 -a "${reports:-0}" = 2
expect "A's TAN cannot be used again (403)" "HTTP 403" "$cwa" phone submit --state a.json --reuse-tan

# ---- S self-reports a positive rapid test: data donation's attested OTP, then the keys ----
check "phones S and W are created; W hears S for 15 minutes two days ago" bash -c "'$cwa' phone new --state s.json && '$cwa' phone new --state w.json && '$cwa' phone meet s.json --state w.json --minutes 15 --attenuation 50 --at '${meeting_day}T14:00:00Z'"
"$cwa" phone self-report --state s.json >"$work/self-report" 2>&1; cat "$work/self-report" >>"$log"; cp "$work/self-report" "$work/out"
if grep -q "self-report OTP: HTTP 200" "$work/self-report"; then pass "S's app proves itself (Play Integrity) and gets a self-report OTP through the gateway (200)"; else flunk "S gets a self-report OTP (200)"; fi
if grep -q "self-report submission: HTTP 200" "$work/self-report"; then pass "S submits its keys with the OTP (200)"; else flunk "S submits its keys with the OTP (200)"; fi
expect "S's OTP cannot be used again, not even for other keys (403)" "self-report submission: HTTP 403" "$cwa" phone self-report --state s.json --reuse-otp
otps="$(sql datadonation "SELECT count(*) FROM one_time_password WHERE kind = 'self_report' AND redeemed_at IS NOT NULL")"
self_reports="$(sql keys "SELECT count(*) FROM self_report_submissions WHERE submission_type = 'SUBMISSION_TYPE_SRS_SELF_TEST'")"
check "data donation holds one redeemed self-report OTP ($otps), the keys database one self-report ($self_reports)" test "$otps" = 1 -a "$self_reports" = 1

# ---- the NHS test path (nhs §3, §4): N orders a test, a lab reports it by CTA token, N polls and submits; a
# result of the token API reaches T by CTA exchange. Every signed answer is verified by the client. ----
if in_containers; then nhs=off; else nhs=on; fi
if [ "$nhs" = on ]; then
  check "phones N, M and T are created; M hears N for 25 minutes two days ago" bash -c "'$cwa' phone new --state n.json && '$cwa' phone new --state m.json && '$cwa' phone new --state t.json && '$cwa' phone meet n.json --state m.json --minutes 25 --attenuation 50 --at '${meeting_day}T16:00:00Z'"
  "$cwa" nhs order --state n.json >"$work/nhs-order" 2>>"$log"; cta="$(head -n 1 "$work/nhs-order")"
  check "N orders a test through the gateway with the app's API key; the signed answer holds a CTA token ($cta)" \
    grep -Eq '^[0-9a-hjkmnp-tv-z]{8}$' "$work/nhs-order"
  expect "N polls before the lab reported: pending (204, signature verified)" "signature verified.*pending" \
    "$cwa" nhs poll --state n.json
  expect "an app without an API key is refused (403, unsigned)" "HTTP 403, but|HTTP 403" \
    "$cwa" nhs poll --state n.json --api-key bm8ta2V5OnNlY3JldA==
  expect "a test lab reports N's positive result by CTA token with its API key (202)" "HTTP 202 successfully processed" \
    "$cwa" nhs lab-result --cta "$cta"
  expect "a second report for the same token is refused (409)" "HTTP 409" "$cwa" nhs lab-result --cta "$cta"
  expect "a lab with a wrong API key is refused (403)" "HTTP 403" \
    "$cwa" nhs lab-result --cta "$cta" --lab-key bGFiLWRldjp3cm9uZy1zZWNyZXQ=
  expect "N polls: POSITIVE, key submission supported (signature verified)" \
    'signature verified.*"diagnosisKeySubmissionSupported":true.*"testResult":"POSITIVE"' "$cwa" nhs poll --state n.json
  nhs_before="$(sql keys 'SELECT count(*) FROM diagnosis_key')"
  expect "N submits its keys in the NHS JSON with its submission token (200, signature verified)" \
    "signature verified.*submitted" "$cwa" nhs submit --state n.json
  nhs_after="$(sql keys 'SELECT count(*) FROM diagnosis_key')"
  check "the keys database holds N's keys ($(( ${nhs_after:-0} - ${nhs_before:-0} )) new rows)" test "$(( ${nhs_after:-0} - ${nhs_before:-0} ))" -ge 13
  "$cwa" nhs submit --state n.json >>"$log" 2>&1
  nhs_again="$(sql keys 'SELECT count(*) FROM diagnosis_key')"
  check "the submission token works once: a second submission is answered alike and stores nothing" test "$nhs_again" = "$nhs_after"
  "$cwa" nhs tokengen >"$work/nhs-tokengen" 2>>"$log"; token_cta="$(head -n 1 "$work/nhs-tokengen")"
  check "the token API stores a positive result of a test taken outside the app and returns a new CTA token" \
    grep -Eq '^[0-9a-hjkmnp-tv-z]{8}$' "$work/nhs-tokengen"
  expect "T exchanges the typed CTA token for a submission token (signature verified)" \
    'signature verified.*"diagnosisKeySubmissionToken"' "$cwa" nhs exchange --state t.json --cta "$token_cta"
  expect "T submits its keys with it (200)" "submitted" "$cwa" nhs submit --state t.json
  expect "a CTA token that fails its check character is refused (400)" "HTTP 400" \
    "$cwa" nhs exchange --state t.json --cta 1234abcd
  nhs_rows="$(sql verification 'SELECT count(*) FROM nhs_virology_order') $(sql testresult 'SELECT count(*) FROM nhs_virology_result')"
  check "verification holds 2 NHS orders and test-result 2 NHS results ($nhs_rows)" test "$nhs_rows" = "2 2"

  # ---- NHS isolation payment (§8): the app creates and unlocks a token, the payment website consumes it once ----
  ipc="$("$cwa" nhs ipc create 2>>"$log")"
  check "N's app gets an isolation payment token (64 hex digits, signed answer)" grep -Eq '^[0-9a-f]{64}$' <<<"$ipc"
  expect "the payment website cannot verify it before the app unlocks it (422 invalid)" '^HTTP 422 .*"state":"invalid"' \
    "$cwa" nhs ipc verify --token "$ipc"
  expect "N claims: the app unlocks the token and gets the claim page (signed)" "^https://.*\\?ipcToken=$ipc$" \
    "$cwa" nhs ipc update --token "$ipc"
  expect "the payment website verifies it (200 valid, with the isolation's dates)" '^HTTP 200 .*"isolationPeriodEndDate".*"state":"valid"' \
    "$cwa" nhs ipc verify --token "$ipc"
  "$cwa" nhs ipc consume --token "$ipc" >"$work/ipc-1" 2>&1 & ipc_first=$!
  "$cwa" nhs ipc consume --token "$ipc" >"$work/ipc-2" 2>&1 & ipc_second=$!
  wait "$ipc_first" "$ipc_second" || true
  cat "$work/ipc-1" "$work/ipc-2" >"$work/out"; cat "$work/out" >>"$log"
  ipc_answers="$(grep -c '"state":"consumed"' "$work/out") $(grep -c '^HTTP 422 .*"state":"invalid"' "$work/out")"
  if [ "$ipc_answers" = "1 1" ]; then pass "two parallel consumptions: one consumed (200), one invalid (422)"; else flunk "two parallel consumptions: exactly one consumed ($ipc_answers)"; fi
  expect "a website key is not the app's: create with it is refused (403)" "HTTP 403" \
    "$cwa" nhs ipc create --api-key "$CWA_NHS_IPC_KEY"

  # ---- NHS circuit breakers (§7): the spike rule holds a request (the fleet runs with NHS_CB_SPIKE_MINIMUM=3), an
  # officer releases it at the portal. Four phones ask: two others, then N twice (its circuit_breaker budget) ----
  for address in 127.0.0.11 127.0.0.12; do CWA_SOURCE_ADDRESS=$address "$cwa" nhs circuit-breaker --kind venue >>"$log" 2>&1; done
  "$cwa" nhs circuit-breaker --kind venue >>"$log" 2>&1
  "$cwa" nhs circuit-breaker --kind venue >"$work/cb" 2>&1; cat "$work/cb" >>"$log"; cp "$work/cb" "$work/out"
  cb_token="$(grep -Eo '^[0-9A-Za-z]{50} ' "$work/cb" | tr -d ' ')"
  if [ -n "$cb_token" ] && grep -q "^$cb_token pending$" "$work/cb" && grep -q "signature verified" "$work/cb"; then
    pass "the 4th venue approval request of the hour is held by the spike rule (pending, signed)"
  else
    flunk "the 4th venue approval request of the hour is held by the spike rule (pending)"
  fi
  expect "its resolution stays pending until an officer decides" "^$cb_token pending$|^pending$" \
    "$cwa" nhs circuit-breaker --kind venue --token "${cb_token:-none}"
  expect "the officer sees 1 waiting venue request at the portal and releases it" "answered 1 waiting venue requests" \
    "$cwa" officer circuit-breaker --kind venue --release
  expect "the held token now resolves to yes (signed)" "^yes$" "$cwa" nhs circuit-breaker --kind venue --token "${cb_token:-none}"
  cb_rows="$(sql verification "SELECT count(*) FROM nhs_circuit_breaker_request WHERE kind = 'venue' AND approval = 'yes'")"
  check "verification holds 4 approved venue requests, by token hash only ($cb_rows)" test "$cb_rows" = 4
  # One client cannot hold every phone's alerts: of its 20 exposure approval requests the gateway lets 2 through (its
  # circuit_breaker budget) and refuses the rest with 429, so the next phone's request is the 3rd of the hour and is
  # approved. Without the budget all 20 would count, and the rule would hold the next phone's from the 4th on.
  for _ in $(seq 1 20); do CWA_SOURCE_ADDRESS="$noisy_address" "$cwa" nhs circuit-breaker >>"$work/cb-flood" 2>&1; done
  cat "$work/cb-flood" >>"$log"
  cb_answered="$(grep -Ec '^[0-9A-Za-z]{50} (yes|pending)$' "$work/cb-flood")"
  cb_refused="$(grep -c 'HTTP 429' "$work/cb-flood")"
  CWA_SOURCE_ADDRESS="$other_address" "$cwa" nhs circuit-breaker >"$work/cb-next" 2>&1
  cat "$work/cb-next" >>"$log"; cp "$work/cb-next" "$work/out"
  cb_next="$(grep -Eo '^[0-9A-Za-z]{50} [a-z]+$' "$work/cb-next" | cut -d' ' -f2)"
  if [ "$cb_answered" -le 2 ] && [ "$((cb_answered + cb_refused))" = 20 ] && [ "$cb_next" = yes ]; then
    pass "20 exposure approval requests from one client: $cb_answered reach verification, $cb_refused get 429; the next phone is approved (yes)"
  else
    flunk "one client's 20 exposure approval requests leave the next phone approved ($cb_answered answered, $cb_refused refused, next: ${cb_next:-none})"
  fi

  # ---- the signed static documents (§9), published by distribution: the kill switch (availability) among them ----
  expect "the 7 signed documents are on the CDN and each verifies (cwa nhs documents)" "^tier-metadata: .*signature verified" \
    "$cwa" nhs documents
  verify_document() {
    local name="$1" headers="$work/doc-headers" body="$work/doc-body" date signature
    curl -sf --cacert "$CWA_CA_FILE" --interface "$client_address" -D "$headers" -o "$body" "$CWA_APP_URL/distribution/$name" || return 1
    date="$(tr -d '\r' <"$headers" | sed -n 's/^[Xx]-[Aa]mz-[Mm]eta-[Ss]ignature-[Dd]ate: //p')"
    signature="$(tr -d '\r' <"$headers" | sed -n 's/^[Xx]-[Aa]mz-[Mm]eta-[Ss]ignature: .*signature="\([^"]*\)".*/\1/p')"
    [ -n "$date" ] && [ -n "$signature" ] || return 1
    printf '%s' "$signature" | base64 -d >"$work/doc-sig.der"
    { printf '%s:' "$date"; cat "$body"; } >"$work/doc-signed"
    openssl dgst -sha256 -verify "$EN_DATA_DIR/keys/nhs-signing.pub.pem" -signature "$work/doc-sig.der" "$work/doc-signed"
  }
  expect "the kill switch /distribution/availability-ios verifies with openssl dgst -verify (date: and the bytes)" \
    "^Verified OK$" verify_document availability-ios
  expect "a name that is no document is 404 at the CDN" "^404$" \
    curl -s -o /dev/null -w '%{http_code}' --cacert "$CWA_CA_FILE" --interface "$client_address" "$CWA_APP_URL/distribution/.tmp-x"

  # ---- risky venues (§5): an external system uploads the list; it is on the CDN, signed, at once ----
  printf '# venue_id, start_time, end_time, message_type, optional_parameter\n"4WT59M5Y", "%s", "%s", "M2", ""\n' \
    "$(date -u -d '3 days ago' +%Y-%m-%dT10:00:00Z)" "$(date -u -d '3 days ago' +%Y-%m-%dT14:00:00Z)" >"$work/venues.csv"
  expect "a venue with a bad id is refused whole (422, the reason named)" "HTTP 422 validation error: VenueId must match" \
    "$cwa" nhs upload-venues - <<<"$(sed 's/4WT59M5Y/AB1/' "$work/venues.csv")"
  # Over the 1 MB limit and under the gateway's 3 MB: the portal answers, after the API key, in the contract's words.
  { head -n 1 "$work/venues.csv"; yes "$(tail -n 1 "$work/venues.csv")" | head -c 1100000; } >"$work/venues-large.csv"
  expect "a list over 1 MB gets the portal's 422 through the gateway, not nginx's 413" \
    "^HTTP 422 validation error: Csv content is more than 1MB$" "$cwa" nhs upload-venues "$work/venues-large.csv"
  expect "a list over 1 MB without the API key is 403" "^HTTP 403" \
    "$cwa" nhs upload-venues --venues-key wrong "$work/venues-large.csv"
  expect "a list file that does not exist is named, and nothing is sent" "cannot read $work/absent.csv" \
    "$cwa" nhs upload-venues "$work/absent.csv"
  expect "the list of risky venues is uploaded with the API key (202)" "^HTTP 202 successfully uploaded$" \
    "$cwa" nhs upload-venues "$work/venues.csv"
  expect "the venue is on the CDN at once, signed (/distribution/risky-venues)" '"id":"4WT59M5Y".*"messageType":"M2"' \
    "$cwa" nhs documents --show risky-venues

  # ---- a venue officer uploads the list at the portal: preview per row, confirm, signed on the CDN within a minute ----
  printf '# venue_id, start_time, end_time, message_type, optional_parameter\n"C5MPR2X9", "%s", "%s", "M1", ""\n"X4", "bad", "%s", "M1", ""\n' \
    "$(date -u -d '2 days ago' +%Y-%m-%dT18:00:00Z)" "$(date -u -d '2 days ago' +%Y-%m-%dT21:00:00Z)" \
    "$(date -u -d '2 days ago' +%Y-%m-%dT21:00:00Z)" >"$work/officer-venues.csv"
  expect "the officer's preview names the bad row's problem and offers no confirmation (nothing published)" \
    "^  row 2: Date did not conform" "$cwa" officer local-risk --list risky-venues "$work/officer-venues.csv"
  check "a preview publishes nothing (the venue is not on the CDN)" \
    bash -c "! '$cwa' nhs documents --show risky-venues | grep -q C5MPR2X9"
  sed -i '$d' "$work/officer-venues.csv"
  expect "the officer confirms the corrected list at /local-risk (preview: 1 entry, 0 with problems; published)" \
    "^published risky-venues: 1 entries$" "$cwa" officer local-risk --list risky-venues "$work/officer-venues.csv"
  officer_started=$(date +%s)
  venue_seen=""
  for _ in $(seq 1 30); do
    if "$cwa" nhs documents --show risky-venues 2>/dev/null | grep -q '"id":"C5MPR2X9"'; then venue_seen=yes; break; fi
    [ $(( $(date +%s) - officer_started )) -ge 60 ] && break
    sleep 2
  done
  officer_seconds=$(( $(date +%s) - officer_started ))
  check "the officer's venue is on the CDN, signed, within a minute (${officer_seconds} s after the confirmation)" \
    test "$venue_seen" = yes -a "$officer_seconds" -le 60
  expect "/distribution/risky-venues verifies with openssl dgst -verify (date: and the bytes)" "^Verified OK$" \
    verify_document risky-venues
  check "the officer's publication is in the portal's audit trail" \
    test "$(sql portal "SELECT count(*) FROM audit_event WHERE action = 'risky_venues_published' AND details = 'venues=1 source=portal'")" = 1
  check "the officer commands back to back never sent a spent TOTP code (no totp_failed in the portal's audit)" \
    test "$(sql portal "SELECT count(*) FROM audit_event WHERE action = 'totp_failed'")" = 0

  # ---- risky post districts (§6): uploaded with the API key, published as v1 and v2 (with the tier metadata) ----
  printf '{"postDistricts":{"AL1":{"riskIndicator":"H","tierIndicator":"EN.Tier3"}},"localAuthorities":{"E07000240":{"tierIndicator":"EN.Tier3"}}}' \
    >"$work/districts.json"
  expect "a tier that is not in the tier metadata is refused (422, the reason named)" \
    "HTTP 422 validation error: Invalid tier indicator: EN.Tier99 for post district: AL1" \
    "$cwa" nhs upload-post-districts - <<<"$(sed 's/"EN.Tier3"}},"local/"EN.Tier99"}},"local/' "$work/districts.json")"
  expect "the risky post districts are uploaded with the API key (202)" "^HTTP 202 successfully uploaded$" \
    "$cwa" nhs upload-post-districts "$work/districts.json"
  expect "v1 and v2 are on the CDN at once, signed; v2 carries the tier metadata as riskLevels" \
    '"localAuthorities":\{"E07000240":"EN.Tier3"\},"riskLevels":\{' \
    "$cwa" nhs documents --show risky-post-districts risky-post-districts-v2

  # ---- NHS mobile analytics (§10): a daily packet and an event, merged to coarse areas before they are stored ----
  expect "N's app sends its daily analytics packet (200) and an exposure-window event (200, signed)" \
    "^event: HTTP 200 .*signature verified" "$cwa" nhs analytics --postal-district AL2 --local-authority E07000098 --event
  analytics="$(sql datadonation "SELECT postal_district || '/' || local_authority FROM nhs_mobile_analytics") $(sql datadonation "SELECT postal_district || '/' || event_type FROM nhs_mobile_analytics_event")"
  check "data donation holds the packet and the event under the merged area only ($analytics)" \
    test "$analytics" = "AL2_AL4_WD7/E07000098 AL2_AL4_WD7/exposureWindow"
fi

# ---- distribution publishes; B syncs and finds A ----
check "a distribution run publishes (threshold 1, current hour included)" \
  env SHIFTING_POLICY_THRESHOLD=1 INCLUDE_INCOMPLETE_HOURS=true "$run" distribute
# The audit plans as that run did and reads every listed archive back from the CDN.
env SHIFTING_POLICY_THRESHOLD=1 INCLUDE_INCOMPLETE_HOURS=true "$run" audit >"$work/audit" 2>&1; audit_status=$?
cat "$work/audit" >>"$log"; cp "$work/audit" "$work/out"
check "the audit finds every key of the plan in a listed, signed archive ($(grep -E '^audit: (DE|EUR): ' "$work/audit" | sed 's/^audit: //' | paste -sd';' -))" \
  test "$audit_status" = 0 -a "$(grep -c '^audit: 0 missing$' "$work/audit")" = 1
"$cwa" phone sync --state b.json >"$work/sync-b" 2>&1; sync_status=$?
cat "$work/sync-b" >>"$log"
cp "$work/sync-b" "$work/out"
if [ $sync_status = 0 ] && grep -Eq 'synced [1-9][0-9]* new archives .* [1-9][0-9]* signatures verified' "$work/sync-b" && ! grep -q REJECTED "$work/sync-b"; then
  pass "B syncs through the gateway: $(grep -Eo 'synced [0-9]+ new archives \([0-9]+ keys, [0-9]+ signatures verified\)' "$work/sync-b")"
else
  flunk "B syncs and every signature verifies"
fi
if [ "$(grep -c '^EXPOSURE' "$work/sync-b")" = 1 ] && grep -q "^EXPOSURE on $meeting_day: 20 min" "$work/sync-b"; then
  pass "B finds exactly one exposure: $(grep '^EXPOSURE' "$work/sync-b" | cut -c1-60)…"
else
  flunk "B finds exactly the exposure with A on $meeting_day"
fi
expect "C, who met nobody, finds no exposure" "no new exposure" "$cwa" phone sync --state c.json
"$cwa" phone sync --state a.json --wait 30 --interval 2 >"$work/sync-a" 2>&1
cat "$work/sync-a" >>"$log"; cp "$work/sync-a" "$work/out"
check "A's own keys are on the CDN, measured from outside: $(grep -o 'own keys published [0-9]* s after the submission' "$work/sync-a")" \
  grep -q 'own keys published [0-9]* s after the submission' "$work/sync-a"
# W, who met S, is warned by S's self-reported keys.
"$cwa" phone sync --state w.json >"$work/sync-w" 2>&1; cat "$work/sync-w" >>"$log"; cp "$work/sync-w" "$work/out"
if [ "$(grep -c '^EXPOSURE' "$work/sync-w")" = 1 ] && grep -q "^EXPOSURE on $meeting_day: 15 min" "$work/sync-w"; then
  pass "W finds the exposure to S's self-reported keys: $(grep '^EXPOSURE' "$work/sync-w" | cut -c1-60)…"
else
  flunk "W finds exactly the exposure with S on $meeting_day"
fi
if [ "$nhs" = on ]; then
  "$cwa" phone sync --state m.json >"$work/sync-m" 2>&1; cat "$work/sync-m" >>"$log"; cp "$work/sync-m" "$work/out"
  if [ "$(grep -c '^EXPOSURE' "$work/sync-m")" = 1 ] && grep -q "^EXPOSURE on $meeting_day: 25 min" "$work/sync-m"; then
    pass "M finds the exposure to N's keys, submitted on the NHS path: $(grep '^EXPOSURE' "$work/sync-m" | cut -c1-60)…"
  else
    flunk "M finds exactly the exposure with N on $meeting_day"
  fi
fi
archive_path="$(grep -Eo 'key from [^)]+' "$work/sync-b" | head -n 1 | cut -d' ' -f3)"
check "the archive with A's key, downloaded through the gateway, is a valid ZIP (unzip -t) and verifies with the public key" bash -c \
  "curl -sf --cacert '$CWA_CA_FILE' --interface $client_address -o archive.zip '$CWA_APP_URL/$archive_path' && unzip -tq archive.zip && '$cwa' verify-archive archive.zip"
headers() { curl -sI --cacert "$CWA_CA_FILE" --interface "$client_address" "$CWA_APP_URL/$1" | tr 'A-Z\r\n' 'a-z  '; }
expect "the CDN answers indexes as JSON with Cache-Control" "content-type: application/json.*cache-control: public,max-age=300" \
  headers version/v1/diagnosis-keys/country
expect "the CDN answers archives as ZIP" "content-type: application/zip.*cache-control: public,max-age=300" headers "$archive_path"
expect "the v2 root index (version/index-v2) is JSON, not an archive" "200 ok.*content-type: application/json" headers version/index-v2

# ---- a teleTAN from the portal lets C submit ----
"$cwa" officer teletan --type TEST >"$work/teletan" 2>>"$log"; teletan="$(head -n 1 "$work/teletan")"
check "an officer logs in (password, TOTP) and issues a TEST teleTAN through the gateway" test "${#teletan}" = 10
check "C registers the teleTAN" "$cwa" phone register --state c.json --teletan "$teletan"
expect "C polls: positive" "test result 2 " "$cwa" phone poll --state c.json
expect "C submits with the teleTAN's TAN (200)" "HTTP 200" "$cwa" phone submit --state c.json

# ---- a dummy stores nothing ----
before="$(sql keys 'SELECT (SELECT count(*) FROM diagnosis_key) + (SELECT count(*) FROM check_in_protected_reports)')"
expect "a dummy submission is answered 200" "HTTP 200" "$cwa" phone submit --state b.json --fake
after="$(sql keys 'SELECT (SELECT count(*) FROM diagnosis_key) + (SELECT count(*) FROM check_in_protected_reports)')"
check "the dummy stored nothing ($before rows before, $after after)" test -n "$before" -a "$before" = "$after"

# ---- what the gateway does not route ----
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$CWA_CA_FILE" --interface "$client_address" "$@"; }
check "health and metrics are not routed (404), nor is the internal TAN check (POST refused by the CDN location)" bash -c "
  for url in '$CWA_APP_URL/health/ready' '$CWA_APP_URL/metrics' '$CWA_PORTAL_URL/health/live' '$CWA_PORTAL_URL/metrics' \
             '$CWA_PORTAL_URL/metrics/' '$CWA_PORTAL_URL/health/ready/' '$CWA_PORTAL_URL/openapi.yaml'; do
    [ \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert '$CWA_CA_FILE' --interface $client_address \"\$url\")\" = 404 ] || exit 1
  done
  case \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert '$CWA_CA_FILE' --interface $client_address -X POST -H 'Content-Type: application/json' -d '{}' '$CWA_APP_URL/version/v1/tan/verify')\" in 403|404) ;; *) exit 1 ;; esac"
expect "a portal path that is no page gets the portal's own page (in the officer's language), not nginx's, nor metrics" \
  "<title>Fehler · Corona-Warn-App-Portal</title>" \
  curl -s --cacert "$CWA_CA_FILE" --interface "$client_address" -H 'Accept-Language: de' "$CWA_PORTAL_URL/metrics"
if in_containers; then
  # in_container SERVICE METHOD PATH PORT [HOST]: the status line of a request made from inside SERVICE's container, with
  # bash alone (the images have no curl); the body is `{}`. Fails when the connection does.
  in_container() {
    podman exec "en-e2e_$1_1" bash -c '
      exec 3<>"/dev/tcp/$1/$2" || exit 1
      printf "%s %s HTTP/1.1\r\nHost: internal\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}" "$3" "$4" >&3
      IFS= read -r status <&3 && printf "%s\n" "$status" | tr -d "\r"' _ "${5:-127.0.0.1}" "$4" "$2" "$3"
  }
  only_gateway_published() {
    local published
    published="$(podman ps --filter label=io.podman.compose.project=en-e2e --format '{{.Names}} {{.Ports}}' | grep -- '->')"
    echo "$published"
    [ "$(grep -c . <<<"$published")" = 1 ] \
      && [ "$(podman port en-e2e_gateway_1 | sort | tr '\n' ' ')" = "8443/tcp -> 0.0.0.0:8443 8444/tcp -> 0.0.0.0:8444 8445/tcp -> 0.0.0.0:8445 8446/tcp -> 0.0.0.0:8446 " ]
  }
  metrics_only() {
    local metrics
    metrics="$(podman exec en-e2e_verification-service_1 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9002
      printf "GET /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n" >&3; cat <&3')"
    grep -q '^en_verification_registrations_total' <<<"$metrics" || { echo "no registrations counter"; return 1; }
    in_container verification-service POST /version/v1/registrationToken 9002 | grep -q '^HTTP/1.1 404' || return 1
    in_container verification-service GET /health/ready 9002 | grep -q '^HTTP/1.1 404'
  }
  # reaches FROM TO PORT: whether a connection from FROM's container to TO's name and port opens.
  reaches() { podman exec "en-e2e_$1_1" bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null; }
  networks_separate() {
    local status
    status="$(in_container submission-service POST /version/v1/tan/verify 8012 verification-service)"
    [ "$status" = "HTTP/1.1 401 Unauthorized" ] || { echo "submission to verification without a token: $status"; return 1; }
    status="$(in_container verification-service POST /api/v1/app/result 8013 test-result-service)"
    [ "$status" = "HTTP/1.1 401 Unauthorized" ] || { echo "verification to test-result without a token: $status"; return 1; }
    ! reaches submission-service test-result-service 8013 || { echo "submission reaches test-result"; return 1; }
    ! reaches submission-service portal-service 8004 || { echo "submission reaches the portal"; return 1; }
    ! reaches portal-service test-result-service 8013 || { echo "the portal reaches test-result"; return 1; }
    ! reaches distribution-service verification-service 8002 || { echo "distribution reaches verification"; return 1; }
    reaches federation-service efgs 8091 || { echo "federation does not reach the federation gateway's front"; return 1; }
    ! reaches federation-service efgs-gateway 8092 || { echo "federation reaches the federation gateway behind its front"; return 1; }
    ! reaches federation-service verification-service 8002 || { echo "federation reaches verification"; return 1; }
    ! reaches efgs-gateway submission-service 8001 || { echo "the federation gateway reaches submission"; return 1; }
  }
  check "only the gateway publishes ports (8443-8446): no service, no database, not the rehearsal federation gateway" only_gateway_published
  check "verification's metrics port (9002, from inside its container) serves /metrics with its registrations, and no API or health path" metrics_only
  check "compose's networks: submission reaches verification's internal port (401 without a service token), no other peer; the portal and distribution neither; federation only the federation gateway's front" networks_separate

  # ---- federation through the rehearsal gateway: the keys A shared go out signed, the gateway calls back through our
  # gateway's callback server (8446), the download they announce runs; a certificate of another name is refused ----
  check "a download run (in the federation-service container) registers DE's callback with the federation gateway" \
    "$run" federate download
  check "the federation gateway holds DE's callback URL, our gateway's 8446" \
    test "$(sql efgs "SELECT url FROM callback WHERE country = 'DE'")" = "https://gateway:8446/version/v1/callback"
  "$run" federate upload >"$work/federate-upload" 2>&1
  cat "$work/federate-upload" >>"$log"
  shared="$(sql keys "SELECT count(*) FROM federation_upload_key WHERE batch_tag IS NOT NULL")"
  check "DE's upload run sends A's keys that may leave today ($shared), signed, and the federation gateway stores exactly those" \
    test "${shared:-0}" -gt 0 -a "$(sql efgs "SELECT count(*) FROM diagnosis_key WHERE origin = 'DE'")" = "$shared"
  # Within 60 s: the gateway batches every 2 s here, calls back every 2 s, and the callback starts a download at once.
  processed() {
    local attempt
    for attempt in $(seq 1 60); do
      [ "$(sql keys "SELECT count(*) FROM federation_batch_info WHERE status = 'PROCESSED'")" -ge 1 ] 2>/dev/null && return 0
      sleep 1
    done
    echo "no batch PROCESSED after $attempt s"
    return 1
  }
  check "the federation gateway calls back through our gateway (8446, mutual TLS), and the announced batch is downloaded (PROCESSED; our own keys left out)" \
    processed
  check "the callback server refuses a client without a certificate (400) and one with DE's client certificate, not the gateway's callback name (401); nothing recorded" bash -c "
    [ \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert '$CWA_CA_FILE' '$EN_FEDERATION_CALLBACK_URL?batchTag=e2e-forged&date=$(date -u +%F)')\" = 400 ] || exit 1
    [ \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert '$CWA_CA_FILE' --cert '$EN_FEDERATION_CLIENT_CERT' --key '$EN_FEDERATION_CLIENT_KEY' '$EN_FEDERATION_CALLBACK_URL?batchTag=e2e-forged&date=$(date -u +%F)')\" = 401 ] || exit 1
    [ \"\$('$run' psql keys -X -q -t -A -c \"SELECT count(*) FROM federation_batch_info WHERE batch_tag = 'e2e-forged'\")\" = 0 ]"
  podman exec en-e2e_gateway_1 cat /etc/nginx/conf.d/gateway.conf >"$work/gateway.conf" 2>>"$log"
  gateway_conf="$work/gateway.conf"
else
  # Each service's metrics port serves /metrics and nothing else (the monitoring network policy opens only it).
  metrics_port=$((9002 + EN_PORT_OFFSET))
  check "verification's metrics port ($metrics_port) serves /metrics with its registrations, and no API or health path" bash -c "
    curl -sf http://127.0.0.1:$metrics_port/metrics | grep -q '^en_verification_registrations_total' || exit 1
    for path in /version/v1/registrationToken /health/ready /openapi.yaml; do
      [ \"\$(curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:$metrics_port\$path)\" = 404 ] || exit 1
    done"
  # The internal ports admit authenticated callers only, each to its own routes (deploy/README.md, "Service-to-service
  # authentication"); dev-jwt.sh signs with the fleet's own service-token keys.
  internal_verification=$((8012 + EN_PORT_OFFSET))
  internal_testresult=$((8013 + EN_PORT_OFFSET))
  check "internal ports: no service token 401, a token for another service 401, a caller off its allowlist 403, its own route served" bash -c "
    post() { curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \"\$@\"; }
    token() { '$root/deploy/local/dev-jwt.sh' service \"\$1\" \"\$2\"; }
    verify=http://127.0.0.1:$internal_verification/version/v1/tan/verify
    lookup=http://127.0.0.1:$internal_testresult/api/v1/app/result
    tan='{\"tan\":\"$(cat /proc/sys/kernel/random/uuid)\"}'
    id='{\"id\":\"$(printf e2e-lookup | sha256sum | cut -c1-64)\"}'
    [ \"\$(post -d \"\$tan\" \$verify)\" = 401 ] || { echo 'no token'; exit 1; }
    [ \"\$(post -H \"X-CWA-Service-Token: \$(token submission test-result-service)\" -d \"\$tan\" \$verify)\" = 401 ] || { echo 'audience'; exit 1; }
    [ \"\$(post -H \"X-CWA-Service-Token: \$(token portal verification-service)\" -d \"\$tan\" \$verify)\" = 403 ] || { echo 'portal on tan/verify'; exit 1; }
    [ \"\$(post -H \"X-CWA-Service-Token: \$(token submission verification-service)\" -d \"\$tan\" \$verify)\" = 404 ] || { echo 'submission on tan/verify'; exit 1; }
    [ \"\$(post -d \"\$id\" \$lookup)\" = 401 ] || { echo 'lookup without token'; exit 1; }
    [ \"\$(post -H \"X-CWA-Service-Token: \$(token submission test-result-service)\" -d \"\$id\" \$lookup)\" = 401 ] || { echo 'submission on lookup'; exit 1; }
    [ \"\$(post -H \"X-CWA-Service-Token: \$(token verification test-result-service)\" -d \"\$id\" \$lookup)\" = 200 ] || { echo 'verification on lookup'; exit 1; }"
  gateway_conf="$EN_DATA_DIR/gateway/gateway.conf"
fi
# The services get only allowlisted headers: the rendered configuration turns nginx's passing of request headers
# off once, for every server, and sets nothing but the API's own headers.
allowed_headers="Host Connection Content-Type X-Request-ID cwa-fake cwa-authorization cwa-otp X-SSL-Client-Cert X-Gateway-Secret Cookie Accept-Language Authorization Request-Id User-Agent"
check "the gateway passes only allowlisted headers to the services (proxy_pass_request_headers off; proxy_set_header names)" bash -c "
  conf='$gateway_conf'
  [ \"\$(grep -cE '^proxy_pass_request_headers off;' \"\$conf\")\" = 1 ] || exit 1
  ! grep -qE 'proxy_pass_request_headers +on' \"\$conf\" || exit 1
  for name in \$(grep -oE 'proxy_set_header +[A-Za-z0-9_-]+' \"\$conf\" | awk '{print \$2}' | sort -u); do
    case ' $allowed_headers ' in *\" \$name \"*) ;; *) echo \"unexpected header \$name\"; exit 1 ;; esac
  done"
# A client that sends its address in forwarding headers: the gateway drops them (checked below with the logs).
status="$(code -X POST -H 'Content-Type: application/json' -H "X-Forwarded-For: $client_address" -H "X-Real-IP: $client_address" \
  -H "Forwarded: for=$client_address" -H "X-Request-ID: $client_address" -d '{"key":"'"$(printf x | sha256sum | cut -c1-64)"'","keyType":"GUID"}' \
  "$CWA_APP_URL/version/v1/registrationToken")"
check "a registration carrying forwarding headers is served ($status)" test "$status" = 201

# ---- fairness: a client over its own budget is refused, another client is not (the gateway's per-client limits) ----
portal_port="${CWA_PORTAL_URL##*:}"
# The gateway's access log: a file of the loopback fleet; the container's output (GATEWAY_ACCESS_LOG=/dev/stdout).
access_log() { if in_containers; then podman logs en-e2e_gateway_1 2>/dev/null; else cat "$EN_DATA_DIR/logs/gateway-access.log"; fi; }
portal_429s() { access_log | grep -c " $portal_port \"GET /login\" 429 "; }
# COUNT requests from ADDRESS on one connection; prints one status code per line.
statuses() {
  local address="$1" count="$2" url="$3" requests=() i
  shift 3
  for ((i = 0; i < count; i++)); do requests+=(-o /dev/null "$url"); done
  curl -s --cacert "$CWA_CA_FILE" --interface "$address" -w '%{http_code}\n' "$@" "${requests[@]}"
}
# The portal: 600 page loads from one client as fast as one connection goes. Once the gateway refuses it (a 429 in
# the access log, which is written unbuffered), a second client asks for the login page while the flood goes on. With
# one budget for all officers, the flood keeps that budget spent and the second client gets 429 too.
before_flood="$(portal_429s)"
statuses "$noisy_address" 600 "$CWA_PORTAL_URL/login" >"$work/flood" 2>>"$log" &
flood_pid=$!
for _ in $(seq 1 100); do [ "$(portal_429s)" -gt "$before_flood" ] && break; sleep 0.05; done
other_status="$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CWA_CA_FILE" --interface "$other_address" "$CWA_PORTAL_URL/login")"
wait "$flood_pid"
refused="$(grep -c '^429$' "$work/flood")"
served="$(grep -c '^200$' "$work/flood")"
printf 'portal flood: %s served, %s refused; the other client: %s\n' "$served" "$refused" "$other_status" >"$work/out"
cat "$work/out" >>"$log"
if [ "$refused" -gt 0 ]; then pass "a client flooding the portal is refused by its own budget (600 requests: $served served, $refused refused with 429)"; else flunk "a client flooding the portal gets 429 from the gateway"; fi
if [ "$other_status" = 200 ]; then pass "meanwhile another client gets the portal's login page (200)"; else flunk "meanwhile another client gets the portal's login page (got $other_status)"; fi
# Registrations: a dozen teleTAN guesses from one client; the first reach verification-service (400: no such teleTAN),
# the rest are refused by the registration budget. Another client still registers, and the guessing client still
# reaches the rest of the app API (its other budget).
guess='{"key":"ABCDEFGHJK","keyType":"TELETAN"}'
statuses "$noisy_address" 12 "$CWA_APP_URL/version/v1/registrationToken" -X POST -H 'Content-Type: application/json' -d "$guess" \
  >"$work/guesses" 2>>"$log"
guesses="$(tr '\n' ' ' <"$work/guesses")"
cp "$work/guesses" "$work/out"
cat "$work/out" >>"$log"
if [ "$(head -n 1 "$work/guesses")" != 429 ] && grep -q '^429$' "$work/guesses"; then
  pass "12 teleTAN registrations from one client: the first reach verification, the rest get 429 ($guesses)"
else
  flunk "12 teleTAN registrations from one client end in 429 ($guesses)"
fi
status="$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CWA_CA_FILE" --interface "$other_address" -X POST -H 'Content-Type: application/json' \
  -d '{"key":"'"$(printf y | sha256sum | cut -c1-64)"'","keyType":"GUID"}' "$CWA_APP_URL/version/v1/registrationToken")"
check "meanwhile another client registers a test (201; got $status)" test "$status" = 201
status="$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CWA_CA_FILE" --interface "$noisy_address" -X POST -H 'Content-Type: application/json' \
  -d '{"registrationToken":"00000000-0000-4000-8000-000000000000"}' "$CWA_APP_URL/version/v1/testresult")"
check "the guessing client still polls a result: its registration budget is its own (got $status, not 429)" test "$status" != 429 -a "$status" -lt 500

# ---- monitoring: make run's Prometheus finds every target up and loaded the rules of deploy/observability ----
# prometheus_up: waits (at most 30 s) until every target answered its last scrape; prints the targets by job.
prometheus_up() {
  python3 - "$EN_PROMETHEUS_URL" <<'PY'
import collections, json, sys, time, urllib.request
base = sys.argv[1]
for _ in range(30):
    targets = json.load(urllib.request.urlopen(base + "/api/v1/targets?state=active"))["data"]["activeTargets"]
    down = [t["scrapeUrl"] for t in targets if t["health"] != "up"]
    # The nginx exporter answers even when it cannot read stub_status; nginx_up says whether it could.
    query = base + "/api/v1/query?query=nginx_up"
    nginx = [float(r["value"][1]) for r in json.load(urllib.request.urlopen(query))["data"]["result"]]
    if targets and not down and nginx == [1.0]:
        jobs = collections.Counter(t["labels"]["job"] for t in targets)
        print(f"{len(targets)} targets up: " + ", ".join(f"{job} {count}" for job, count in sorted(jobs.items()))
              + "; nginx_up 1")
        sys.exit(0)
    time.sleep(1)
print("targets not up: " + ", ".join(down or ["none found"]) + f"; nginx_up {nginx}")
sys.exit(1)
PY
}
# prometheus_rules: the rule groups Prometheus loaded, and whether any rule failed to evaluate.
prometheus_rules() {
  python3 - "$EN_PROMETHEUS_URL" <<'PY'
import json, sys, urllib.request
groups = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/rules"))["data"]["groups"]
rules = [rule for group in groups for rule in group["rules"]]
broken = [rule["name"] for rule in rules if rule.get("health") == "err"]
print(f"{len(groups)} groups, {len(rules)} rules; failing: {', '.join(broken) or 'none'}")
sys.exit(0 if rules and not broken else 1)
PY
}
if ! in_containers; then
  prometheus_up >"$work/prometheus-up" 2>&1; up_status=$?
  cat "$work/prometheus-up" >>"$log"; cp "$work/prometheus-up" "$work/out"
  check "Prometheus scrapes every service's metrics and listeners and the gateway ($(tail -n 1 "$work/prometheus-up"))" \
    test "$up_status" = 0
  # The fairness flood above got the gateway's own 429s on the portal port: mtail counts them off the access log.
  refused_by_gateway() {
    python3 - "$EN_PROMETHEUS_URL" "$portal_port" <<'PY'
import json, sys, time, urllib.parse, urllib.request
query = f'sum(en_gateway_responses_total{{server_port="{sys.argv[2]}", status="429", answered_by="gateway"}})'
for _ in range(20):
    answer = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": query})))
    result = answer["data"]["result"]
    if result and float(result[0]["value"][1]) > 0:
        print(f"{float(result[0]['value'][1]):.0f} counted")
        sys.exit(0)
    time.sleep(1)
print("none counted")
sys.exit(1)
PY
  }
  refused_by_gateway >"$work/prometheus-429" 2>&1; refused_status=$?
  cat "$work/prometheus-429" >>"$log"; cp "$work/prometheus-429" "$work/out"
  check "Prometheus has the gateway's own 429s of the portal flood, read off its access log by mtail ($(tail -n 1 "$work/prometheus-429"))" \
    test "$refused_status" = 0
  # The gateway's TLS certificate, which nginx loads and no service exports: the blackbox exporter's handshakes verify
  # and carry its notAfter into the certificate rule the expiry alerts read, for each of the three servers.
  gateway_certificate() {
    python3 - "$EN_PROMETHEUS_URL" "$(openssl x509 -noout -enddate -dateopt iso_8601 -in "$EN_DATA_DIR/pki/gateway.pem")" <<'PY'
import datetime, json, sys, time, urllib.parse, urllib.request
def query(q):
    url = sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    return json.load(urllib.request.urlopen(url))["data"]["result"]
not_after = datetime.datetime.fromisoformat(sys.argv[2].split("=", 1)[1].replace("Z", "+00:00")).timestamp()
for _ in range(30):
    expiry = {r["metric"]["certificate"]: float(r["value"][1])
              for r in query('service_certificate:expiry_timestamp_seconds:min{service="gateway"}')}
    verified = [r["metric"]["server"] for r in query('probe_success{job="gateway-tls"} == 1')]
    if len(expiry) == 3 and len(verified) == 3:
        break
    time.sleep(1)
wrong = [name for name, value in expiry.items() if value != not_after]
print(f"{', '.join(sorted(expiry)) or 'none'} end {datetime.datetime.fromtimestamp(not_after, datetime.timezone.utc):%Y-%m-%d}, "
      f"as openssl reads gateway.pem; verified handshakes: {', '.join(sorted(verified)) or 'none'}")
sys.exit(0 if len(expiry) == 3 and not wrong and len(verified) == 3 else 1)
PY
  }
  gateway_certificate >"$work/prometheus-tls" 2>&1; tls_status=$?
  cat "$work/prometheus-tls" >>"$log"; cp "$work/prometheus-tls" "$work/out"
  check "Prometheus has the expiry of the gateway's TLS certificate from the blackbox exporter ($(tail -n 1 "$work/prometheus-tls"))" \
    test "$tls_status" = 0
  prometheus_rules >"$work/prometheus-rules" 2>&1; rules_status=$?
  cat "$work/prometheus-rules" >>"$log"; cp "$work/prometheus-rules" "$work/out"
  check "Prometheus evaluates the rules of deploy/observability ($(tail -n 1 "$work/prometheus-rules"))" \
    test "$rules_status" = 0
fi

# ---- privacy: the clients' addresses and the TANs appear nowhere ----
state_values() { python3 -c 'import json,sys; print("\n".join(v for v in (json.load(open(f)).get(sys.argv[1]) for f in sys.argv[2:]) if v))' "$@"; }
tans="$(state_values lastTAN a.json c.json)"
tokens="$(state_values registrationToken a.json c.json)"
guid_hash="$(printf '%s' "$guid" | sha256sum | cut -d' ' -f1)"
if in_containers; then
  # What the images promise: the service user, a read-only root filesystem, a HEALTHCHECK that passes, every library.
  image_promises() {
    local service name
    for service in test-result-service verification-service submission-service portal-service distribution-service \
                   federation-service efgs-gateway data-donation-service; do
      name="en-e2e_${service}_1"
      [ "$(podman exec "$name" id -u)" = 10001 ] || { echo "$service does not run as 10001"; return 1; }
      [ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$name")" = true ] || { echo "$service: root filesystem writable"; return 1; }
      ! podman exec "$name" touch /app/probe 2>/dev/null || { echo "$service could write /app"; return 1; }
      podman healthcheck run "$name" || { echo "$service: HEALTHCHECK failed"; return 1; }
      ! podman exec "$name" ldd "/app/$service" | grep 'not found' || { echo "$service: a library is missing"; return 1; }
    done
    podman healthcheck run en-e2e_postgres_1 && podman healthcheck run en-e2e_gateway_1
  }
  check "every service runs as uid 10001 on a read-only root filesystem, passes its image's HEALTHCHECK, finds every library (ldd); the database and gateway are healthy" image_promises
  "$run" quiet >/dev/null 2>&1   # flushes every log and makes the databases quiet
  "$run" logs "$work/logs" 2>>"$log"
  logs=("$work"/logs/*.log)
else
  "$run" stop >/dev/null 2>&1   # flushes every log and makes the databases quiet
  "$pg" start >/dev/null 2>&1
  logs=("$EN_DATA_DIR"/logs/*.log "$EN_DATA_DIR"/postgres.log)
fi
: >"$work/dump"
for database in keys verification testresult portal datadonation efgs; do
  if in_containers; then
    "$run" pg_dump "$database" --data-only >>"$work/dump" 2>>"$log"
  else
    dump_local "$database" >>"$work/dump" 2>>"$log"
  fi
done
check "the database dump is not empty ($(wc -l <"$work/dump") lines)" test "$(wc -l <"$work/dump")" -gt 50
addresses="$(printf '%s\n' "$client_address" "$noisy_address" "$other_address")"
check "no log line (${#logs[@]} logs, $(cat "${logs[@]}" | wc -l) lines) holds a client address ($client_address, $noisy_address, $other_address)" \
  absent "$addresses" "${logs[@]}"
check "no table of any database holds a client address" absent "$addresses" "$work/dump"
check "the journey's 2 TANs and its teleTAN are known to the check" test "$(printf '%s\n' "$tans" | grep -c .)" = 2 -a -n "$teletan"
check "no log line and no table holds a TAN or the teleTAN" absent "$(printf '%s\n%s\n' "$tans" "$teletan")" "${logs[@]}" "$work/dump"
if [ "$nhs" = on ]; then
  nhs_secrets="$(printf '%s\n%s\n' "$cta" "$token_cta"; state_values nhsPollingToken n.json; state_values nhsSubmissionToken n.json t.json)"
  check "the NHS journey's 2 CTA tokens, polling token and 2 submission tokens are known to the check" \
    test "$(printf '%s\n' "$nhs_secrets" | grep -c .)" = 5
  check "no log line and no table holds an NHS CTA, polling or submission token (hashes only)" \
    absent "$nhs_secrets" "${logs[@]}" "$work/dump"
  check "no log line and no table holds the isolation payment token or the circuit-breaker approval token" \
    absent "$(printf '%s\n%s\n' "$ipc" "$cb_token")" "${logs[@]}" "$work/dump"
  check "no log line holds the analytics' area (AL2_AL4_WD7, E07000098), its payload (riskScore) or a venue id" \
    absent "$(printf 'AL2_AL4_WD7\nE07000098\nriskScore\n4WT59M5Y\n')" "${logs[@]}"
fi
otp="$(state_values lastOTP s.json)"
check "no log line and no table holds the self-report OTP (data donation keeps its SHA-256 only)" \
  absent "$otp" "${logs[@]}" "$work/dump"
# Secrets at rest: the teleTAN is stored as an HMAC under the pepper, the officer's TOTP secret only sealed.
teletan_sha256="$(printf '%s' "$teletan" | sha256sum | cut -d' ' -f1)"
check "no table holds the teleTAN's plain SHA-256 (it is stored as HMAC-SHA-256 under TELETAN_PEPPER_FILE)" \
  absent "$teletan_sha256" "$work/dump"
totp_hex="$(python3 -c 'import base64,sys,urllib.parse as u; q=u.parse_qs(u.urlparse(sys.stdin.read().strip()).query)["secret"][0]; print(base64.b32decode(q+"="*(-len(q)%8)).hex())' \
  <"$CWA_OFFICER_TOTP_FILE")"
check "no table holds the officer's TOTP secret (it is sealed under TOTP_KEY_FILE)" absent "$totp_hex" "$work/dump"
check "no log line holds a registration token, the GUID or its hash" absent "$(printf '%s\n%s\n%s\n' "$tokens" "$guid" "$guid_hash")" "${logs[@]}"
in_containers || "$pg" stop >/dev/null 2>&1

echo "e2e: $passed passed, $failed failed ($(( $(date +%s) - started )) s; logs in $EN_DATA_DIR/logs)"
[ "$failed" = 0 ]
