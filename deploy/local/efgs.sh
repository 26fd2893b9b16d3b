#!/usr/bin/env bash
# The rehearsal federation gateway on loopback: efgs-gateway (Tools/EFGSGateway) on its own database `efgs` and, in
# front of it, an nginx with mutual TLS that passes the countries' certificates on as the real gateway's load
# balancer does (deploy/efgs/front.conf.template).
#
#   deploy/local/efgs.sh up     start both (the database first), register the countries, return
#   deploy/local/efgs.sh stop   stop both (and the database, when this script started it)
#   deploy/local/efgs.sh kill   stop the gateway at once, leaving the front (a gateway outage, for drills)
#   deploy/local/efgs.sh start-gateway   start the gateway again behind the running front
#
# EN_DATA_DIR (.data): its PostgreSQL cluster (deploy/local/postgres.sh, port EN_PG_PORT), logs/ and run/.
# EN_FEDERATION_DIR (<data>/federation): the federation PKI (deploy/local/federation-pki.sh).
# EN_EFGS_COUNTRIES (DE): the countries registered, each with its client certificate as AUTHENTICATION and CALLBACK
# and its signing certificate as SIGNING, every row signed by the PKI's trust anchor (efgs-trust-anchor.pem), which
# the gateway checks them against. EN_EFGS_PORT (8091): the front; the gateway itself listens on the next port.
# EN_EFGS_CALLBACK_CA (<data>/pki/ca.pem): the CAs of the national gateways the callbacks go to.
# The gateway inherits the environment (EFGS_BATCH_INTERVAL, EFGS_CALLBACK_INTERVAL, …).
set -euo pipefail
shopt -s nullglob

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
lib_name=efgs
data="${EN_DATA_DIR:-$root/.data}"
pg="$root/deploy/local/postgres.sh"
bin="$root/.build/${CONFIG:-debug}"
logs="$data/logs"
pids="$data/run"
front="$data/efgs-front"
federation_dir="${EN_FEDERATION_DIR:-$data/federation}"
front_port="${EN_EFGS_PORT:-8091}"
api_port=$((front_port + 1))
countries="${EN_EFGS_COUNTRIES:-DE}"
callback_ca="${EN_EFGS_CALLBACK_CA:-$data/pki/ca.pem}"
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
njs_module=/usr/lib/nginx/modules/ngx_http_js_module.so

gateway_env() {
  local secret
  secret="$(cat "$data/secrets/efgs-front")"
  printf '%s\n' "DATABASE_URL=$("$pg" url efgs)" "HTTP_PORT=$api_port" "GATEWAY_SECRET=$secret" \
    "EFGS_CALLBACK_CLIENT_CERT_FILE=$federation_dir/efgs-callback.pem" \
    "EFGS_CALLBACK_CLIENT_KEY_FILE=$federation_dir/efgs-callback.key" \
    "EFGS_CALLBACK_CA_FILE=$callback_ca" "EFGS_CALLBACK_ALLOW_PRIVATE=true" \
    "EFGS_TRUST_ANCHOR_FILE=$federation_dir/efgs-trust-anchor.pem"
}

start_gateway() {
  local env=()
  mapfile -t env < <(gateway_env)
  port_open "$api_port" && fail "port $api_port (efgs-gateway) is already in use"
  ( export "${env[@]}"; exec setsid "$bin/efgs-gateway" serve ) >>"$logs/efgs-gateway.log" 2>&1 &
  echo $! >"$pids/efgs-gateway.pid"
  wait_for --pid "$!" --log "$logs/efgs-gateway.log" 30 efgs-gateway http_ok "http://127.0.0.1:$api_port/health/ready"
}

stop_pid() {
  local pidfile="$pids/$1.pid" pid
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  rm -f "$pidfile"
  kill -"${2:-TERM}" "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

write_front_config() {
  mkdir -p "$front/tmp"
  chmod 711 "$front"
  local user_line=""
  if is_root; then user_line="user root root;"; fi
  GATEWAY_BIND=127.0.0.1 GATEWAY_EFGS_PORT="$front_port" GATEWAY_TLS_CERT="$federation_dir/efgs.pem" \
  GATEWAY_TLS_KEY="$federation_dir/efgs.key" GATEWAY_EFGS_CLIENT_CA="$federation_dir/ca.pem" \
  GATEWAY_EFGS_UPSTREAM="127.0.0.1:$api_port" GATEWAY_SECRET="$(cat "$data/secrets/efgs-front")" \
  GATEWAY_FRONT_JS="$root/deploy/efgs/front.js" GATEWAY_ACCESS_LOG="$logs/efgs-front-access.log" GATEWAY_ERROR_LOG=stderr \
    "$root/deploy/gateway/render.sh" "$root/deploy/efgs/front.conf.template" >"$front/front.conf" \
    || fail "could not render the front's configuration"
  chmod 600 "$front/front.conf"
  cat >"$front/nginx.conf" <<NGINX
# Written by deploy/local/efgs.sh; the front itself is deploy/efgs/front.conf.template.
$user_line
load_module $njs_module;
daemon off;
worker_processes 1;
pid $front/nginx.pid;
error_log stderr crit;
events { worker_connections 512; }
http {
    client_body_temp_path $front/tmp/body;
    proxy_temp_path $front/tmp/proxy;
    fastcgi_temp_path $front/tmp/fastcgi;
    uwsgi_temp_path $front/tmp/uwsgi;
    scgi_temp_path $front/tmp/scgi;
    include $front/front.conf;
}
NGINX
  "$nginx_bin" -t -q -e stderr -p "$front" -c "$front/nginx.conf" || fail "the front's configuration does not load"
}

case "${1:-}" in
  up)
    need_commands nginx openssl curl
    [ -e "$njs_module" ] || install_packages libnginx-mod-http-js
    [ -x "$bin/efgs-gateway" ] || fail "$bin/efgs-gateway is missing (swift build --product efgs-gateway)"
    mkdir -p "$logs" "$pids" "$data/secrets"
    for name in efgs-gateway efgs-front; do
      if [ -f "$pids/$name.pid" ] && kill -0 "$(cat "$pids/$name.pid")" 2>/dev/null; then fail "$name is running already"; fi
    done
    # shellcheck disable=SC2086 # the countries are words
    "$root/deploy/local/federation-pki.sh" "$federation_dir" $countries
    [ -s "$callback_ca" ] || fail "$callback_ca (the national gateways' CA) is missing"
    if [ ! -s "$data/secrets/efgs-front" ]; then
      (umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$data/secrets/efgs-front")
    fi
    "$pg" status >/dev/null 2>&1 || touch "$pids/efgs-postgres.started"
    "$pg" start >/dev/null
    mapfile -t env < <(gateway_env)
    for country in $countries; do
      ( export "${env[@]}"; exec "$bin/efgs-gateway" country add "$country" \
          --auth-cert "$federation_dir/$country/client.pem" --signing-cert "$federation_dir/$country/signing.pem" \
          --callback-cert "$federation_dir/$country/client.pem" \
          --trust-anchor-cert "$federation_dir/efgs-trust-anchor.pem" \
          --trust-anchor-key "$federation_dir/efgs-trust-anchor.key" ) >>"$logs/efgs-gateway.log" 2>&1 \
        || fail_with_log "$logs/efgs-gateway.log" "could not register $country"
    done
    start_gateway
    write_front_config
    port_open "$front_port" && fail "port $front_port (the efgs front) is already in use"
    ( exec setsid "$nginx_bin" -e stderr -p "$front" -c "$front/nginx.conf" ) >>"$logs/efgs-front-error.log" 2>&1 &
    echo $! >"$pids/efgs-front.pid"
    wait_for --pid "$!" --log "$logs/efgs-front-error.log" 10 efgs-front \
      http_answers --cacert "$federation_dir/ca.pem" "https://127.0.0.1:$front_port/"
    say "efgs-gateway behind its front at https://127.0.0.1:$front_port (countries: $countries; logs in $logs)"
    ;;
  stop)
    stop_pid efgs-front
    stop_pid efgs-gateway
    if [ -f "$pids/efgs-postgres.started" ]; then
      rm -f "$pids/efgs-postgres.started"
      "$pg" stop >/dev/null 2>&1 || true
    fi
    ;;
  kill) stop_pid efgs-gateway KILL ;;
  start-gateway) start_gateway ;;
  *) fail "usage: efgs.sh up|stop|kill|start-gateway" ;;
esac
