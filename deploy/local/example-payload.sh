#!/usr/bin/env bash
# Prints a binary SubmissionPayload on stdout, for trying submission-service with curl, without the cwa client. The keys are random, one per day before today (UTC), with TRLs 1–8 in turn; consent to federation.
#
#   deploy/local/example-payload.sh [KEYS] [TYPE]
#     KEYS  number of keys (default 14)
#     TYPE  submission type (default SUBMISSION_TYPE_PCR_TEST; SUBMISSION_TYPE_RAPID_TEST for a rapid test)
#
# Needs protoc (`make protoc-tools` installs it); it encodes the text below with the .proto files of protos/.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
keys="${1:-14}"
type="${2:-SUBMISSION_TYPE_PCR_TEST}"
[[ $keys =~ ^[0-9]+$ ]] || { say "KEYS must be a number"; exit 2; }
command -v protoc >/dev/null || fail "protoc is required (make protoc-tools)"

# The first 10-minute interval of today (UTC): whole days since the epoch, 144 intervals each.
days=$(( $(date -u +%s) / 86400 ))
today=$(( days * 144 ))
octal() { head -c "$1" /dev/urandom | od -An -v -to1 | tr -s ' \n' ' ' | sed 's/ *$//; s/^ //; s/ /\\/g; s/^/\\/'; }
{
  for i in $(seq 1 "$keys"); do
    printf 'keys { key_data: "%s" transmission_risk_level: %d rolling_start_interval_number: %d rolling_period: 144 }\n' \
      "$(octal 16)" $(( (i - 1) % 8 + 1 )) $(( today - ((i - 1) % 14 + 1) * 144 ))
  done
  printf 'origin: "DE"\nvisitedCountries: "DE"\nconsentToFederation: true\nsubmissionType: %s\nrequestPadding: "%s"\n' "$type" "$(octal 64)"
} | protoc --proto_path="$root/protos" \
    --encode=app.coronawarn.server.common.protocols.internal.SubmissionPayload \
    app/coronawarn/server/common/protocols/internal/submission_payload.proto
