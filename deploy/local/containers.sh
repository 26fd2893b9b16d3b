#!/usr/bin/env bash
# The containerised fleet: deploy/compose.yaml as it is, run by podman-compose with the images of `make images`, for
# make e2e-containers. It offers e2e.sh what run.sh offers for the fleet on loopback:
#
#   deploy/local/containers.sh up            secrets and PKI, `podman-compose up`, every container healthy, the officer
#   deploy/local/containers.sh env           the fleet's addresses as shell assignments (CWA_*, EN_CLIENT_ADDRESSES, the
#                                            federation callback's URL and certificates)
#   deploy/local/containers.sh distribute    one distribution run in the distribution container (passes
#                                            SHIFTING_POLICY_THRESHOLD and INCLUDE_INCOMPLETE_HOURS on when set)
#   deploy/local/containers.sh federate upload|download
#                                            one federation run in the federation-service container
#   deploy/local/containers.sh psql DB ARG…  psql as postgres in the database container; pg_dump DB ARG… likewise
#   deploy/local/containers.sh quiet         stop the services and the gateway (the database stays up)
#   deploy/local/containers.sh logs DIR      each container's log as DIR/<service>.log
#   deploy/local/containers.sh stop          `podman-compose down` with the volumes: nothing of the fleet is left
#
# The project (EN_COMPOSE_PROJECT, default en-e2e) lives in .data/containers/<project>/: a copy of deploy/'s compose
# file, gateway, efgs, postgres and env folders, and what deploy/env/dev-secrets.sh writes next to them (.env,
# secrets/). The fleet is country DE, registered at the rehearsal federation gateway once it is up; uploads go with a
# single waiting key (FEDERATION_UPLOAD_MIN_KEYS=1), and that gateway forms download batches and calls back every 2 s.
# The third-party images are the local stand-ins (POSTGRES_IMAGE, NGINX_IMAGE). Only the gateway joins a network that
# is not internal, `public`; this script creates that network first with a fixed subnet (EN_CONTAINERS_SUBNET,
# default 10.89.207) so the gateway's address is one its certificate names, and gives the host three more addresses
# on it: clients that connect from them reach the gateway with their own address (through the
# published ports, podman's NAT would show every client as one). podman-compose comes from PyPI into
# .data/containers/venv. Without systemd podman runs no healthcheck timers: this script runs the checks itself
# (`podman healthcheck run`) while the fleet starts, so compose's `service_healthy` conditions are met by the
# images' own HEALTHCHECKs.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
# shellcheck source=SCRIPTDIR/podman.sh
. "$root/deploy/local/podman.sh"

project="${EN_COMPOSE_PROJECT:-en-e2e}"
dir="$root/.data/containers/$project"
venv="$root/.data/containers/venv"
subnet="${EN_CONTAINERS_SUBNET:-10.89.207}"
# The public network is $subnet.0/24: the host is .1, the gateway gets one of .2 to .249 (podman hands out the next
# address on every run, also after the network was made anew; the certificate and the portal's allowed hosts name
# them all), and the clients connect from .250, .251 and .252.
gateway_hosts="$(seq 2 249)"
gateway_names="$(for host in $gateway_hosts; do printf 'IP:%s.%s,' "$subnet" "$host"; done)"
client_addresses=("$subnet.250" "$subnet.251" "$subnet.252")
services=(test-result-service verification-service submission-service portal-service distribution-service federation-service
  data-donation-service efgs-gateway)
export POSTGRES_IMAGE="${POSTGRES_IMAGE:-localhost/en-postgres:15}" NGINX_IMAGE="${NGINX_IMAGE:-localhost/en-nginx:bookworm}"

compose() { (cd "$dir" && "$venv/bin/podman-compose" --in-pod false -p "$project" -f compose.yaml "$@"); }
container() { printf '%s_%s_1' "$project" "$1"; }
# The project's containers: running ones, or all with -a.
containers() { podman ps "$@" --filter "label=io.podman.compose.project=$project" --format '{{.Names}}'; }
public_network="${project}_public"

# Every container that has a healthcheck and is running, checked once.
check_health() {
  local name
  for name in $(containers); do
    podman healthcheck run "$name" >/dev/null 2>&1 || true
  done
}
all_healthy() {
  local name status
  for name in $(containers -a); do
    status="$(podman inspect --format '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' "$name")"
    case "$status" in
      "running healthy" | "exited ") ;;
      *) return 1 ;;
    esac
  done
}

# The services of compose.yaml in an order that starts every dependency first, one per line:
# `SERVICE DEPENDENCY=CONDITION…`.
start_order() {
  "$venv/bin/python3" - "$dir/compose.yaml" <<'PYTHON'
import sys, yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
def deps(name):
    value = services[name].get("depends_on") or {}
    return value if isinstance(value, dict) else {d: {"condition": "service_started"} for d in value}
done, order = set(), []
def visit(name):
    if name in done: return
    for dep in deps(name): visit(dep)
    done.add(name); order.append(name)
for name in services: visit(name)
for name in order:
    print(name, *(f"{d}={c.get('condition', 'service_started')}" for d, c in deps(name).items()))
PYTHON
}
# dependency_met SERVICE CONDITION: whether SERVICE's container meets a depends_on condition.
dependency_met() {
  local state
  state="$(podman inspect --format '{{.State.Status}} {{.State.ExitCode}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' \
    "$(container "$1")" 2>/dev/null)" || return 1
  case "$2" in
    service_healthy) [[ $state == "running "*" healthy" ]] ;;
    service_completed_successfully)
      [[ $state == "exited 0"* ]] && return 0
      # Failed: met, as far as waiting goes; the caller sees the exit code.
      [[ $state == exited* ]] ;;
    *) [[ $state == running* ]] ;;
  esac
}

up() {
  podman_ready
  if [ ! -x "$venv/bin/podman-compose" ]; then
    say "installing podman-compose from PyPI into $venv"
    python3 -m venv "$venv" || fail "could not make the venv $venv"
    "$venv/bin/pip" install -q podman-compose >&2 || fail "could not install podman-compose"
  fi
  local port
  for port in 8443 8444 8445 8446; do
    timeout 3 bash -c ". '$root/deploy/local/lib.sh'; port_open $port" && fail "port $port is taken (compose publishes the gateway on 8443-8446): stop make run first"
  done
  for image in "${services[@]/#/en-backend/}" "$POSTGRES_IMAGE" "$NGINX_IMAGE"; do
    [[ $image == en-backend/* ]] && image="$image:${EN_IMAGE_TAG:-latest}"
    podman image exists "$image" || fail "image $image is missing: make images builds it"
  done
  stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  mkdir -p "$dir/officer"
  cp -R "$root/deploy/compose.yaml" "$root/deploy/gateway" "$root/deploy/efgs" "$root/deploy/postgres" "$root/deploy/env" "$dir/"
  # The gateway PKI first (lab-2, the certificate off the allowlist, stays in pki/ for the checks), then the rest.
  EN_GATEWAY_EXTRA_SAN="${gateway_names%,}" "$root/deploy/local/pki.sh" "$dir" || fail "could not create the PKI"
  mkdir -p "$dir/secrets"
  cp "$dir"/pki/{ca.pem,gateway.pem,gateway.key,lab-ca.pem,lab-1.pem,lab-1.key} "$dir/secrets/"
  "$root/deploy/env/dev-secrets.sh" "$dir" >/dev/null || fail "dev-secrets.sh failed"
  # What an operator sets to the portal's public name: here the addresses the gateway may get.
  local hosts
  hosts="$(for host in $gateway_hosts; do printf ',%s.%s:8445' "$subnet" "$host"; done)"
  sed -i "s/^PORTAL_ALLOWED_HOSTS=.*/&$hosts/" "$dir/env/portal.env.example"
  grep -q "^PORTAL_ALLOWED_HOSTS=.*$subnet.249:8445" "$dir/env/portal.env.example" || fail "PORTAL_ALLOWED_HOSTS not found"
  # A demonstration's federation: one key makes a batch; the rehearsal gateway batches and calls back at once.
  printf '%s\n' FEDERATION_UPLOAD_MIN_KEYS=1 >>"$dir/env/federation.env.example"
  printf '%s\n' EFGS_BATCH_INTERVAL=2s EFGS_CALLBACK_INTERVAL=2s >>"$dir/env/efgs-gateway.env.example"

  podman network create --subnet "$subnet.0/24" "$public_network" >/dev/null
  local bridge
  bridge="$(podman network inspect --format '{{.NetworkInterface}}' "$public_network")"
  say "starting the fleet (project $project; the gateway's network on $bridge)"
  # The healthchecks, while the fleet starts.
  ( while true; do check_health; sleep 1; done ) &
  local checker=$! service condition dependency
  # shellcheck disable=SC2064
  trap "kill $checker 2>/dev/null || true" EXIT
  # Service by service in the order of depends_on, each once its dependencies meet their conditions (podman-compose
  # leaves `service_healthy` to podman 4.6 and later, and podman 4.3's --requires fails on a chain of dependencies).
  while read -r service dependencies; do
    for dependency in $dependencies; do
      condition="${dependency#*=}" dependency="${dependency%=*}"
      wait_for --log "$dir/up.log" 180 "$dependency ($condition)" dependency_met "$dependency" "$condition"
      if [ "$condition" = service_completed_successfully ] \
        && [ "$(podman inspect --format '{{.State.ExitCode}}' "$(container "$dependency")")" != 0 ]; then
        podman logs "$(container "$dependency")" >>"$dir/up.log" 2>&1
        fail_with_log "$dir/up.log" "$dependency failed; its log is at the end of $dir/up.log"
      fi
    done
    compose up -d --no-deps --no-build "$service" >>"$dir/up.log" 2>&1 || fail_with_log "$dir/up.log" "podman-compose up $service failed"
  done < <(start_order)
  wait_for --log "$dir/up.log" 180 "the container fleet" all_healthy
  kill "$checker" 2>/dev/null || true
  for address in "${client_addresses[@]}"; do as_root ip addr add "$address/24" dev "$bridge"; done
  wait_for 30 "the gateway at $(gateway_ip)" port_open 8443 "$(gateway_ip)"

  podman exec "$(container efgs-gateway)" /app/efgs-gateway country add DE --auth-cert /run/secrets/federation-client-cert \
    --signing-cert /run/secrets/federation-signing-cert --callback-cert /run/secrets/federation-client-cert \
    --trust-anchor-cert /run/secrets/efgs-trust-anchor --trust-anchor-key /run/secrets/efgs-trust-anchor-key \
    >>"$dir/up.log" 2>&1 || fail_with_log "$dir/up.log" "could not register DE at the rehearsal federation gateway"
  head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$dir/officer/password"
  podman exec -i "$(container portal-service)" /app/portal-service user add officer c19hotline,c19hotline_event \
    <"$dir/officer/password" >"$dir/officer/otpauth" || fail "could not create the officer"
  say "the fleet is up: $(containers -a | wc -l) containers"
}

# Containers, volumes, the project's networks, and the public network's bridge (the host's addresses on it would keep
# it, and its subnet, alive).
stop() {
  local bridge network
  bridge="$(podman network inspect --format '{{.NetworkInterface}}' "$public_network" 2>/dev/null)" || bridge=""
  if [ -x "$venv/bin/podman-compose" ] && [ -f "$dir/compose.yaml" ]; then compose down -v -t 10 >/dev/null 2>&1 || true; fi
  for network in $(podman network ls --format '{{.Name}}' | grep -F "${project}_"); do
    podman network rm -f "$network" >/dev/null 2>&1 || true
  done
  if [ -n "$bridge" ] && ip link show "$bridge" >/dev/null 2>&1; then as_root ip link delete "$bridge"; fi
  # aardvark-dns keeps a network's records in a file that outlives the network when a container was not torn down
  # (a killed run); a network of the same name later would answer with the old addresses. The networks are gone now.
  as_root rm -f "/run/containers/networks/aardvark-dns/${project}_"*
}

gateway_ip() {
  podman inspect --format "{{(index .NetworkSettings.Networks \"$public_network\").IPAddress}}" "$(container gateway)"
}

print_env() {
  local gateway_ip
  gateway_ip="$(gateway_ip)"
  cat <<ENV
export CWA_APP_URL=https://$gateway_ip:8443
export CWA_LAB_URL=https://$gateway_ip:8444
export CWA_PORTAL_URL=https://$gateway_ip:8445
export CWA_CA_FILE=$dir/pki/ca.pem
export CWA_LAB_CERT=$dir/pki/lab-1.pem
export CWA_LAB_KEY=$dir/pki/lab-1.key
export CWA_CDN_PUBLIC_KEY=$dir/secrets/cdn-signing.pub.pem
export CWA_OFFICER_USER=officer
export CWA_OFFICER_PASSWORD_FILE=$dir/officer/password
export CWA_OFFICER_TOTP_FILE=$dir/officer/otpauth
export CWA_PLAY_INTEGRITY_DECRYPTION_KEY_FILE=$dir/secrets/play-integrity-decryption.key
export CWA_PLAY_INTEGRITY_SIGNING_KEY_FILE=$dir/secrets/play-integrity-signing.pem
export EN_CLIENT_ADDRESSES="${client_addresses[*]}"
export EN_FEDERATION_CALLBACK_URL=https://$gateway_ip:8446/version/v1/callback
export EN_EFGS_CALLBACK_CERT=$dir/secrets/efgs-callback.pem
export EN_EFGS_CALLBACK_KEY=$dir/secrets/efgs-callback.key
export EN_FEDERATION_CLIENT_CERT=$dir/secrets/federation-client.pem
export EN_FEDERATION_CLIENT_KEY=$dir/secrets/federation-client.key
ENV
}

distribute() {
  local env=() name
  for name in SHIFTING_POLICY_THRESHOLD INCLUDE_INCOMPLETE_HOURS; do
    [ -n "${!name:-}" ] && env+=(-e "$name=${!name}")
  done
  podman exec "${env[@]}" "$(container distribution-service)" /app/distribution-service "${1:-run}"
}

mode="${1:-}"
[ $# -gt 0 ] && shift
case "$mode" in
  up) up ;;
  stop) stop ;;
  env) print_env ;;
  distribute) distribute ;;
  audit) distribute audit ;;
  federate)
    case "${1:-}" in upload | download) ;; *) fail "usage: containers.sh federate upload|download" ;; esac
    podman exec "$(container federation-service)" /app/federation-service "$1" ;;
  psql | pg_dump)
    database="$1"; shift
    podman exec "$(container postgres)" "$mode" -U postgres -d "$database" "$@" ;;
  quiet)
    names=("$(container gateway)" "$(container efgs)")
    for service in "${services[@]}"; do names+=("$(container "$service")"); done
    podman stop -t 10 "${names[@]}" >/dev/null ;;
  logs)
    mkdir -p "$1"
    for name in $(containers -a); do podman logs "$name" >"$1/${name#"${project}"_}.log" 2>&1; done ;;
  *) fail "usage: containers.sh up|env|distribute|federate upload|download|psql DB…|pg_dump DB…|quiet|logs DIR|stop" ;;
esac
