#!/usr/bin/env bash
# Drives portal-service in headless Chromium (make test-browser, and the last step of make test): creates an officer
# with the portal's CLI, then Tests/Browser/portal_flow.py logs in with password and TOTP, issues a TEST teleTAN,
# registers it at verification-service, sees the rate-limit page for a second one, previews a risky venues' CSV with a
# bad row as a venue officer, logs out and checks that the back button does not bring the teleTAN back. It prints how
# long the officer needed from the login page to the teleTAN.
#
# deploy/local/run.sh starts test-result-, verification- and portal-service from .build/debug (make test-browser builds
# them) without the gateway: a fresh fleet in .data/browser with its own PostgreSQL cluster on port 54349
# (BROWSER_PG_PORT) and every port moved by 200 (BROWSER_PORT_OFFSET), so it runs beside a development fleet and make
# e2e's. It is stopped at the end; its logs stay in .data/browser/logs until the next run. Screenshots of the result
# page and of the local-risk preview go to .build/test-artifacts/portal-teletan.png and portal-local-risk-preview.png.
# Chromium and its driver (Debian's packages) and Selenium (PyPI, in the venv .data/browser-venv) are installed when
# missing. Exits with the flow's status.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
data="${EN_DATA_DIR:-$root/.data}"
venv="$data/browser-venv"
export EN_DATA_DIR="$data/browser" EN_PG_PORT="${BROWSER_PG_PORT:-54349}" EN_PORT_OFFSET="${BROWSER_PORT_OFFSET:-200}"
export EN_SERVICES="test-result verification portal" EN_GATEWAY=off CONFIG=debug LOG_LEVEL=warning
run="$root/deploy/local/run.sh"
pg="$root/deploy/local/postgres.sh"
screenshot="$root/.build/test-artifacts/portal-teletan.png"
username=officer1

# Whether the venv has Selenium 4.10 or later.
selenium_ready() {
  "$venv/bin/python" - 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
sys.exit(0 if tuple(int(part) for part in version("selenium").split(".")[:2]) >= (4, 10) else 1)
PY
}

# Chromium and chromedriver (in /usr/bin, where the flow looks for them) and a venv with Selenium; quick when all are
# there already.
ensure_browser() {
  install_packages chromium chromium-driver
  selenium_ready && return 0
  # Debian's python3 creates venvs only with python3-venv (it brings ensurepip).
  python3 -c 'import venv, ensurepip' 2>/dev/null || install_packages python3-venv
  say "installing Selenium into $venv"
  rm -rf "$venv"
  mkdir -p "$data"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check 'selenium>=4.10'
  selenium_ready || fail "Selenium did not install into $venv"
}

started=$(date +%s)
ensure_browser
installed=$(date +%s)

# A fresh fleet every time: the officer, its teleTAN rate limit and the logs come from this run only.
"$run" stop >/dev/null 2>&1 || true
rm -rf "$EN_DATA_DIR"
mkdir -p "$EN_DATA_DIR"
trap '"$run" stop >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM
fleet_up "$run" "$EN_DATA_DIR/up.log"

# The officer, with both roles; the CLI prints only the otpauth:// URI on standard output.
password="$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')"
totp_uri="$(DATABASE_URL="$("$pg" url portal)" TOTP_KEY_FILE="$EN_DATA_DIR/keys/totp.keys" \
  && export DATABASE_URL TOTP_KEY_FILE && printf '%s\n' "$password" \
  | "$root/.build/debug/portal-service" user add "$username" c19hotline,c19hotline_event,venue_officer)" || fail "portal-service user add failed"
if [ "$(printf '%s\n' "$totp_uri" | wc -l)" != 1 ] || [[ $totp_uri != otpauth://totp/* ]]; then
  fail "portal-service user add printed something other than one otpauth://totp/ URI"
fi
say "services ready in $(( $(date +%s) - installed )) s (installation check $(( installed - started )) s); driving the portal"

# The password and the URI (it holds the TOTP secret) reach the flow through its environment, not its command line.
status=0
PORTAL_FLOW_PASSWORD="$password" PORTAL_FLOW_TOTP_URI="$totp_uri" SE_OFFLINE=true \
  "$venv/bin/python" "$root/Tests/Browser/portal_flow.py" --portal "$EN_PORTAL_URL" --verification "$EN_VERIFICATION_URL" \
    --username "$username" --check-event-form --screenshot "$screenshot" \
    --local-risk-screenshot "$root/.build/test-artifacts/portal-local-risk-preview.png" || status=$?
if [ "$status" -ne 0 ]; then
  for name in portal verification test-result; do
    if [ -s "$EN_DATA_DIR/logs/$name.log" ]; then say "last lines of $name's log:"; tail -n 20 "$EN_DATA_DIR/logs/$name.log" | sed 's/^/    /' >&2; fi
  done
  say "FAILED (exit $status)"
else
  say "passed in $(( $(date +%s) - started )) s"
fi
exit "$status"
