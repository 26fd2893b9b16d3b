# shellcheck shell=bash disable=SC2154 # $work and $log are the caller's
# The checks of the end-to-end scripts and the drills (e2e.sh, e2e-federation.sh, drills.sh): one line per check, the counts, and the last lines
# of a failing check's output. Sourced; the caller sets $work (a temporary folder) and $log (where every check's
# output is kept) first.
passed=0
failed=0
pass() { passed=$((passed + 1)); printf '  ok    %s\n' "$1"; }
flunk() {
  failed=$((failed + 1)); printf '  FAIL  %s\n' "$1"
  [ -s "$work/out" ] && sed 's/^/          /' "$work/out" | tail -n 8
  return 0
}
# check DESCRIPTION COMMAND…: the command's exit status decides; its output is kept in $work/out.
check() {
  local description="$1"; shift
  if "$@" >"$work/out" 2>&1; then pass "$description"; else flunk "$description"; fi
  cat "$work/out" >>"$log"
}
# expect DESCRIPTION PATTERN COMMAND…: the command's output (stdout and stderr) must match the extended regex.
expect() {
  local description="$1" pattern="$2"; shift 2
  "$@" >"$work/out" 2>&1
  if grep -Eq -- "$pattern" "$work/out"; then pass "$description"; else flunk "$description"; fi
  cat "$work/out" >>"$log"
}
# absent PATTERNS FILE…: no file holds any of the patterns (one per line). grep's status 1 means "no match"; 0 (found)
# and 2 (a file missing or unreadable) both fail the check.
absent() {
  local patterns="$1"; shift
  [ -n "$patterns" ] || return 1
  printf '%s\n' "$patterns" | grep -v '^$' | grep -F -f - -- "$@"
  [ "${PIPESTATUS[2]}" = 1 ]
}
# dump_local DATABASE…: the data of each database of the loopback fleet's cluster ($EN_DATA_DIR, $EN_PG_PORT), on
# standard output.
dump_local() {
  local database
  for database in "$@"; do
    PGPASSWORD="$(cat "$EN_DATA_DIR/secrets/postgres")" "${EN_PG_BIN:-/usr/lib/postgresql/15/bin}/pg_dump" -h 127.0.0.1 \
      -p "$EN_PG_PORT" -U postgres --data-only "$database"
  done
}
