#!/bin/bash
# The image's HEALTHCHECK: GET /health/live on the service's main port, with bash's /dev/tcp (no curl in the image).
# Exit 0 when the answer is 200. The port is HTTP_PORT, else the service's default.
set -uo pipefail
case "${EN_SERVICE:-}" in
  submission-service) default=8001 ;;
  verification-service) default=8002 ;;
  test-result-service) default=8003 ;;
  portal-service) default=8004 ;;
  distribution-service) default=8005 ;;
  federation-service) default=8006 ;;
  data-donation-service) default=8007 ;;
  efgs-gateway) default=8090 ;;
  *) echo "en-healthcheck: unknown EN_SERVICE '${EN_SERVICE:-}'" >&2; exit 1 ;;
esac
port="${HTTP_PORT:-$default}"
exec 3<>"/dev/tcp/127.0.0.1/${port}" || exit 1
printf 'GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
IFS= read -r -t 2 status <&3 || exit 1
[[ ${status} == "HTTP/1."[01]" 200"* ]]
