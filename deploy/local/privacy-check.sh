#!/usr/bin/env bash
# make privacy-check: can an observer of the traffic tell a dummy submission from a real one? Boots a fleet as make
# run does (its own PostgreSQL cluster in .data/privacy on port 54319, every port moved by 400, release binaries by
# default), then runs `cwa privacy-check --requests N` RUNS times through the gateway: N real and N dummy submissions,
# shuffled, one at a time; each run compares the answers' sizes and the latencies (two-sample Kolmogorov–Smirnov).
# A warm-up run of 100 + 100 comes first and is not counted.
#
#   PRIVACY_RUNS (10), PRIVACY_REQUESTS (500), PRIVACY_TARGET (8): the runs, the submissions of each kind per run, and
#   how many runs must find the latencies not distinguishable (p > 0.05). CONFIG (release) chooses the binaries.
#
# Prints each run's summary and `privacy-check: K of RUNS runs not distinguishable (p > 0.05)`, then every run pooled
# (`cwa privacy-pool`: one Kolmogorov–Smirnov test of all latencies, and a logistic-regression classifier of each
# latency against the 48 before it, 10-fold cross-validated); exits 1 when K is below the target, when the pooled test
# or the classifier tells dummies apart (p ≤ 0.05), or when a run found different answer sizes or statuses. Each run's
# samples are in .data/privacy/run-N.csv.
# The fleet is stopped at the end; its logs stay in
# .data/privacy/logs until the next run.
set -uo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
export EN_DATA_DIR="$root/.data/privacy" EN_PG_PORT="${PRIVACY_PG_PORT:-54319}" EN_PORT_OFFSET="${PRIVACY_PORT_OFFSET:-400}"
export CONFIG="${CONFIG:-release}" LOG_LEVEL="${LOG_LEVEL:-warning}"
unset EN_SERVICES EN_GATEWAY   # the whole fleet, with the gateway: the timing an observer of the phones sees
export EN_PROMETHEUS=off   # no scrapes beside the timed requests
runs="${PRIVACY_RUNS:-10}"
requests="${PRIVACY_REQUESTS:-500}"
target="${PRIVACY_TARGET:-8}"
run="$root/deploy/local/run.sh"
cwa="$root/.build/$CONFIG/cwa"
lib_name=privacy-check

for value in "$runs" "$requests" "$target"; do
  if ! [[ $value =~ ^[0-9]+$ ]] || [ "$value" -lt 1 ]; then
    fail "PRIVACY_RUNS, PRIVACY_REQUESTS and PRIVACY_TARGET are positive integers"
  fi
done
[ "$target" -le "$runs" ] || fail "PRIVACY_TARGET ($target) is more than PRIVACY_RUNS ($runs)"
[ -x "$cwa" ] || fail "$cwa missing (make privacy-check builds it)"

"$run" stop >/dev/null 2>&1 || true
mkdir -p "$EN_DATA_DIR"
trap '"$run" stop >/dev/null 2>&1 || true' EXIT
fleet_up "$run" "$EN_DATA_DIR/up.log"

# A warm-up run, not counted: a fresh fleet's first dummies have no real durations to replay yet (they wait around
# FAKE_DELAY_INITIAL until FakeDelay.replayThreshold real submissions were measured), and its caches are cold.
"$cwa" privacy-check --requests 100 >"$EN_DATA_DIR/warm-up.txt" 2>&1 || { tail -n 5 "$EN_DATA_DIR/warm-up.txt" >&2; fail "the warm-up run failed"; }
indistinguishable=0
broken=0
for i in $(seq 1 "$runs"); do
  out="$EN_DATA_DIR/run-$i.txt"
  "$cwa" privacy-check --requests "$requests" --samples "$EN_DATA_DIR/run-$i.csv" >"$out" 2>"$EN_DATA_DIR/run-$i.progress"
  status=$?
  p="$(sed -n 's/.*Kolmogorov–Smirnov: D = [0-9.]*, p = \([0-9.]*\).*/\1/p' "$out")"
  printf 'run %d of %d (exit %d):\n' "$i" "$runs" "$status"
  sed -n 's/^  /  /p' "$out"
  if [ "$status" -ne 0 ] || [ -z "$p" ]; then
    broken=$((broken + 1))
    tail -n 5 "$EN_DATA_DIR/run-$i.progress" | sed 's/^/  /'
  elif awk -v p="$p" 'BEGIN { exit !(p > 0.05) }'; then
    indistinguishable=$((indistinguishable + 1))
  fi
done

echo "privacy-check: $indistinguishable of $runs runs not distinguishable (p > 0.05); target $target"
[ "$broken" -eq 0 ] || fail "$broken runs failed or found different answers"
# Every run together, as an observer who watched them all: the pooled test, and a classifier of each latency against
# the 48 before it, cross-validated.
pooled=0
"$cwa" privacy-pool "$EN_DATA_DIR"/run-*.csv || pooled=$?
[ "$indistinguishable" -ge "$target" ] || exit 1
[ "$pooled" -eq 0 ] || exit 1
