#!/usr/bin/env bash
# make bench-peak: the worst day, measured. In a throw-away database on the local cluster, a day six days ago holds
# BENCH_PEAK_KEYS (1,500,000: four times CWA's peak of 358,105 on 2022-02-08) keys of this country, BENCH_PEAK_HOUR
# (700,000) of them in one hour, and BENCH_PEAK_FOREIGN (1,000,000) federated keys of other countries, so the EUR
# package holds 2.5 M keys. One `distribution-service run` publishes them into an empty directory (release build, no
# audit inside the run), timed with GNU time for its wall time and peak memory; then `distribution-service audit`
# reads the tree back and must find 0 keys missing. In the same run, a plain `COPY (SELECT … the columns the run
# reads …) TO STDOUT (FORMAT binary)` of the same rows is timed, the floor of reading them, and the run's wall time is
# printed as a multiple of it. Every archive stays within MAX_KEYS_PER_BUNDLE (600,000): the day and the hour over it
# are published with their other keys in the next hours and days.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
config="${CONFIG:-release}"
distribution="$root/.build/$config/distribution-service"
submission="$root/.build/$config/submission-service"
total="${BENCH_PEAK_KEYS:-1500000}" peak_hour="${BENCH_PEAK_HOUR:-700000}" foreign="${BENCH_PEAK_FOREIGN:-1000000}"

for b in "$distribution" "$submission"; do [ -x "$b" ] || fail "$b missing (make bench-peak builds it)"; done
[ "$peak_hour" -le "$total" ] || fail "BENCH_PEAK_HOUR must not exceed BENCH_PEAK_KEYS"
[ -x /usr/bin/time ] || install_packages time

bench_keys_database en_bench_peak "$submission"

# The day six days ago (hours since the epoch): its hour 10 takes the peak, the other 23 hours share the rest; the
# federated keys spread over the whole day. Every key expired a day before its submission, so the expiry policy holds
# none back, and has TRL 3–8. The federated keys name only their own country as visited: they are in EUR, not in DE.
day_start=$(( ($(date +%s) / 86400 - 6) * 24 ))
started_load=$(date +%s)
psql -q -d "$database" <<SQL
INSERT INTO diagnosis_key (key_data, submission_type, rolling_start_interval_number, rolling_period, submission_timestamp,
                           transmission_risk_level, origin_country, visited_countries, report_type,
                           days_since_onset_of_symptoms, consent_to_federation)
SELECT decode(md5(random()::text || i::text), 'hex'), 'SUBMISSION_TYPE_PCR_TEST', ((h - 48) / 24) * 144, 144, h,
       3 + i % 6, origin, ARRAY[origin], 'CONFIRMED_TEST', 0, false
  FROM (SELECT i, 'DE' AS origin,
               CASE WHEN i <= $peak_hour THEN $day_start + 10
                    ELSE $day_start + ((i % 23) + CASE WHEN i % 23 >= 10 THEN 1 ELSE 0 END) END AS h
          FROM generate_series(1, $total) AS i
        UNION ALL
        SELECT i, (ARRAY['FR','IT','NL','BE','AT','PL','DK','IE'])[1 + i % 8], $day_start + (i % 24)
          FROM generate_series($total + 1, $total + $foreign) AS i) AS s;
ANALYZE diagnosis_key;
SQL
rows="$(psql -X -q -t -A -d "$database" -c "SELECT count(*) FROM diagnosis_key")"
echo "== the worst day: $rows keys loaded in $(( $(date +%s) - started_load )) s ($total of this country, $peak_hour in one hour; $foreign federated)"

# The floor: the rows the run reads, copied out once in PostgreSQL's binary format.
copy_seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  psql -X -q -d "$database" -c "COPY (SELECT key_data, rolling_start_interval_number, rolling_period, transmission_risk_level,
      submission_timestamp, origin_country, visited_countries FROM diagnosis_key) TO STDOUT (FORMAT binary)" >/dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
copy_seconds >/dev/null   # warm the cache as the run will find it
copy="$(copy_seconds)"

export SIGNING_KEY_FILES="$work/signing.pem" CDN_DIRECTORY="$work/cdn"
/usr/bin/time -f "%e %M" -o "$work/time" env AUDIT_AFTER_RUN=false "$distribution" run >"$work/log" 2>&1 \
  || { cat "$work/log"; exit 1; }
read -r seconds rss_kb <"$work/time"
files=$(find "$work/cdn" -type f | wc -l)
bytes=$(du -sb "$work/cdn" | cut -f1)
awk -v n="$rows" -v s="$seconds" -v r="$rss_kb" -v f="$files" -v b="$bytes" -v c="$copy" 'BEGIN {
  printf "run: %d keys in %.2f s (%.0f keys/s), peak RSS %.0f MB; tree %d files, %.1f MB\n", n, s, n / s, r / 1024, f, b / 1048576
  printf "COPY of the same rows: %.2f s; the run is %.2fx COPY\n", c, s / c }'
grep -E 'Retention applied|Keys read|Keys moved|Tree planned|Archives signed|Distribution run completed' "$work/log" | sed 's/^/   /'

# Every archive within the cap, and the audit of the tree.
python3 - "$work/cdn" <<'PY'
import os, struct, sys

def varint(data, i):
    value = shift = 0
    while True:
        byte = data[i]; i += 1
        value |= (byte & 0x7F) << shift; shift += 7
        if byte < 0x80:
            return value, i

def keys(export):
    """The number of keys (field 7) of a TemporaryExposureKeyExport."""
    i, count = 0, 0
    while i < len(export):
        tag, i = varint(export, i)
        kind = tag & 7
        if kind == 0:
            _, i = varint(export, i)
        elif kind == 1:
            i += 8
        elif kind == 5:
            i += 4
        elif kind == 2:
            length, i = varint(export, i)
            count += (tag >> 3) == 7
            i += length
        else:
            raise ValueError("bad wire type")
    return count

largest, archives = 0, 0
for folder, _, names in os.walk(sys.argv[1]):
    for name in names:
        data = open(os.path.join(folder, name), "rb").read()
        if data[:4] != b"PK\x03\x04":
            continue
        # The first entry is export.bin, stored: 16 bytes of header, then the export.
        size = struct.unpack("<I", data[18:22])[0]
        start = 30 + struct.unpack("<H", data[26:28])[0] + struct.unpack("<H", data[28:30])[0]
        if data[start:start + 16] != b"EK Export v1    ":
            continue
        archives += 1
        largest = max(largest, keys(data[start + 16:start + size]))
print(f"key archives: {archives}; the largest holds {largest} keys")
PY
/usr/bin/time -f "%e %M" -o "$work/audit-time" "$distribution" audit >"$work/audit" 2>"$work/audit-log" || true
read -r audit_seconds audit_rss <"$work/audit-time"
sed 's/^/   /' "$work/audit"
awk -v s="$audit_seconds" -v r="$audit_rss" 'BEGIN { printf "audit: %.2f s, peak RSS %.0f MB\n", s, r / 1024 }'
grep -q '^audit: 0 missing$' "$work/audit" || { cat "$work/audit-log"; fail "the audit found keys missing"; }
