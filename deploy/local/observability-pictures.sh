#!/usr/bin/env bash
# make observability-pictures: the pictures of deploy/README.md's "Observability" section, from a real fleet under
# load. A fleet as make run starts it (deploy/local/run.sh, with the gateway and its Prometheus scraping every 5 s) in
# .data/pictures with its own PostgreSQL cluster on port 54459 (PICTURES_PG_PORT) and every port moved by 800
# (PICTURES_PORT_OFFSET); distribution-service publishes every minute (threshold 1, the current hour included) so that
# the publication latency has figures. `cwa load` sends submissions, dummy submissions and result polls through the
# gateway for PICTURES_LOAD_SECONDS (120); then headless Chromium (Debian's chromium and chromium-driver, Selenium in
# .data/browser-venv, as make test-browser installs them) captures Prometheus's own graph page of the key panels'
# queries into deploy/observability/pictures/. The fleet is stopped at the end.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
lib_name=pictures
venv="$root/.data/browser-venv"
export EN_DATA_DIR="$root/.data/pictures" EN_PG_PORT="${PICTURES_PG_PORT:-54459}" EN_PORT_OFFSET="${PICTURES_PORT_OFFSET:-800}"
export CONFIG="${CONFIG:-debug}" LOG_LEVEL=warning EN_PROMETHEUS=on EN_PROMETHEUS_INTERVAL=5s EN_FEDERATION=off
export DISTRIBUTION_INTERVAL=60s SHIFTING_POLICY_THRESHOLD=1 INCLUDE_INCOMPLETE_HOURS=true
unset EN_SERVICES EN_GATEWAY
seconds="${PICTURES_LOAD_SECONDS:-120}"
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -lt 30 ] || [ "$seconds" -gt 3600 ]; then
  fail "PICTURES_LOAD_SECONDS must be 30…3600"
fi
run="$root/deploy/local/run.sh"
cwa="$root/.build/$CONFIG/cwa"
out="$root/deploy/observability/pictures"
[ -x "$cwa" ] || fail "$cwa is missing (make observability-pictures builds it)"
if ! [ -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import selenium' 2>/dev/null; then
  fail "Selenium is missing in $venv: make test-browser installs it"
fi
need_commands chromium chromedriver

"$run" stop >/dev/null 2>&1 || true
rm -rf "$EN_DATA_DIR"
mkdir -p "$EN_DATA_DIR" "$out"
trap '"$run" stop >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM
say "starting the fleet (data in $EN_DATA_DIR, ports +$EN_PORT_OFFSET)"
fleet_up "$run" "$EN_DATA_DIR/up.log"
eval "$("$run" env)"

say "load for $seconds s: submissions, dummy submissions and result polls through the gateway"
"$cwa" load submissions --rate 5 --duration "$seconds" >"$EN_DATA_DIR/load-submissions.log" 2>&1 &
"$cwa" load fake --rate 20 --duration "$seconds" >"$EN_DATA_DIR/load-fake.log" 2>&1 &
"$cwa" load polls --rate 50 --duration "$seconds" >"$EN_DATA_DIR/load-polls.log" 2>&1 &
wait
# One more distribution run and scrape after the last submissions.
sleep 70

say "capturing Prometheus's graph page into $out"
"$venv/bin/python" - "$EN_PROMETHEUS_URL" "$out" "$seconds" <<'PY'
import sys, time, urllib.parse
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

base, out, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
window = f"{max(5, (seconds + 180) // 60)}m"
# file name → the key panel's query (as the dashboards have it, with a fixed range instead of Grafana's variables)
queries = {
    "request-rate": 'sum by (service) (rate(http_server_requests_total{job="en-services", route!~"/health/.*|/metrics"}[1m]))',
    "latency-p99": 'histogram_quantile(0.99, sum by (service, le) (rate(http_server_request_duration_seconds_bucket{job="en-services", route!~"/health/.*|/metrics"}[1m])))',
    "fake-and-real-submissions": 'sum by (kind) (rate(en_submission_requests_total{job="en-services"}[1m]))',
    "publication-latency": 'histogram_quantile(0.99, sum by (le) (rate(en_distribution_publication_latency_seconds_bucket{embargo="none"}[5m])))',
    "readiness-and-pool": 'en_service_ready{job="en-services"} or en_db_pool_connections_in_use{job="en-services"}',
}
options = webdriver.ChromeOptions()
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1300"):
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    for name, query in queries.items():
        url = base + "/graph?" + urllib.parse.urlencode(
            {"g0.expr": query, "g0.tab": "0", "g0.range_input": window, "g0.stacked": "0"})
        driver.get(url)
        WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "canvas, .graph-legend, .legend"))
        time.sleep(3)
        path = f"{out}/{name}.png"
        driver.save_screenshot(path)
        print(f"pictures: {path}")
finally:
    driver.quit()
PY
say "done"
