#!/usr/bin/env bash
# Times full distribution runs over synthetic keys in a throw-away database on the local cluster:
# for each size in BENCH_KEYS (default "100000 1400000"), loads that many keys spread over the last 10 days
# (TRL 3–8, every key past the expiry policy, all from DE), runs `distribution-service run` once into an empty
# directory, and prints keys/s, wall time and peak RSS (from /usr/bin/time), then the run's own phase log.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
distribution="$root/.build/release/distribution-service"
submission="$root/.build/release/submission-service"
sizes="${BENCH_KEYS:-100000 1400000}"

for b in "$distribution" "$submission"; do [ -x "$b" ] || fail "$b missing (make bench-distribution builds it)"; done
# /usr/bin/time measures the peak RSS.
[ -x /usr/bin/time ] || install_packages time

bench_keys_database en_bench_distribution "$submission"

for n in $sizes; do
  psql -q -d "$database" -c "TRUNCATE diagnosis_key CASCADE"
  insert_synthetic_keys "$database" "$n"
  rm -rf "$work/cdn"
  echo "== $n keys"
  /usr/bin/time -f "%e %M" -o "$work/time" env SIGNING_KEY_FILES="$work/signing.pem" CDN_DIRECTORY="$work/cdn" \
    "$distribution" run >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
  read -r seconds rss_kb <"$work/time"
  files=$(find "$work/cdn" -type f | wc -l)
  bytes=$(du -sb "$work/cdn" | cut -f1)
  awk -v n="$n" -v s="$seconds" -v r="$rss_kb" -v f="$files" -v b="$bytes" 'BEGIN {
    printf "keys %d  wall %.2f s  %.0f keys/s  peak RSS %.0f MB  files %d  tree %.1f MB\n", n, s, n / s, r / 1024, f, b / 1048576 }'
  grep -E 'Retention applied|Keys read|Tree planned|Archives signed|Audit|Distribution run completed' "$work/log" | sed 's/^/   /'
done
