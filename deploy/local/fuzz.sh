#!/usr/bin/env bash
# Schema-driven fuzzing (drill 1 of make drills): Schemathesis (PyPI, pinned, in the venv .data/fuzz-venv or FUZZ_VENV,
# which also holds the protobuf runtime of protofuzz.py)
# sends positive and negative examples generated from every service's OpenAPI document straight to the listener that
# serves it, never through the gateway (whose rate limits would answer instead of the service), and checks every
# answer: no 5xx (not_a_server_error), a status the document lists (status_code_conformance), its content type
# (content_type_conformance) and a body that matches its schema (response_schema_conformance); an answer slower than
# FUZZ_MAX_RESPONSE_TIME (5) s fails as well, and a request without an answer (10 s) is an error.
#
#   eval "$(deploy/local/run.sh env)"; EN_DATA_DIR=<the fleet's data> deploy/local/fuzz.sh [NAME…]
#
# NAME picks documents (default: all): test-result (its main port), test-result-internal (POST /api/v1/app/result, the
# NHS order and result, and the probes on the internal port), verification, verification-internal, submission,
# portal, data-donation, data-donation-internal, distribution-internal, federation. The fleet's addresses come from the environment `run.sh
# env` prints (EN_*_URL, CWA_PORTAL_URL, CWA_LAB_CERT, CWA_NHS_*_KEY), the credentials from EN_DATA_DIR (.data), as
# run.sh made them:
#   - the lab API (test-result's main port) believes the gateway's headers: X-SSL-Client-Cert (the lab certificate
#     lab-1, URL-escaped PEM) with X-Gateway-Secret (<data>/secrets/gateway); the federation callback likewise, with
#     the federation gateway's callback certificate (EN_FEDERATION_DIR, <data>/federation/efgs-callback.pem);
#   - the internal ports take service tokens (X-CWA-Service-Token, valid 60 s) of the caller each route's allowlist
#     names, signed by deploy/local/dev-jwt.sh with run.sh's keys and made again every 30 s; the teleTAN route also
#     a bearer token of the development identity provider, a new one per request (one teleTAN per token). Routes
#     whose callers a loopback fleet does not configure (dcc-server, survey and error-log services) get
#     submission-service's token and so their documented 403;
#   - the NHS routes take their API keys (CWA_NHS_MOBILE_KEY, _LAB_KEY, _IPC_KEY, _VENUES_KEY, _DISTRICTS_KEY);
#   - the portal admits only the gateway's host name (PORTAL_ALLOWED_HOSTS): Host is CWA_PORTAL_URL's.
# Schemathesis's coverage phase also sends requests without these headers. Protobuf bodies go out as the random bytes
# Schemathesis draws for `format: binary` (deploy/local/protofuzz.py sends well-formed and mutated ones).
# distribution's internal port is EN_DISTRIBUTION_INTERNAL_URL, else EN_DISTRIBUTION_URL's port + 10 (run.sh's
# table); federation is skipped when nothing answers at EN_FEDERATION_URL (run.sh starts it with EN_FEDERATION=on).
#
# Phases: examples, coverage and fuzzing (no stateful phase), mode all, seed FUZZ_SEED (20), no example database, no
# shrinking. DRILLS_EXAMPLES (300) examples per operation in the fuzzing phase; the operations whose only input is
# the optional X-Request-ID header (health, metrics, the document itself) get FUZZ_PLAIN_EXAMPLES (300). One
# Schemathesis process per document (FUZZ_WORKERS, 1, requests at a time in each: more than one thread trips a race in
# Hypothesis), FUZZ_PARALLEL (2, one per core) of them at once; the CTA exchanges, which answer no sooner than 1 s by
# design, run beside them in FUZZ_SLOW_SHARDS (3) processes each with seeds of their own. FUZZ_TIMEOUT (600) seconds
# at most per process. Reports (JSON; with FUZZ_RECORD=1 also NDJSON with every request and answer) and Schemathesis's
# output, with a curl line for every failure, go to FUZZ_OUT (<data>/fuzz).
#
# Prints one line per document (operations, examples, requests, seconds, answers by status, failures and errors by
# kind and operation), then the totals; exits 1 when a document had a failure or an error, or a run did not finish.
set -uo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
data="${EN_DATA_DIR:-$root/.data}"
venv="${FUZZ_VENV:-$root/.data/fuzz-venv}"   # not under EN_DATA_DIR: make drills makes that anew every run
schemathesis_version=4.32.5
# The protobuf runtime of protofuzz.py, which make drills runs in this venv too: the release of Debian's protoc (3.21).
protobuf_version=4.21.12
examples="${DRILLS_EXAMPLES:-300}"
seed="${FUZZ_SEED:-20}"
workers="${FUZZ_WORKERS:-1}"
parallel="${FUZZ_PARALLEL:-2}"
slow_shards="${FUZZ_SLOW_SHARDS:-3}"
plain_examples="${FUZZ_PLAIN_EXAMPLES:-300}"
record="${FUZZ_RECORD:-}"
[ "$record" = 0 ] && record=""
timeout_seconds="${FUZZ_TIMEOUT:-600}"
max_response_time="${FUZZ_MAX_RESPONSE_TIME:-5}"
out="${FUZZ_OUT:-$data/fuzz}"

for pair in "DRILLS_EXAMPLES:$examples:1:100000" "FUZZ_SEED:$seed:0:999999999" "FUZZ_WORKERS:$workers:1:16" \
  "FUZZ_PARALLEL:$parallel:1:10" "FUZZ_SLOW_SHARDS:$slow_shards:1:20" "FUZZ_PLAIN_EXAMPLES:$plain_examples:1:100000" \
  "FUZZ_TIMEOUT:$timeout_seconds:10:86400"; do
  IFS=: read -r name value low high <<<"$pair"
  if ! [[ $value =~ ^[0-9]+$ ]] || [ "$value" -lt "$low" ] || [ "$value" -gt "$high" ]; then
    fail "$name must be $low…$high"
  fi
done
[[ $max_response_time =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "FUZZ_MAX_RESPONSE_TIME must be a number of seconds"
for variable in EN_TEST_RESULT_URL EN_TEST_RESULT_INTERNAL_URL EN_VERIFICATION_URL EN_VERIFICATION_INTERNAL_URL \
  EN_SUBMISSION_URL EN_PORTAL_URL EN_DATA_DONATION_URL EN_DATA_DONATION_INTERNAL_URL EN_DISTRIBUTION_URL \
  CWA_PORTAL_URL CWA_LAB_CERT; do
  [ -n "${!variable:-}" ] || fail "$variable is not set: eval \"\$(deploy/local/run.sh env)\" first"
done
[ -s "$data/secrets/gateway" ] || fail "$data/secrets/gateway is missing: is EN_DATA_DIR the fleet's data folder?"
if [ -z "${EN_DISTRIBUTION_INTERNAL_URL:-}" ]; then
  port="${EN_DISTRIBUTION_URL##*:}"
  EN_DISTRIBUTION_INTERNAL_URL="${EN_DISTRIBUTION_URL%:*}:$((port + 10))"
fi
export EN_DISTRIBUTION_INTERNAL_URL

# Whether the venv has the pinned Schemathesis and protobuf runtime.
schemathesis_ready() {
  [ "$("$venv/bin/python" -c 'from importlib.metadata import version as v; print(v("schemathesis"), v("protobuf"))' \
    2>/dev/null)" = "$schemathesis_version $protobuf_version" ]
}
ensure_schemathesis() {
  schemathesis_ready && return 0
  # Debian's python3 creates venvs only with python3-venv (it brings ensurepip).
  python3 -c 'import venv, ensurepip' 2>/dev/null || install_packages python3-venv
  say "installing Schemathesis $schemathesis_version and protobuf $protobuf_version into $venv"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$schemathesis_version" \
    "protobuf==$protobuf_version"
  schemathesis_ready || fail "Schemathesis $schemathesis_version and protobuf $protobuf_version did not install into $venv"
}

# name | document | base URL | which operations (Schemathesis's filter options; - for all)
# test-result's document names both of its ports; its internal one serves one operation and the probes.
internal_api=(/api/v1/app/result /api/v1/nhs/order /api/v1/nhs/result)
internal_paths="$(printf -- '--include-path %s ' "${internal_api[@]}" /health/live /health/ready /metrics)"
# The longest first, so that two at a time end close together.
documents=(
  "verification|Services/Verification/openapi.yaml|$EN_VERIFICATION_URL|-"
  "test-result|Services/TestResult/openapi.yaml|$EN_TEST_RESULT_URL|$(printf -- '--exclude-path %s ' "${internal_api[@]}")"
  "data-donation|Services/DataDonation/openapi.yaml|$EN_DATA_DONATION_URL|-"
  "verification-internal|Services/Verification/openapi-internal.yaml|$EN_VERIFICATION_INTERNAL_URL|-"
  "submission|Services/Submission/openapi.yaml|$EN_SUBMISSION_URL|-"
  "distribution-internal|Services/Distribution/openapi-internal.yaml|$EN_DISTRIBUTION_INTERNAL_URL|-"
  "portal|Services/Portal/openapi.yaml|$EN_PORTAL_URL|-"
  "data-donation-internal|Services/DataDonation/openapi-internal.yaml|$EN_DATA_DONATION_INTERNAL_URL|-"
  "test-result-internal|Services/TestResult/openapi.yaml|$EN_TEST_RESULT_INTERNAL_URL|$internal_paths"
  "federation|Services/Federation/openapi.yaml|${EN_FEDERATION_URL:-}|-"
)
# Operations that answer no sooner than a fixed time, whatever the request (document=path): each CTA exchange takes at
# least 1 s (NHSVirologyController.exchange), so that its timing tells nothing about the token.
slow_operations="verification=/virology-test/v2/cta-exchange verification=/virology-test/cta-exchange"
selected=()
for name in "$@"; do
  case " ${documents[*]%%|*} " in *" $name "*) ;; *) fail "unknown document '$name' (${documents[*]%%|*})" ;; esac
done
for entry in "${documents[@]}"; do
  if [ $# -eq 0 ]; then selected+=("$entry"); continue; fi
  for name in "$@"; do [ "${entry%%|*}" = "$name" ] && selected+=("$entry"); done
done
for key in MOBILE LAB IPC VENUES DISTRICTS; do
  variable="CWA_NHS_${key}_KEY"
  [ -n "${!variable:-}" ] || say "$variable is empty: the NHS routes that take it will only be refused (403)"
done

ensure_schemathesis
work="$(mktemp -d)"
mkdir -p "$work/pids"
# stop_runs: the Schemathesis runs still going (a Ctrl-C, a failure of this script), each by its timeout's id.
stop_runs() {
  local file
  for file in "$work"/pids/*; do
    [ -f "$file" ] && kill -TERM "$(cat "$file")" 2>/dev/null
  done
  return 0
}
trap 'stop_runs; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$out"
for entry in "${selected[@]}"; do rm -rf "${out:?}/${entry%%|*}"; done

# The operations whose only input is the optional X-Request-ID header get FUZZ_PLAIN_EXAMPLES. No cache of crashes
# and state between runs (Schemathesis would keep one in .schemathesis/ of the working directory).
cat >"$work/schemathesis.toml" <<TOML
[cache]
enabled = false

[[operations]]
include-path-regex = "^/(health/live|health/ready|metrics|openapi\\\\.yaml)\$"
generation.max-examples = $plain_examples
TOML

# The hooks every run loads (SCHEMATHESIS_HOOKS): the credentials of each route, and protobuf bodies as bytes.
cat >"$work/fuzz_hooks.py" <<'PY'
"""Credentials for the fuzzed routes, as the gateway and the calling services would send them; the answers counted."""
import atexit
import collections
import json
import os
import subprocess
import threading
import time
import urllib.parse

import schemathesis

schemathesis.serializer.alias("application/x-protobuf", "application/octet-stream")

ROOT = os.environ["FUZZ_ROOT"]
DATA = os.environ["FUZZ_DATA"]
DOCUMENT = os.environ["FUZZ_DOCUMENT"]
DEV_JWT = os.path.join(ROOT, "deploy/local/dev-jwt.sh")


def read(path):
    with open(path) as handle:
        return handle.read().strip()


def gateway_headers(certificate):
    """The headers of our gateway after mutual TLS: the client's certificate and the secret that vouches for it."""
    with open(certificate) as handle:
        escaped = urllib.parse.quote(handle.read(), safe="")
    return {"X-SSL-Client-Cert": escaped, "X-Gateway-Secret": read(os.path.join(DATA, "secrets/gateway"))}


def nhs(name):
    return {"Authorization": "Bearer " + os.environ.get(f"CWA_NHS_{name}_KEY", "")}


_lock = threading.Lock()
_tokens = {}


def service_token(caller, audience):
    """A service token of CALLER for AUDIENCE, made again after 30 s (they are valid 60 s)."""
    with _lock:
        made, token = _tokens.get((caller, audience), (0, ""))
        if time.monotonic() - made > 30:
            token = subprocess.run([DEV_JWT, "service", caller, audience], check=True, capture_output=True,
                                   text=True, env=dict(os.environ, EN_DATA_DIR=DATA)).stdout.strip()
            _tokens[(caller, audience)] = (time.monotonic(), token)
        return token


def teletan_bearer():
    return subprocess.run([DEV_JWT, "token", "c19hotline", "c19hotline_event"], check=True, capture_output=True,
                          text=True, env=dict(os.environ, EN_DATA_DIR=DATA)).stdout.strip()


def headers_for(path):
    """The credentials of one route of the document being fuzzed."""
    if DOCUMENT == "test-result":
        if path.startswith("/api/v1/"):
            return gateway_headers(os.environ["CWA_LAB_CERT"])
        if path.startswith("/upload/"):
            return nhs("LAB")
    elif DOCUMENT == "test-result-internal":
        if path.startswith("/api/"):
            return {"X-CWA-Service-Token": service_token("verification", "test-result-service")}
    elif DOCUMENT == "verification":
        if path.startswith("/isolation-payment/ipc-token/") and path.endswith("-token"):
            return nhs("IPC")
        if path.startswith(("/virology-test/", "/isolation-payment/", "/circuit-breaker/")):
            return nhs("MOBILE")
    elif DOCUMENT == "verification-internal":
        if path == "/version/v1/tan/teletan":
            return {"X-CWA-Service-Token": service_token("portal", "verification-service"),
                    "Authorization": "Bearer " + teletan_bearer()}
        if path.startswith("/version/v1/nhs/circuit-breakers/"):
            return {"X-CWA-Service-Token": service_token("portal", "verification-service")}
        if path.startswith("/version/"):
            # tan/verify and the NHS submission token are submission-service's; testresult is dcc-server's, which
            # a loopback fleet does not configure, so submission-service's token meets its 403.
            return {"X-CWA-Service-Token": service_token("submission", "verification-service")}
    elif DOCUMENT in ("submission", "data-donation"):
        if path.startswith("/submission/"):
            return nhs("MOBILE")
    elif DOCUMENT == "data-donation-internal":
        if path.startswith("/version/"):
            # srs is submission-service's; otp and els belong to survey and error-log services that a loopback
            # fleet does not configure, so submission-service's token meets their 403.
            return {"X-CWA-Service-Token": service_token("submission", "data-donation-service")}
    elif DOCUMENT == "distribution-internal":
        if path.startswith("/version/"):
            return {"X-CWA-Service-Token": service_token("portal", "distribution-service")}
    elif DOCUMENT == "federation":
        if path == "/version/v1/callback":
            return gateway_headers(os.path.join(os.environ.get("EN_FEDERATION_DIR", os.path.join(DATA, "federation")),
                                                "efgs-callback.pem"))
    return {}


# Answers by status, requests without one, and the operations that got requests, written to FUZZ_COUNTS at the end
# (and every 500 requests, in case the run is cut short).
_counts = {"answers": collections.Counter(), "network_errors": 0, "operations": set(), "requests": 0}


def _dump():
    with open(os.environ["FUZZ_COUNTS"], "w") as handle:
        json.dump({"answers": _counts["answers"], "network_errors": _counts["network_errors"],
                   "operations": sorted(_counts["operations"]), "requests": _counts["requests"]}, handle)


def _count(case, status):
    with _lock:
        _counts["requests"] += 1
        _counts["operations"].add(case.operation.label)
        if status is None:
            _counts["network_errors"] += 1
        else:
            _counts["answers"][status] += 1
        if _counts["requests"] % 500 == 0:
            _dump()


@schemathesis.hook
def after_call(context, case, response):
    _count(case, response.status_code)


@schemathesis.hook
def after_network_error(context, case, request):
    _count(case, None)


atexit.register(_dump)

PORTAL_HOST = urllib.parse.urlsplit(os.environ.get("CWA_PORTAL_URL", "")).netloc


@schemathesis.auth(refresh_interval=None)
class RouteCredentials:
    def get(self, case, context):
        headers = headers_for(case.operation.path)
        if DOCUMENT == "portal":
            headers["Host"] = PORTAL_HOST
            if case.operation.path == "/upload/identified-risk-venues":
                headers.update(nhs("VENUES"))
            elif case.operation.path == "/upload/high-risk-postal-districts":
                headers.update(nhs("DISTRICTS"))
        return headers

    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), **data}
PY

# summarize NAME FOLDER…: one line from the runs' JSON reports and the answers the hooks counted; exits 1 on a
# failure, an error, a request without an answer or a run that did not finish.
summarize() {
  python3 - "$@" <<'PY'
import collections, json, os, sys
name, folders = sys.argv[1], sys.argv[2:]
first, last = None, 0.0
answers, titles, error_titles = collections.Counter(), collections.Counter(), collections.Counter()
operations, failing = set(), collections.defaultdict(set)
requests = unanswered = generated = 0
broken = []
for folder in folders:
    path = os.path.join(folder, "report.json")
    if not os.path.exists(path):
        status_file = os.path.join(folder, "status")
        status = open(status_file).read().strip() if os.path.exists(status_file) else "?"
        timed_out = ", timed out" if status == "124" else ""
        broken.append(f"{os.path.basename(folder)}: no report (exit {status}{timed_out})")
        continue
    report = json.load(open(path))
    if not report["complete"]:
        broken.append(f"{os.path.basename(folder)}: incomplete ({report['stop_reason']})")
    generated += report["test_cases"]["generated"]
    for failure in report["failures"]:
        titles[failure["title"]] += failure["count"]
        failing[failure["title"]].update(failure["operations"])
    for error in report["errors"]:
        error_titles[error["title"]] += error["count"]
    if not os.path.exists(os.path.join(folder, "counts.json")):
        broken.append(f"{os.path.basename(folder)}: no counts")
        continue
    counts = json.load(open(os.path.join(folder, "counts.json")))
    operations.update(counts["operations"])
    requests += counts["requests"]
    unanswered += counts["network_errors"]
    answers.update({int(code): count for code, count in counts["answers"].items()})
    begun = float(open(os.path.join(folder, "started")).read())
    first = begun if first is None else min(first, begun)
    last = max(last, os.path.getmtime(os.path.join(folder, "status")))
seconds = last - first if first is not None else 0.0
failures, errors = sum(titles.values()), sum(error_titles.values())
ok = not broken and failures == 0 and errors == 0 and unanswered == 0
kinds = "; ".join(f"{title} ×{count} ({', '.join(sorted(failing[title]))})" for title, count in titles.items())
statuses = " ".join(f"{code}×{count}" for code, count in sorted(answers.items()))
print(f"{'ok  ' if ok else 'FAIL'}  {name}: {len(operations)} operations, {generated} examples, {requests} requests in "
      f"{seconds:.0f} s ({requests / max(seconds, 0.001):.0f}/s); answers {statuses or 'none'}"
      f"{f', no answer ×{unanswered}' if unanswered else ''}; failures {failures}{f': {kinds}' if kinds else ''}; "
      f"errors {errors}{': ' + ', '.join(f'{t} ×{c}' for t, c in error_titles.items()) if errors else ''}"
      f"{'; ' + '; '.join(broken) if broken else ''}")
sys.exit(0 if ok else 1)
PY
}

# run_schemathesis FOLDER DOCUMENT-NAME FILE URL EXAMPLES SEED PHASES [OPTION…]: one Schemathesis run; its output,
# reports and exit status go to FOLDER.
run_schemathesis() {
  local folder="$1" name="$2" file="$3" url="$4" count="$5" run_seed="$6" phases="$7" status=0 pid
  shift 7
  mkdir -p "$folder"
  echo "$EPOCHREALTIME" >"$folder/started"
  FUZZ_ROOT="$root" FUZZ_DATA="$data" FUZZ_DOCUMENT="$name" FUZZ_COUNTS="$folder/counts.json" PYTHONPATH="$work" \
    SCHEMATHESIS_HOOKS=fuzz_hooks \
    timeout --kill-after=10 "$timeout_seconds" "$venv/bin/schemathesis" --config-file "$work/schemathesis.toml" \
    run "$root/$file" --url "$url" "$@" \
    --phases "$phases" --mode all --max-examples "$count" --seed "$run_seed" \
    --generation-database none --workers "$workers" --no-shrink \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --max-response-time "$max_response_time" --request-timeout 10 --request-retries 0 \
    --suppress-health-check all --continue-on-failure --no-color --output-truncate false \
    --report "json${record:+,ndjson}" --report-json-path "$folder/report.json" \
    ${record:+--report-ndjson-path "$folder/events.ndjson"} \
    >"$folder/output.txt" 2>&1 &
  pid=$!
  # timeout runs in a process group of its own, out of reach of a Ctrl-C: this run and the exit trap stop it by its id.
  echo "$pid" >"$work/pids/${folder//\//_}"
  trap 'kill -TERM "$pid" 2>/dev/null; exit 130' INT TERM
  wait "$pid" || status=$?
  rm -f "$work/pids/${folder//\//_}"
  echo "$status" >"$folder/status"
}

# The runs: per document one of all its operations but the slow ones, and each slow operation in $slow_shards shards
# of examples/shards examples with seeds of their own (the first shard also runs the examples and coverage phases). A
# run is `document|folder|file|url|examples|seed|phases|options|heavy or light`; light runs mostly wait (for a slow
# answer) and do not count against FUZZ_PARALLEL.
runs=()
for entry in "${selected[@]}"; do
  IFS='|' read -r name file url filter <<<"$entry"
  if [ "$name" = federation ] && { [ -z "$url" ] || ! http_answers -m 2 "$url/health/live"; }; then
    mkdir -p "$out/$name"
    echo "skip  $name: federation-service is not running at ${url:-EN_FEDERATION_URL (unset)}" >"$out/$name/line"
    continue
  fi
  [ "$filter" = - ] && filter=""
  slow=()
  for operation in $slow_operations; do [ "${operation%%=*}" = "$name" ] && slow+=("${operation#*=}"); done
  options="$filter"
  for path in "${slow[@]}"; do options+=" --exclude-path $path"; done
  runs+=("$name|$out/$name/main|$file|$url|$examples|$seed|examples,coverage,fuzzing|$options|heavy")
  for path in "${slow[@]}"; do
    for shard in $(seq 1 "$slow_shards"); do
      phases=fuzzing
      [ "$shard" = 1 ] && phases=examples,coverage,fuzzing
      share=$(( (examples + slow_shards - 1) / slow_shards )) folder="$out/$name/${path//\//_}-$shard"
      runs+=("$name|$folder|$file|$url|$share|$((seed + shard))|$phases|--include-path $path|light")
    done
  done
done

started=$(date +%s)
say "Schemathesis $schemathesis_version, $examples examples per operation, seed $seed, ${#selected[@]} documents" \
  "in ${#runs[@]} runs, reports in $out"
heavy=()
for run in "${runs[@]}"; do
  IFS='|' read -r name folder file url count run_seed phases options weight <<<"$run"
  # shellcheck disable=SC2086 # the options are words
  run_schemathesis "$folder" "$name" "$file" "$url" "$count" "$run_seed" "$phases" $options &
  [ "$weight" = heavy ] || continue
  heavy+=($!)
  while [ "${#heavy[@]}" -ge "$parallel" ]; do
    wait -n "${heavy[@]}"
    still=()
    for pid in "${heavy[@]}"; do kill -0 "$pid" 2>/dev/null && still+=("$pid"); done
    heavy=("${still[@]}")
  done
done
wait
failed=0 total=0 counted=()
for entry in "${selected[@]}"; do
  name="${entry%%|*}"
  total=$((total + 1))
  counted+=("$out/$name")
  if [ ! -f "$out/$name/line" ]; then
    folders=()
    for run in "${runs[@]}"; do
      [ "${run%%|*}" = "$name" ] && { IFS='|' read -r _ folder _ <<<"$run"; folders+=("$folder"); }
    done
    summarize "$name" "${folders[@]}" >"$out/$name/line"
  fi
  line="$(cat "$out/$name/line")"
  printf '%s\n' "$line"
  case "$line" in FAIL*) failed=$((failed + 1)) ;; esac
done
requests="$(python3 -c 'import glob, json, sys
print(sum(json.load(open(f))["requests"] for folder in sys.argv[1:] for f in glob.glob(folder + "/*/counts.json")))' \
  "${counted[@]}")"
seconds=$(( $(date +%s) - started ))
rate=$(( requests / (seconds > 0 ? seconds : 1) ))
say "$total documents, $failed failed; $requests requests in $seconds s ($rate/s); reports in $out"
[ "$failed" -eq 0 ]
