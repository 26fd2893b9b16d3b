#!/usr/bin/env bash
# Renders gateway.conf.template: replaces every ${GATEWAY_*} with the environment's value and leaves nginx's own
# $variables alone, like the envsubst step of the official nginx image does in the containers. Fails, naming them,
# when placeholders have no value.
#
#   GATEWAY_APP_PORT=8443 … deploy/gateway/render.sh > gateway.conf
#
# Defaults, where the environment has none:
#   GATEWAY_CLIENT_KEY      a new random key at every render (so at every `make run` start): the key of the per-client
#                           rate limits, which nothing else knows (the containers make theirs in client-key.envsh)
#   GATEWAY_CLIENT_KEY_JS   client-key.js next to this script
#   GATEWAY_SIGNED_FILES_JS signed-files.js next to this script
#   the per-client, registration and circuit-breaker budgets: the values of compose and Kubernetes (deploy/README.md, "The gateway")
set -euo pipefail
here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
template="${1:-$here/gateway.conf.template}"
: "${GATEWAY_CLIENT_KEY:=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}"
: "${GATEWAY_CLIENT_KEY_JS:=$here/client-key.js}"
: "${GATEWAY_SIGNED_FILES_JS:=$here/signed-files.js}"
: "${GATEWAY_APP_CLIENT_RATE:=10r/s}" "${GATEWAY_APP_CLIENT_BURST:=50}"
: "${GATEWAY_REGISTRATION_RATE:=2r/m}" "${GATEWAY_REGISTRATION_BURST:=5}"
: "${GATEWAY_PORTAL_CLIENT_RATE:=2r/s}" "${GATEWAY_PORTAL_CLIENT_BURST:=20}"
: "${GATEWAY_CIRCUIT_BREAKER_RATE:=1r/m}" "${GATEWAY_CIRCUIT_BREAKER_BURST:=5}"
export GATEWAY_CLIENT_KEY GATEWAY_CLIENT_KEY_JS GATEWAY_SIGNED_FILES_JS GATEWAY_APP_CLIENT_RATE GATEWAY_APP_CLIENT_BURST \
  GATEWAY_REGISTRATION_RATE GATEWAY_REGISTRATION_BURST GATEWAY_PORTAL_CLIENT_RATE GATEWAY_PORTAL_CLIENT_BURST \
  GATEWAY_CIRCUIT_BREAKER_RATE GATEWAY_CIRCUIT_BREAKER_BURST
# The secrets are written into quoted values: letters, digits, '_' and '-' only, so they can neither end the string
# nor be read as an nginx variable.
if [ -n "${GATEWAY_SECRET:-}" ] && ! [[ $GATEWAY_SECRET =~ ^[A-Za-z0-9_-]{32,}$ ]]; then
  echo "render.sh: GATEWAY_SECRET must be 32 or more letters, digits, '_' or '-'" >&2
  exit 1
fi
if ! [[ $GATEWAY_CLIENT_KEY =~ ^[A-Za-z0-9_-]{32,}$ ]]; then
  echo "render.sh: GATEWAY_CLIENT_KEY must be 32 or more letters, digits, '_' or '-'" >&2
  exit 1
fi
exec perl -e '
  local $/; my $text = <STDIN>; my %missing;
  $text =~ s/\$\{(GATEWAY_[A-Z0-9_]+)\}/exists $ENV{$1} && length $ENV{$1} ? $ENV{$1} : do { $missing{$1} = 1; "" }/ge;
  if (%missing) { print STDERR "render.sh: no value for " . join(", ", sort keys %missing) . "\n"; exit 1 }
  print $text;
' <"$template"
