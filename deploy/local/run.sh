#!/usr/bin/env bash
# Runs the suite on loopback for development: PostgreSQL (deploy/local/postgres.sh), every service and the nginx
# gateway (deploy/gateway/) with a development PKI.
#
#   deploy/local/run.sh              start everything, print the URLs, follow the logs; Ctrl-C stops everything
#   deploy/local/run.sh up           start everything, print the URLs and return (the fleet keeps running)
#   deploy/local/run.sh stop         stop what a previous run left running (gateway, services, then PostgreSQL)
#   deploy/local/run.sh distribute   one distribution run now (`distribution-service run`), beside a running suite
#   deploy/local/run.sh audit        the audit of the published tree (`distribution-service audit`): 0 none missing
#   deploy/local/run.sh env          print the fleet's addresses as shell assignments (for scripts and `cwa`)
#   deploy/local/run.sh restart NAME start one service of a running fleet again, e.g. after a drill killed it
#   deploy/local/run.sh federate upload|download   one federation run now, beside a running suite (EN_FEDERATION=on)
#
# Binaries come from .build/<CONFIG> (make run builds them first). State lives under EN_DATA_DIR (.data): the
# database cluster, keys and the PKI, logs in logs/, process ids in run/. A second run reuses it. EN_PORT_OFFSET
# (default 0) moves every port of the services and the gateway, and EN_PG_PORT the database's, so a second fleet
# (make e2e, make test-browser, make bench) can run beside a development one. EN_SERVICES (default: all six) starts
# some of them only, e.g. "test-result verification"; EN_GATEWAY=off leaves the gateway out, and then labs and
# officers reach the services directly (no lab certificates, the portal on its own port without Secure cookies).
# The services inherit the environment (e.g. DATABASE_POOL_SIZE); the settings below take precedence.
#
# EN_COUNTRY (DE) is the fleet's country (submission's and distribution's ORIGIN_COUNTRY). EN_FEDERATION=on (make run
# sets it) adds federation-service and the gateway's fourth server (port 8446), on which the federation gateway calls
# back. Without EN_EFGS_URL it federates through a local efgs-gateway that run.sh starts and stops with the fleet
# (deploy/local/efgs.sh, https://127.0.0.1:8091, same ports offset); with it, through that gateway. Certificates come
# from EN_FEDERATION_DIR (<data>/federation, made by deploy/local/federation-pki.sh).
#
# EN_PROMETHEUS=on (the default; off leaves it out) adds, when the whole fleet runs with the gateway, a Prometheus on
# http://127.0.0.1:9090 (same offset; Debian's package, installed when missing) that loads the recording and alert
# rules of deploy/observability/ and scrapes, every EN_PROMETHEUS_INTERVAL (15s): each service's metrics (job
# en-services, label service), each service's public and internal listeners for reachability alone (job
# en-listeners: `up`, their samples dropped) and the gateway's stub status through prometheus-nginx-exporter (job
# gateway, 127.0.0.1:9113; the status server, deploy/gateway/status.conf.template, on 127.0.0.1:8449), the gateway's
# answers by status through mtail over its access log (job gateway-log, 127.0.0.1:3903,
# deploy/observability/gateway.mtail), and the gateway's TLS certificate as its three servers present it through
# prometheus-blackbox-exporter (job gateway-tls, 127.0.0.1:9115, a TLS handshake verified against the fleet's CA).
# Its data lives in <data>/prometheus.
set -euo pipefail
shopt -s nullglob

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
data="${EN_DATA_DIR:-$root/.data}"
pg="$root/deploy/local/postgres.sh"
config="${CONFIG:-debug}"
bin="$root/.build/$config"
logs="$data/logs"
pids="$data/run"

offset="${EN_PORT_OFFSET:-0}"
if ! [[ $offset =~ ^[0-9]+$ ]] || [ "$((10#$offset))" -gt 1000 ]; then say "EN_PORT_OFFSET must be 0…1000"; exit 2; fi
offset=$((10#$offset))
port_submission=$((8001 + offset)) port_verification=$((8002 + offset)) port_testresult=$((8003 + offset))
port_portal=$((8004 + offset)) port_distribution=$((8005 + offset)) port_distribution_internal=$((8015 + offset))
port_verification_internal=$((8012 + offset)) port_testresult_internal=$((8013 + offset))
port_submission_metrics=$((9001 + offset)) port_verification_metrics=$((9002 + offset))
port_testresult_metrics=$((9003 + offset)) port_portal_metrics=$((9004 + offset))
port_gateway_app=$((8443 + offset)) port_gateway_lab=$((8444 + offset)) port_gateway_portal=$((8445 + offset))
port_federation=$((8006 + offset)) port_gateway_federation=$((8446 + offset))
port_datadonation=$((8007 + offset)) port_datadonation_internal=$((8017 + offset)) port_datadonation_metrics=$((9007 + offset))
port_prometheus=$((9090 + offset)) port_nginx_exporter=$((9113 + offset)) port_gateway_status=$((8449 + offset))
port_mtail=$((3903 + offset)) port_blackbox=$((9115 + offset))
# Nothing listens here: make run has no Apple DeviceCheck, so iOS donations get 503 DEVICE_CHECK_UNAVAILABLE.
port_devicecheck_absent=$((8097 + offset))
country="${EN_COUNTRY:-DE}"
[[ $country =~ ^[A-Z]{2}$ ]] || { say "EN_COUNTRY must be a country code such as DE"; exit 2; }
federation="${EN_FEDERATION:-off}"
case "$federation" in on | off) ;; *) say "EN_FEDERATION must be on or off"; exit 2 ;; esac
federation_dir="${EN_FEDERATION_DIR:-$data/federation}"
port_efgs=$((8091 + offset))
efgs_url="${EN_EFGS_URL:-https://127.0.0.1:$port_efgs}"
# The local efgs-gateway: started and stopped with the fleet when no other gateway is named.
local_efgs=off
[ "$federation" = on ] && [ -z "${EN_EFGS_URL:-}" ] && local_efgs=on
efgs_local() {
  EN_EFGS_PORT=$port_efgs EN_EFGS_COUNTRIES="$country" EN_EFGS_CALLBACK_CA="$pki/ca.pem" \
    EN_FEDERATION_DIR="$federation_dir" "$root/deploy/local/efgs.sh" "$@"
}
pki="$data/pki"
gateway="$data/gateway"
export LOG_LEVEL="${LOG_LEVEL:-info}"

case "${EN_GATEWAY:-on}" in
  on)
    # Labs authenticate at the gateway, which passes their certificate on; officers come through its TLS port.
    lab_settings="LAB_CERT_HEADER=X-SSL-Client-Cert GATEWAY_SECRET=@file:secrets/gateway LAB_CERT_SHA256_ALLOWLIST=@file:secrets/lab-allowlist LAB_CA_FILE=@data/pki/lab-ca.pem"
    portal_settings="PORTAL_ALLOWED_HOSTS=127.0.0.1:$port_gateway_portal,localhost:$port_gateway_portal PORTAL_SECURE_COOKIES=true" ;;
  off)
    lab_settings=""
    portal_settings="PORTAL_ALLOWED_HOSTS=127.0.0.1:$port_portal,localhost:$port_portal" ;;
  *) say "EN_GATEWAY must be on or off"; exit 2 ;;
esac

# The NHS API family on test-result, verification, submission and data donation: the CTA tokens' pepper
# (shared by test-result and verification) and the key that signs answers (ensure_nhs_keys makes both; API keys:
# ensure_nhs_api_keys).
nhs_cta="NHS_ENABLED=true NHS_CTA_PEPPER_FILE=@data/keys/nhs-cta-pepper.keys"
nhs_signing="NHS_ENABLED=true NHS_SIGNING_KEYS=nhs-dev-1=@data/keys/nhs-signing.pem"

# name | binary [arguments] | environment (space-separated KEY=VALUE; @db:<role> is replaced by that role's database
# URL, @data by the data folder (anywhere in the value), @file:<path> by the content of that file under the data folder)
services=(
  "test-result|test-result-service|HTTP_PORT=$port_testresult INTERNAL_HTTP_PORT=$port_testresult_internal METRICS_PORT=$port_testresult_metrics DATABASE_URL=@db:testresult SERVICE_CALLER_KEYS=verification-service=@data/keys/service-token-verification.pub.pem $lab_settings $nhs_cta"
  "verification|verification-service|HTTP_PORT=$port_verification INTERNAL_HTTP_PORT=$port_verification_internal METRICS_PORT=$port_verification_metrics DATABASE_URL=@db:verification TEST_RESULT_INTERNAL_URL=http://127.0.0.1:$port_testresult_internal TELETAN_JWT_PUBLIC_KEYS=@data/keys/teletan-trusted.pem TELETAN_JWT_ISSUERS=portal-service,dev-identity-provider TELETAN_PEPPER_FILE=@data/keys/teletan-pepper.keys SERVICE_TOKEN_KEY_FILE=@data/keys/service-token-verification.pem SERVICE_CALLER_KEYS=submission-service=@data/keys/service-token-submission.pub.pem,portal-service=@data/keys/service-token-portal.pub.pem $nhs_cta $nhs_signing"
  "submission|submission-service|HTTP_PORT=$port_submission METRICS_PORT=$port_submission_metrics DATABASE_URL=@db:submission VERIFICATION_INTERNAL_URL=http://127.0.0.1:$port_verification_internal DATA_DONATION_INTERNAL_URL=http://127.0.0.1:$port_datadonation_internal SERVICE_TOKEN_KEY_FILE=@data/keys/service-token-submission.pem ORIGIN_COUNTRY=$country $nhs_signing"
  "portal|portal-service|HTTP_PORT=$port_portal METRICS_PORT=$port_portal_metrics DATABASE_URL=@db:portal VERIFICATION_INTERNAL_URL=http://127.0.0.1:$port_verification_internal PORTAL_JWT_KEY_FILE=@data/keys/portal-jwt.pem TOTP_KEY_FILE=@data/keys/totp.keys SERVICE_TOKEN_KEY_FILE=@data/keys/service-token-portal.pem $portal_settings NHS_ENABLED=true DISTRIBUTION_INTERNAL_URL=http://127.0.0.1:$port_distribution_internal"
  "distribution|distribution-service serve|HTTP_PORT=$port_distribution DATABASE_URL=@db:distribution SIGNING_KEY_FILES=@data/keys/cdn-signing.pem CDN_DIRECTORY=@data/cdn SIGNATURE_APP_BUNDLE_ID=de.rki.coronawarnapp-dev ORIGIN_COUNTRY=$country $nhs_signing INTERNAL_HTTP_PORT=$port_distribution_internal SERVICE_CALLER_KEYS=portal-service=@data/keys/service-token-portal.pub.pem"
)
distribution_entry="${services[4]}"
# Android apps prove themselves with Play Integrity verdicts of the rehearsal app's keys (`cwa phone self-report` makes
# them); DeviceCheck is not reachable, so iOS requests are answered 503.
services+=("data-donation|data-donation-service|HTTP_PORT=$port_datadonation INTERNAL_HTTP_PORT=$port_datadonation_internal METRICS_PORT=$port_datadonation_metrics DATABASE_URL=@db:datadonation SERVICE_CALLER_KEYS=submission-service=@data/keys/service-token-submission.pub.pem ANDROID_ATTESTATION=play-integrity PLAY_INTEGRITY_DECRYPTION_KEY=@file:keys/play-integrity-decryption.b64 PLAY_INTEGRITY_VERIFICATION_KEY=@file:keys/play-integrity-verification.b64 ANDROID_ID_PEPPER_FILE=@data/keys/android-id-pepper.keys DEVICE_CHECK_URL=http://127.0.0.1:$port_devicecheck_absent/v1 DEVICE_CHECK_TEAM_ID=DEVTEAM001 DEVICE_CHECK_KEY_ID=DEVKEY0001 DEVICE_CHECK_KEY_FILE=@data/keys/devicecheck.pem $nhs_signing")
# The callback comes through the gateway's federation server; without the gateway there is none.
callback_settings=""
[ "${EN_GATEWAY:-on}" = on ] && callback_settings="EFGS_CALLBACK_CERT_CN=efgs-callback CALLBACK_CERT_HEADER=X-SSL-Client-Cert GATEWAY_SECRET=@file:secrets/gateway CALLBACK_CA_FILE=$federation_dir/ca.pem CALLBACK_URL=https://127.0.0.1:$port_gateway_federation/version/v1/callback"
federation_entry="federation|federation-service serve|HTTP_PORT=$port_federation DATABASE_URL=@db:federation FEDERATION_OWN_COUNTRY=$country EFGS_URL=$efgs_url EFGS_CLIENT_CERT_FILE=$federation_dir/$country/client.pem EFGS_CLIENT_KEY_FILE=$federation_dir/$country/client.key EFGS_CA_FILE=$federation_dir/ca.pem FEDERATION_SIGNING_CERT_FILE=$federation_dir/$country/signing.pem FEDERATION_SIGNING_KEY_FILE=$federation_dir/$country/signing.key FEDERATION_TRUST_ANCHORS=$federation_dir/trust-anchors.pem FEDERATION_UPLOAD_MIN_KEYS=${FEDERATION_UPLOAD_MIN_KEYS:-1} $callback_settings"
[ "$federation" = on ] && services+=("$federation_entry")

# The entries EN_SERVICES names, in the table's order.
all_services="test-result verification submission portal distribution data-donation"
[ "$federation" = on ] && all_services+=" federation"
for name in ${EN_SERVICES:-}; do
  case " $all_services " in *" $name "*) ;; *) say "EN_SERVICES: unknown service '$name' ($all_services)"; exit 2 ;; esac
done
selected=()
for entry in "${services[@]}"; do
  case " ${EN_SERVICES:-$all_services} " in *" ${entry%%|*} "*) selected+=("$entry") ;; esac
done
selected_names() { local entry; for entry in "${selected[@]}"; do printf '%s ' "${entry%%|*}"; done; }

# The development key that signs the CDN tree: P-256, created once, kept in .data/keys (never committed).
ensure_cdn_key() {
  local key="$data/keys/cdn-signing.pem"
  [ -s "$key" ] && return 0
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

# The key files of secrets at rest, created once (deploy/README.md, "Keys of secrets at rest"): the pepper teleTANs are
# hashed under (verification-service) and the key officers' TOTP secrets are sealed with (portal-service). One
# 32-byte key each, `id=base64:<key>`; a rotation puts a new line first.
ensure_secret_key_files() {
  local file
  mkdir -p "$data/keys"
  for file in teletan-pepper totp android-id-pepper nhs-cta-pepper; do
    [ -s "$data/keys/$file.keys" ] && continue
    ( umask 077; printf 'dev-1=base64:%s\n' "$(openssl rand -base64 32)" >"$data/keys/$file.keys" ) \
      || fail "could not create $data/keys/$file.keys"
    say "created the development key file $data/keys/$file.keys"
  done
}

# The service-token keys (deploy/README.md, "Service-to-service authentication"): a P-256 key pair per calling
# service, created once; the callee is given the public key.
ensure_service_keys() {
  local caller key
  mkdir -p "$data/keys"
  for caller in submission portal verification; do
    key="$data/keys/service-token-$caller.pem"
    if [ ! -s "$key" ]; then
      ( umask 077; openssl ecparam -name prime256v1 -genkey -noout -out "$key" 2>/dev/null ) || fail "could not create $key"
      say "created the development service-token key $key"
    fi
    openssl ec -in "$key" -pubout -out "$data/keys/service-token-$caller.pub.pem" 2>/dev/null \
      || fail "could not write the public key of $key"
  done
}

# The key that signs the answers of the NHS API family (P-256, id nhs-dev-1), created once, and its public half for
# `cwa nhs`.
ensure_nhs_keys() {
  local key="$data/keys/nhs-signing.pem"
  mkdir -p "$data/keys"
  if [ ! -s "$key" ]; then
    ( umask 077; openssl ecparam -name prime256v1 -genkey -noout -out "$key" 2>/dev/null ) || fail "could not create $key"
    say "created the development NHS signing key $key"
  fi
  openssl ec -in "$key" -pubout -out "$data/keys/nhs-signing.pub.pem" 2>/dev/null || fail "could not write the public key of $key"
}

# The NHS API keys (nhs §1), made once and installed at every start (the command is idempotent): `app-dev` of
# API `mobile` in verification, submission and data donation, `lab-dev` of `testResultUpload` in test-result, `ipc-website-dev` of
# `isolationPayment` (the payment website) in verification, `venues-dev` of `highRiskVenuesCodeUpload` and
# `districts-dev` of `highRiskPostCodeUpload` in the portal.
# The values after `Bearer ` are in .data/secrets/nhs-{mobile,lab,ipc,venues,districts}.key.
ensure_nhs_api_keys() {
  local name
  mkdir -p "$data/secrets"
  for name in mobile lab ipc venues districts; do
    [ -s "$data/secrets/nhs-$name.secret" ] || ( umask 077; openssl rand -hex 24 >"$data/secrets/nhs-$name.secret" )
  done
  install_nhs_key() {
    local service="$1" binary="$2" api="$3" key_name="$4" file="$5"
    case " $(selected_names)" in *" $service "*) ;; *) return 0 ;; esac
    ( umask 077; DATABASE_URL="$("$pg" url "$6")" && export DATABASE_URL \
        && "$bin/$binary" api-key add "$api" "$key_name" --secret-stdin <"$data/secrets/nhs-$file.secret" \
        >"$data/secrets/nhs-$file.key.new" ) || fail "could not install the NHS API key $key_name in $binary"
    mv -f "$data/secrets/nhs-$file.key.new" "$data/secrets/nhs-$file.key"
  }
  install_nhs_key verification verification-service mobile app-dev mobile verification
  install_nhs_key submission submission-service mobile app-dev mobile submission
  install_nhs_key data-donation data-donation-service mobile app-dev mobile datadonation
  install_nhs_key test-result test-result-service testResultUpload lab-dev lab testresult
  install_nhs_key verification verification-service isolationPayment ipc-website-dev ipc verification
  install_nhs_key portal portal-service highRiskVenuesCodeUpload venues-dev venues portal
  install_nhs_key portal portal-service highRiskPostCodeUpload districts-dev districts portal
}

# The rehearsal app's attestation keys, created once: the Play Integrity decryption key (Base64 AES-256) and the key
# pair that signs verdicts (its public half, Base64 DER, is what data-donation-service verifies with), and the key
# DeviceCheck calls would be signed with.
ensure_attestation_keys() {
  local keys="$data/keys"
  mkdir -p "$keys"
  if [ ! -s "$keys/play-integrity-decryption.b64" ]; then
    ( umask 077; openssl rand -base64 32 >"$keys/play-integrity-decryption.b64" ) || fail "could not create the Play Integrity keys"
  fi
  if [ ! -s "$keys/play-integrity-signing.pem" ]; then
    ( umask 077; openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null \
        | openssl pkcs8 -topk8 -nocrypt -out "$keys/play-integrity-signing.pem" 2>/dev/null ) \
      || fail "could not create the Play Integrity keys"
    say "created the rehearsal app's Play Integrity keys in $keys"
  fi
  openssl ec -in "$keys/play-integrity-signing.pem" -pubout -outform DER 2>/dev/null | base64 -w0 \
    >"$keys/play-integrity-verification.b64" || fail "could not write the Play Integrity verification key"
  if [ ! -s "$keys/devicecheck.pem" ]; then
    ( umask 077; openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null \
        | openssl pkcs8 -topk8 -nocrypt -out "$keys/devicecheck.pem" 2>/dev/null ) || fail "could not create $keys/devicecheck.pem"
  fi
}

# The development officer (every role: both teleTAN kinds, the NHS circuit breakers and local-risk lists), created
# once; the password and the TOTP URI stay in .data.
ensure_officer() {
  local password_file="$data/secrets/portal-officer" uri_file="$data/keys/portal-officer.otpauth"
  [ -s "$uri_file" ] && return 0
  mkdir -p "$data/secrets"
  ( umask 077; head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$password_file" )
  ( DATABASE_URL="$("$pg" url portal)" TOTP_KEY_FILE="$data/keys/totp.keys" && export DATABASE_URL TOTP_KEY_FILE \
      && "$bin/portal-service" user add officer c19hotline,c19hotline_event,circuit_breaker_officer,venue_officer <"$password_file" >"$uri_file" ) \
    || fail "could not create the development officer"
  say "created the development officer 'officer'"
}

cdn_public_key() { openssl ec -in "$data/keys/cdn-signing.pem" -pubout 2>/dev/null; }

# The CDN's public key as a file, for `cwa phone sync` and `cwa verify-archive`.
ensure_cdn_public_key() { cdn_public_key >"$data/keys/cdn-signing.pub.pem"; }

# The development PKI (deploy/local/pki.sh) and the secret the gateway shows test-result-service.
ensure_pki() {
  if ! "$root/deploy/local/pki.sh" "$data" check; then
    "$root/deploy/local/pki.sh" "$data" || fail "could not create the development PKI in $pki"
    say "created the development PKI in $pki (CA, gateway certificate, lab certificates lab-1 and lab-2)"
  fi
  mkdir -p "$data/secrets"
  [ -s "$data/secrets/gateway" ] || ( umask 077; openssl rand -hex 24 >"$data/secrets/gateway" )
  # test-result-service's allowlist names the lab of each certificate: lab-1, the lab id `cwa lab upload` sends.
  printf 'lab-1=%s\n' "$(cat "$pki/lab-1.sha256")" >"$data/secrets/lab-allowlist"
}

# deploy/gateway/gateway.conf.template rendered for loopback, inside a main configuration of our own: nginx runs in
# the foreground (supervised like the services), with its pid, temporary files and logs under the data folder.
write_gateway_config() {
  mkdir -p "$gateway/tmp" "$data/cdn"
  # The rendered configuration holds the gateway secret and the per-client limits' key (render.sh makes a new one at
  # every start): readable by its owner only (nginx's master reads it; the workers only need to reach tmp/).
  # The rates: `cwa load` and `cwa privacy-check` send everything from one address, so make run's per-client budgets
  # are as large as its ceilings (make e2e and the deployments set real ones).
  chmod 711 "$gateway"
  local user_line=""
  if is_root; then
    # As root, nginx's workers run as nobody: they read the CDN tree (world-readable) and write temporary files. A
    # clone under a private home (/root, mode 700) is out of nobody's reach; the workers then keep root's identity.
    if runuser -u nobody -- test -r "$data/cdn" -a -x "$data/cdn" 2>/dev/null; then
      user_line="user nobody nogroup;"
      chown -R nobody:nogroup "$gateway/tmp"
    else
      user_line="user root root;"
    fi
  fi
  GATEWAY_BIND=127.0.0.1 GATEWAY_APP_PORT=$port_gateway_app GATEWAY_LAB_PORT=$port_gateway_lab \
  GATEWAY_PORTAL_PORT=$port_gateway_portal GATEWAY_TLS_CERT="$pki/gateway.pem" GATEWAY_TLS_KEY="$pki/gateway.key" \
  GATEWAY_LAB_CA="$pki/lab-ca.pem" GATEWAY_SECRET="$(cat "$data/secrets/gateway")" GATEWAY_CDN_ROOT="$data/cdn" \
  GATEWAY_ACCESS_LOG="$logs/gateway-access.log" GATEWAY_ERROR_LOG=stderr \
  GATEWAY_VERIFICATION_UPSTREAM=127.0.0.1:$port_verification GATEWAY_SUBMISSION_UPSTREAM=127.0.0.1:$port_submission \
  GATEWAY_TESTRESULT_UPSTREAM=127.0.0.1:$port_testresult GATEWAY_PORTAL_UPSTREAM=127.0.0.1:$port_portal \
  GATEWAY_DATADONATION_UPSTREAM=127.0.0.1:$port_datadonation \
  GATEWAY_APP_RATE="${GATEWAY_APP_RATE:-5000r/s}" GATEWAY_APP_BURST="${GATEWAY_APP_BURST:-5000}" \
  GATEWAY_LAB_RATE="${GATEWAY_LAB_RATE:-500r/s}" GATEWAY_LAB_BURST="${GATEWAY_LAB_BURST:-1000}" \
  GATEWAY_PORTAL_RATE="${GATEWAY_PORTAL_RATE:-50r/s}" GATEWAY_PORTAL_BURST="${GATEWAY_PORTAL_BURST:-100}" \
  GATEWAY_APP_CLIENT_RATE="${GATEWAY_APP_CLIENT_RATE:-5000r/s}" GATEWAY_APP_CLIENT_BURST="${GATEWAY_APP_CLIENT_BURST:-5000}" \
  GATEWAY_REGISTRATION_RATE="${GATEWAY_REGISTRATION_RATE:-1000r/s}" GATEWAY_REGISTRATION_BURST="${GATEWAY_REGISTRATION_BURST:-5000}" \
  GATEWAY_PORTAL_CLIENT_RATE="${GATEWAY_PORTAL_CLIENT_RATE:-50r/s}" GATEWAY_PORTAL_CLIENT_BURST="${GATEWAY_PORTAL_CLIENT_BURST:-100}" \
  GATEWAY_CIRCUIT_BREAKER_RATE="${GATEWAY_CIRCUIT_BREAKER_RATE:-1000r/s}" GATEWAY_CIRCUIT_BREAKER_BURST="${GATEWAY_CIRCUIT_BREAKER_BURST:-5000}" \
    "$root/deploy/gateway/render.sh" >"$gateway/gateway.conf.new" || fail "could not render the gateway configuration"
  chmod 600 "$gateway/gateway.conf.new"
  mv -f "$gateway/gateway.conf.new" "$gateway/gateway.conf"
  local federation_include=""
  if [ "$federation" = on ]; then
    GATEWAY_BIND=127.0.0.1 GATEWAY_FEDERATION_PORT=$port_gateway_federation GATEWAY_EFGS_CA="$federation_dir/ca.pem" \
    GATEWAY_FEDERATION_UPSTREAM=127.0.0.1:$port_federation GATEWAY_SECRET="$(cat "$data/secrets/gateway")" \
      "$root/deploy/gateway/render.sh" "$root/deploy/gateway/federation.conf.template" >"$gateway/federation.conf.new" \
      || fail "could not render the gateway's federation server"
    chmod 600 "$gateway/federation.conf.new"
    mv -f "$gateway/federation.conf.new" "$gateway/federation.conf"
    federation_include="include $gateway/federation.conf;"
  fi
  local status_include=""
  if [ "$prometheus" = on ]; then
    GATEWAY_STATUS_PORT=$port_gateway_status "$root/deploy/gateway/render.sh" "$root/deploy/gateway/status.conf.template" \
      >"$gateway/status.conf" || fail "could not render the gateway's status server"
    status_include="include $gateway/status.conf;"
  fi
  cat >"$gateway/nginx.conf" <<NGINX
# Written by deploy/local/run.sh for the loopback fleet; the gateway itself is deploy/gateway/gateway.conf.template.
$user_line
load_module $njs_module;
daemon off;
worker_processes 2;
pid $gateway/nginx.pid;
error_log stderr crit;
events { worker_connections 4096; }
http {
    client_body_temp_path $gateway/tmp/body;
    proxy_temp_path $gateway/tmp/proxy;
    fastcgi_temp_path $gateway/tmp/fastcgi;
    uwsgi_temp_path $gateway/tmp/uwsgi;
    scgi_temp_path $gateway/tmp/scgi;
    include $gateway/gateway.conf;
    $federation_include
    $status_include
}
NGINX
  "$nginx_bin" -t -q -e stderr -p "$gateway" -c "$gateway/nginx.conf" 2>&1 | sed -E 's/, client: [^,]*//' >&2
  [ "${PIPESTATUS[0]}" = 0 ] || fail "the gateway configuration does not load (nginx -t above)"
}

# Debian puts nginx in /usr/sbin, which a normal user's PATH may lack.
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
# njs (Debian's libnginx-mod-http-js), for the key of the per-client rate limits (deploy/gateway/client-key.js).
njs_module=/usr/lib/nginx/modules/ngx_http_js_module.so

start_gateway() {
  local port
  local ports=("$port_gateway_app" "$port_gateway_lab" "$port_gateway_portal" "$port_gateway_status")
  [ "$federation" = on ] && ports+=("$port_gateway_federation")
  for port in "${ports[@]}"; do
    port_open "$port" && fail "port $port (for the gateway) is already in use; is another run active? ('make stop')"
  done
  mkdir -p "$data/cdn"
  # nginx 1.22 still writes a few malformed TLS handshakes at `crit` with ", client: <address>": its error log
  # (stderr) passes a filter that removes the address before anything reaches the file.
  ( exec setsid "$nginx_bin" -e stderr -p "$gateway" -c "$gateway/nginx.conf" \
      2> >(sed -u -E 's/, client: [^,]*//' >>"$logs/gateway-error.log") ) >>"$logs/gateway-error.log" &
  echo $! >"$pids/gateway.pid"
}

# setting NAME SETTINGS: the value of NAME in a table entry's settings (empty when it has none).
setting() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p"; }

# Prometheus's configuration, from the table above: per service its metrics listener (METRICS_PORT, else its main
# port) for the metrics, and its main and internal listeners for `up` alone.
write_prometheus_config() {
  local entry name binary settings port metrics listener services_targets="" listener_targets=""
  for entry in "${services[@]}"; do
    IFS='|' read -r name binary settings <<<"$entry"
    binary="${binary%% *}"
    port="$(setting HTTP_PORT "$settings")"
    metrics="$(setting METRICS_PORT "$settings")"
    services_targets+="
      - targets: ['127.0.0.1:${metrics:-$port}']
        labels: {service: $binary}"
    for listener in main internal; do
      if [ "$listener" = internal ]; then
        port="$(setting INTERNAL_HTTP_PORT "$settings")"
        [ -n "$port" ] || continue
      fi
      listener_targets+="
      - targets: ['127.0.0.1:$port']
        labels: {service: $binary, listener: $listener}"
    done
  done
  mkdir -p "$data/prometheus"
  cat >"$data/prometheus/prometheus.yml" <<PROMETHEUS
# Written by deploy/local/run.sh for the loopback fleet (make run).
global:
  scrape_interval: ${EN_PROMETHEUS_INTERVAL:-15s}
  evaluation_interval: ${EN_PROMETHEUS_INTERVAL:-15s}
rule_files:
  - $root/deploy/observability/rules.yaml
  - $root/deploy/observability/alerts.yaml
scrape_configs:
  - job_name: en-services
    static_configs:$services_targets
  - job_name: en-listeners
    # Whether each listener answers (up); its samples are the same as the metrics listener's and are dropped.
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: '.+'
        action: drop
    static_configs:$listener_targets
  - job_name: gateway
    static_configs:
      - targets: ['127.0.0.1:$port_nginx_exporter']
        labels: {service: gateway}
  - job_name: gateway-log
    # mtail's own label prog names the program; the answers are the gateway's.
    metric_relabel_configs:
      - regex: prog
        action: labeldrop
    static_configs:
      - targets: ['127.0.0.1:$port_mtail']
        labels: {service: gateway}
  - job_name: gateway-tls
    # The certificate each TLS server of the gateway presents (probe_ssl_earliest_cert_expiry), probed by the
    # blackbox exporter with a verified handshake (probe_success).
    metrics_path: /probe
    params:
      module: [gateway_tls]
    static_configs:
      - targets: ['127.0.0.1:$port_gateway_app']
        labels: {service: gateway, server: app}
      - targets: ['127.0.0.1:$port_gateway_lab']
        labels: {service: gateway, server: lab}
      - targets: ['127.0.0.1:$port_gateway_portal']
        labels: {service: gateway, server: portal}
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__param_target]
        target_label: instance
      - target_label: __address__
        replacement: 127.0.0.1:$port_blackbox
  - job_name: prometheus
    static_configs:
      - targets: ['127.0.0.1:$port_prometheus']
PROMETHEUS
  # A TLS handshake that must verify against the fleet's CA, for the host name of the target (127.0.0.1). The lab
  # server asks for a client certificate but does not require one at the handshake.
  cat >"$data/prometheus/blackbox.yml" <<BLACKBOX
# Written by deploy/local/run.sh for the loopback fleet (make run).
modules:
  gateway_tls:
    prober: tcp
    timeout: 5s
    tcp:
      tls: true
      tls_config:
        ca_file: $pki/ca.pem
BLACKBOX
}

start_prometheus() {
  local port
  for port in "$port_prometheus" "$port_nginx_exporter" "$port_mtail" "$port_blackbox"; do
    port_open "$port" && fail "port $port (for Prometheus) is already in use; is another run active? ('make stop')"
  done
  write_prometheus_config
  ( exec setsid prometheus-nginx-exporter -nginx.scrape-uri="http://127.0.0.1:$port_gateway_status/stub_status" \
      -web.listen-address="127.0.0.1:$port_nginx_exporter" ) >>"$logs/nginx-exporter.log" 2>&1 &
  echo $! >"$pids/nginx-exporter.pid"
  ( exec setsid mtail --progs "$root/deploy/observability/gateway.mtail" --logs "$logs/gateway-access.log" \
      --address 127.0.0.1 --port "$port_mtail" --logtostderr ) >>"$logs/mtail.log" 2>&1 &
  echo $! >"$pids/mtail.pid"
  ( exec setsid prometheus-blackbox-exporter --config.file="$data/prometheus/blackbox.yml" \
      --web.listen-address="127.0.0.1:$port_blackbox" ) >>"$logs/blackbox-exporter.log" 2>&1 &
  echo $! >"$pids/blackbox-exporter.pid"
  ( exec setsid prometheus --config.file="$data/prometheus/prometheus.yml" \
      --storage.tsdb.path="$data/prometheus/data" --storage.tsdb.retention.time=7d \
      --web.listen-address="127.0.0.1:$port_prometheus" --web.enable-lifecycle ) >>"$logs/prometheus.log" 2>&1 &
  echo $! >"$pids/prometheus.pid"
  wait_for --pid "$(cat "$pids/nginx-exporter.pid")" --log "$logs/nginx-exporter.log" 10 nginx-exporter \
    http_ok "http://127.0.0.1:$port_nginx_exporter/metrics"
  wait_for --pid "$(cat "$pids/mtail.pid")" --log "$logs/mtail.log" 10 mtail http_ok "http://127.0.0.1:$port_mtail/metrics"
  wait_for --pid "$(cat "$pids/blackbox-exporter.pid")" --log "$logs/blackbox-exporter.log" 10 blackbox-exporter \
    http_ok "http://127.0.0.1:$port_blackbox/metrics"
  wait_for --pid "$(cat "$pids/prometheus.pid")" --log "$logs/prometheus.log" 30 prometheus \
    http_ok "http://127.0.0.1:$port_prometheus/-/ready"
}

# The fleet's addresses as shell assignments, for scripts and the cwa client (its options default to these).
print_env() {
  cat <<ENV
export EN_TEST_RESULT_URL=http://127.0.0.1:$port_testresult
export EN_TEST_RESULT_INTERNAL_URL=http://127.0.0.1:$port_testresult_internal
export EN_VERIFICATION_URL=http://127.0.0.1:$port_verification
export EN_VERIFICATION_INTERNAL_URL=http://127.0.0.1:$port_verification_internal
export EN_SUBMISSION_URL=http://127.0.0.1:$port_submission
export EN_PORTAL_URL=http://127.0.0.1:$port_portal
export EN_DISTRIBUTION_URL=http://127.0.0.1:$port_distribution
export EN_FEDERATION_URL=http://127.0.0.1:$port_federation
export EN_DATA_DONATION_URL=http://127.0.0.1:$port_datadonation
export EN_DATA_DONATION_INTERNAL_URL=http://127.0.0.1:$port_datadonation_internal
export EN_FEDERATION_CALLBACK_URL=https://127.0.0.1:$port_gateway_federation/version/v1/callback
export EN_PROMETHEUS_URL=http://127.0.0.1:$port_prometheus
export CWA_APP_URL=https://127.0.0.1:$port_gateway_app
export CWA_LAB_URL=https://127.0.0.1:$port_gateway_lab
export CWA_PORTAL_URL=https://127.0.0.1:$port_gateway_portal
export CWA_CA_FILE=$pki/ca.pem
export CWA_LAB_CERT=$pki/lab-1.pem
export CWA_LAB_KEY=$pki/lab-1.key
export CWA_CDN_PUBLIC_KEY=$data/keys/cdn-signing.pub.pem
export CWA_OFFICER_USER=officer
export CWA_OFFICER_PASSWORD_FILE=$data/secrets/portal-officer
export CWA_OFFICER_TOTP_FILE=$data/keys/portal-officer.otpauth
export CWA_PLAY_INTEGRITY_DECRYPTION_KEY_FILE=$data/keys/play-integrity-decryption.b64
export CWA_PLAY_INTEGRITY_SIGNING_KEY_FILE=$data/keys/play-integrity-signing.pem
export CWA_NHS_PUBLIC_KEYS=nhs-dev-1=$data/keys/nhs-signing.pub.pem
export CWA_NHS_MOBILE_KEY=$(cat "$data/secrets/nhs-mobile.key" 2>/dev/null)
export CWA_NHS_LAB_KEY=$(cat "$data/secrets/nhs-lab.key" 2>/dev/null)
export CWA_NHS_IPC_KEY=$(cat "$data/secrets/nhs-ipc.key" 2>/dev/null)
export CWA_NHS_VENUES_KEY=$(cat "$data/secrets/nhs-venues.key" 2>/dev/null)
export CWA_NHS_DISTRICTS_KEY=$(cat "$data/secrets/nhs-districts.key" 2>/dev/null)
ENV
}

# Whether pid runs one of our binaries or our gateway: after a reboot a stale pidfile may name an unrelated process.
is_ours() {
  local exe
  exe="$(readlink "/proc/$1/exe" 2>/dev/null)" || return 1
  case "$exe" in
    "$root"/.build/*) return 0 ;;
    */nginx) tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "-c $gateway/nginx.conf" ;;
    */prometheus) tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "--config.file=$data/prometheus/prometheus.yml" ;;
    */prometheus-nginx-exporter) tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "127.0.0.1:$port_nginx_exporter" ;;
    */mtail) tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "--logs $logs/gateway-access.log" ;;
    */prometheus-blackbox-exporter) tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "127.0.0.1:$port_blackbox" ;;
    *) return 1 ;;
  esac
}

stop_services() {
  local pidfile pid name
  # The gateway first, so no request arrives at a service that is stopping.
  for pidfile in "$pids"/gateway.pid "$pids"/*.pid; do
    [ -f "$pidfile" ] || continue
    name="$(basename "$pidfile" .pid)"
    pid="$(cat "$pidfile")"
    # Removed first, so a foreground run watching the pidfiles sees a stop, not a crash.
    rm -f "$pidfile"
    if is_ours "$pid"; then
      kill -TERM "$pid" 2>/dev/null || true
      # The services stop within 9 s (7 s to drain, 2 s for cancelled work); give them 12 before insisting.
      for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && { say "$name did not stop in time; killing it"; kill -KILL "$pid" 2>/dev/null || true; }
      say "stopped $name"
    fi
  done
}

stop_all() {
  say "stopping…"
  if [ -n "${tail_pid:-}" ]; then kill "$tail_pid" 2>/dev/null || true; fi
  # The local federation gateway (its front is an nginx of its own, which stop_services would not recognise).
  if [ -f "$pids/efgs-front.pid" ] || [ -f "$pids/efgs-gateway.pid" ]; then efgs_local stop >/dev/null 2>&1 || true; fi
  stop_services
  # PostgreSQL only if a run started it: make test may be using a cluster that was running before.
  if [ -f "$pids/postgres.started" ]; then
    rm -f "$pids/postgres.started"
    "$pg" stop >/dev/null 2>&1 || true
    say "stopped PostgreSQL"
  fi
}

# The environment of a service entry, one KEY=VALUE per line.
service_env() {
  local settings="$1" item role value
  for item in $settings; do
    case "$item" in
      *=@db:*) role="${item#*=@db:}"; printf '%s\n' "${item%%=*}=$("$pg" url "$role")" ;;
      *@data/*) value="${item#*=}"; printf '%s\n' "${item%%=*}=${value//@data\//$data/}" ;;
      *=@file:*) printf '%s\n' "${item%%=*}=$(cat "$data/${item#*=@file:}")" ;;
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
    case "$item" in *_PORT=*) port_open "${item#*=}" && fail "port ${item#*=} (for $name) is already in use; is another run active? ('make stop')" ;; esac
  done
  # Exported in a subshell, not passed to env(1): a command line is visible to every user in ps, and
  # DATABASE_URL holds a password. setsid: a Ctrl-C in the terminal reaches run.sh alone, which then stops the
  # gateway first and the services after it (same pid: a background subshell is no group leader, so setsid execs).
  ( export "${env[@]}"; exec setsid "$bin/$binary" "${args[@]}" ) >>"$logs/$name.log" 2>&1 &
  echo $! >"$pids/$name.pid"
}

wait_ready() { wait_for --pid "$(cat "$pids/$1.pid")" --log "$logs/$1.log" 30 "$1" http_ok "http://127.0.0.1:$2/health/ready"; }
# The gateway answers over TLS with the development CA (a 404 for / is an answer).
wait_gateway() {
  wait_for --pid "$(cat "$pids/gateway.pid")" --log "$logs/gateway-error.log" 10 gateway \
    http_answers --cacert "$pki/ca.pem" "https://127.0.0.1:$port_gateway_app/"
}

start_wave() {
  local entry name binary settings port
  for entry in "$@"; do
    IFS='|' read -r name binary settings <<<"$entry"
    start_service "$name" "$binary" "$settings"
  done
  for entry in "$@"; do
    IFS='|' read -r name binary settings <<<"$entry"
    port="$(setting HTTP_PORT "$settings")"
    wait_ready "$name" "$port"
  done
}
# Starts one service of a running fleet again (the drills kill one and bring it back) and waits until it is ready.
restart_service() {
  local name="$1" entry found=""
  for entry in "${services[@]}"; do [ "${entry%%|*}" = "$name" ] && found="$entry"; done
  [ -n "$found" ] || fail "restart: unknown service '$name' ($all_services)"
  if [ -f "$pids/$name.pid" ] && is_ours "$(cat "$pids/$name.pid")"; then fail "$name is running"; fi
  mkdir -p "$logs" "$pids"
  start_wave "$found"
}

# One distribution run with the suite's settings, e.g. right after a submission (the served one runs hourly).
distribute_now() {
  local env=() settings
  IFS='|' read -r _ _ settings <<<"$distribution_entry"
  mapfile -t env < <(service_env "$settings" | grep -v '^HTTP_PORT=')
  ensure_cdn_key
  ( export "${env[@]}"; exec "$bin/distribution-service" "${1:-run}" )
}

# One federation run (`federation-service upload` or `download`) with the suite's settings.
federate_now() {
  local env=() settings
  [ "$federation" = on ] || fail "federate needs EN_FEDERATION=on"
  case "${1:-}" in upload | download) ;; *) fail "usage: run.sh federate upload|download" ;; esac
  IFS='|' read -r _ _ settings <<<"$federation_entry"
  mapfile -t env < <(service_env "$settings" | grep -v '^HTTP_PORT=')
  ( export "${env[@]}"; exec "$bin/federation-service" "$1" )
}

mode="${1:-run}"
case "$mode" in
  stop) stop_all; exit 0 ;;
  distribute) distribute_now; exit $? ;;
  audit) distribute_now audit; exit $? ;;
  restart) restart_service "${2:-}"; exit $? ;;
  federate) federate_now "${2:-}"; exit $? ;;
  env) print_env; exit 0 ;;
  run | up) ;;
  -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
  *) fail "unknown command '$1' (run, up, stop, distribute, audit, restart, federate or env)" ;;
esac

[ ${#selected[@]} -gt 0 ] || fail "EN_SERVICES names no service"
case "${EN_PROMETHEUS:-on}" in on | off) ;; *) fail "EN_PROMETHEUS must be on or off" ;; esac
# Prometheus watches the whole fleet behind its gateway; a partial fleet (a test's) runs without it.
prometheus=off
[ "${EN_PROMETHEUS:-on}" = on ] && [ ${#selected[@]} -eq ${#services[@]} ] && [ "${EN_GATEWAY:-on}" = on ] && prometheus=on
if [ "$prometheus" = on ]; then
  if ! command -v prometheus >/dev/null || ! command -v prometheus-nginx-exporter >/dev/null \
    || ! command -v mtail >/dev/null || ! command -v prometheus-blackbox-exporter >/dev/null; then
    install_packages prometheus prometheus-nginx-exporter mtail prometheus-blackbox-exporter
  fi
fi
if [ "${EN_GATEWAY:-on}" = on ]; then
  need_commands nginx openssl curl
  [ -e "$njs_module" ] || install_packages libnginx-mod-http-js
else
  need_commands openssl curl
fi
mkdir -p "$logs" "$pids"
for pidfile in "$pids"/*.pid; do
  if is_ours "$(cat "$pidfile")"; then fail "a fleet from $data is running already ('make stop' stops it)"; fi
  rm -f "$pidfile"   # left by a run that was killed
done
"$pg" status >/dev/null 2>&1 || touch "$pids/postgres.started"
"$pg" start >/dev/null
ensure_cdn_key
ensure_cdn_public_key
ensure_portal_keys
ensure_secret_key_files
ensure_service_keys
ensure_attestation_keys
ensure_nhs_keys
ensure_nhs_api_keys
case " $(selected_names)" in *" portal "*) ensure_officer ;; esac
[ "$federation" = on ] && "$root/deploy/local/federation-pki.sh" "$federation_dir" "$country"
if [ "${EN_GATEWAY:-on}" = on ]; then
  ensure_pki
  write_gateway_config
fi
if [ "$local_efgs" = on ]; then
  ensure_pki
  efgs_local up >"$logs/efgs-up.log" 2>&1 || fail_with_log "$logs/efgs-up.log" "the local efgs-gateway did not start"
fi
[ "$mode" = run ] && trap 'stop_all; exit 0' INT TERM
# A failed start-up leaves nothing running.
stop_after_failure() { local code=$?; if [ "$code" -ne 0 ]; then stop_all >&2; fi; }
trap stop_after_failure EXIT

# Two waves: distribution and federation use the keys tables that submission-service creates (the key store's migrations), so they
# start once the others are ready.
first_wave=() second_wave=()
for entry in "${selected[@]}"; do
  case "$entry" in "$distribution_entry" | "$federation_entry") second_wave+=("$entry") ;; *) first_wave+=("$entry") ;; esac
done
[ ${#first_wave[@]} -eq 0 ] || start_wave "${first_wave[@]}"
[ ${#second_wave[@]} -eq 0 ] || start_wave "${second_wave[@]}"
if [ "${EN_GATEWAY:-on}" = on ]; then
  start_gateway
  wait_gateway
fi
[ "$prometheus" = on ] && start_prometheus
trap - EXIT

if [ "$mode" = run ]; then stopping="Ctrl-C or 'make stop' stops it"; else stopping="it runs in the background until 'make stop'"; fi
federation_info=""
if [ "$federation" = on ]; then
  efgs_note=""
  if [ "$local_efgs" = on ]; then efgs_note=" (a local efgs-gateway, logs efgs-*.log)"; fi
  federation_info="
Federation ($country, the EFGS protocol; Services/Federation/README.md):
  federation-service    http://127.0.0.1:$port_federation (health, metrics); the federation gateway calls back on https://127.0.0.1:$port_gateway_federation
  federation gateway    $efgs_url$efgs_note, mutual TLS with $federation_dir/$country/client.pem
  one run now           deploy/local/run.sh federate upload   (or download); serve mode runs both every 5 minutes
"
fi
prometheus_info=""
if [ "$prometheus" = on ]; then
  # Debian's Prometheus ships without the new web UI: its pages are under /classic/ there.
  prometheus_pages=""
  if ! http_ok "http://127.0.0.1:$port_prometheus/targets" \
    && http_ok "http://127.0.0.1:$port_prometheus/classic/targets"; then
    prometheus_pages=/classic
  fi
  prometheus_info="  Prometheus            http://127.0.0.1:$port_prometheus (targets: $prometheus_pages/targets, alerts: $prometheus_pages/alerts; rules of deploy/observability)
"
fi
if [ ${#selected[@]} -lt ${#services[@]} ] || [ "${EN_GATEWAY:-on}" = off ]; then
  # A partial fleet (a test's): its addresses are those of `deploy/local/run.sh env`.
  if [ "${EN_GATEWAY:-on}" = on ]; then with="with the gateway"; else with="without the gateway"; fi
  say "running $(selected_names)$with ($stopping); addresses: 'deploy/local/run.sh env'; logs in $logs"
else
cat <<INFO

The suite is running on loopback ($stopping).

Through the gateway (TLS with the development CA $pki/ca.pem):
  phones    https://127.0.0.1:$port_gateway_app     POST /version/v1/{registrationToken,testresult,tan} (verification),
                                              POST /version/v1/{diagnosis-keys,submission-on-behalf} (submission),
                                              POST /version/v1/{android,ios}/{dat,otp,els,srs} (data donation),
                                              POST /submission/mobile-analytics[-events] (NHS, data donation)
                                              POST /virology-test/v2/{order,results,cta-exchange} (NHS, verification),
                                              POST /submission/diagnosis-keys (NHS, submission; API key and signed answers),
                                              POST /isolation-payment/ipc-token/{create,update} (NHS, verification),
                                              POST /circuit-breaker/{exposure-notification,venue}/request, GET …/resolution/<token>
                                              GET  /version/… the CDN tree ($data/cdn, written by distribution)
                                              GET  /distribution/{availability-ios,availability-android,exposure-configuration,
                                                   self-isolation,symptomatic-questionnaire,risky-venue-configuration,
                                                   tier-metadata,risky-venues} (NHS, signed: X-Amz-Meta-Signature)
  labs      https://127.0.0.1:$port_gateway_lab     POST /api/v1/lab/results … (client certificate $pki/lab-1.pem + .key)
                                              POST /upload/virology-test/v2/{npex-result,eng-result-tokengen} … (NHS, API key)
                                              POST /isolation-payment/ipc-token/{verify-token,consume-token} (NHS payment website)
  officers  https://127.0.0.1:$port_gateway_portal     the portal (teleTANs; /circuit-breakers; /local-risk; POST /upload/identified-risk-venues and /upload/high-risk-postal-districts, API keys): user 'officer', password in $data/secrets/portal-officer,
            second factor: $(cat "$data/keys/portal-officer.otpauth" 2>/dev/null)

The services themselves, on loopback only (the gateway never routes internal ports, /health/* or /metrics):
  test-result-service   http://127.0.0.1:$port_testresult (lab API, needs the gateway's certificate header)  http://127.0.0.1:$port_testresult_internal (internal)
  verification-service  http://127.0.0.1:$port_verification (app API)   http://127.0.0.1:$port_verification_internal (internal: tan/verify, tan/teletan)
  submission-service    http://127.0.0.1:$port_submission
  portal-service        http://127.0.0.1:$port_portal (its cookies are Secure: use the gateway)
  distribution-service  http://127.0.0.1:$port_distribution (health, metrics; runs hourly, and now with 'make distribute')
  data-donation-service http://127.0.0.1:$port_datadonation (app API; Android: Play Integrity of the rehearsal app's keys in $data/keys; iOS: no DeviceCheck, 503)  http://127.0.0.1:$port_datadonation_internal (internal: OTP redemption)
  PostgreSQL            127.0.0.1:${EN_PG_PORT:-54329} (URLs: deploy/local/postgres.sh url <service>)
$prometheus_info
The API documents (OpenAPI 3.1), each served by its service at /openapi.yaml:
  test-result   http://127.0.0.1:$port_testresult/openapi.yaml
  verification  http://127.0.0.1:$port_verification/openapi.yaml   http://127.0.0.1:$port_verification_internal/openapi.yaml (internal)
  submission    http://127.0.0.1:$port_submission/openapi.yaml
  data donation http://127.0.0.1:$port_datadonation/openapi.yaml   http://127.0.0.1:$port_datadonation_internal/openapi.yaml (internal)
  portal        http://127.0.0.1:$port_portal/openapi.yaml (the uploads; the pages are in Services/Portal/README.md)
  distribution  http://127.0.0.1:$port_distribution_internal/openapi.yaml (internal: the NHS lists)
  federation    http://127.0.0.1:$port_federation/openapi.yaml (with EN_FEDERATION=on)
$federation_info
The public key of the CDN signature (development; also in $data/keys/cdn-signing.pub.pem):
$(cdn_public_key)

Try it with the cwa client (make run built it; eval "\$(deploy/local/run.sh env)" points it at this fleet):
  eval "\$(deploy/local/run.sh env)"; cwa=$bin/cwa
  \$cwa phone new --state /tmp/a.json; \$cwa phone new --state /tmp/b.json
  \$cwa phone meet /tmp/a.json --state /tmp/b.json --minutes 20 --attenuation 55
  \$cwa lab upload --result positive --guid guid-of-a
  \$cwa phone register --state /tmp/a.json --guid guid-of-a; \$cwa phone poll --state /tmp/a.json
  \$cwa phone submit --state /tmp/a.json --checkins 2
  \$cwa phone self-report --state /tmp/b.json      (a self-reported positive rapid test)
  SHIFTING_POLICY_THRESHOLD=1 INCLUDE_INCOMPLETE_HOURS=true make distribute
  \$cwa phone sync --state /tmp/b.json
  \$cwa officer teletan --type TEST
  The NHS test path (API keys and the answer-signing key in $data/secrets and $data/keys):
  \$cwa phone new --state /tmp/n.json; \$cwa phone meet /tmp/n.json --state /tmp/b.json
  cta=\$(\$cwa nhs order --state /tmp/n.json); \$cwa nhs lab-result --cta "\$cta" --result POSITIVE
  \$cwa nhs poll --state /tmp/n.json; \$cwa nhs submit --state /tmp/n.json
  \$cwa phone new --state /tmp/t.json; \$cwa nhs exchange --state /tmp/t.json --cta "\$(\$cwa nhs tokengen)"
  NHS isolation payment and circuit breakers:
  ipc=\$(\$cwa nhs ipc create); \$cwa nhs ipc update --token "\$ipc"; \$cwa nhs ipc consume --token "\$ipc"
  \$cwa nhs circuit-breaker --kind venue; \$cwa officer circuit-breaker --kind venue --release
  (README.md and the services' READMEs walk through these journeys)

Logs: $logs
INFO
fi

[ "$mode" = up ] && exit 0

say "following the logs below"
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
      say "$(basename "$pidfile" .pid) stopped unexpectedly (log in $logs)"
      stop_all
      exit 1
    fi
  done
  sleep 1
done
