#!/usr/bin/env bash
# Renders gateway.conf.template: replaces every ${GATEWAY_*} with the environment's value and leaves nginx's own
# $variables alone, like the envsubst step of the official nginx image does in the containers. Fails, naming them,
# when placeholders have no value.
#
#   GATEWAY_APP_PORT=8443 … deploy/gateway/render.sh > gateway.conf
set -euo pipefail
template="${1:-$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/gateway.conf.template}"
# The secret is written into a quoted header value: letters, digits, '_' and '-' only, so it can neither end the
# string nor be read as an nginx variable.
if [ -n "${GATEWAY_SECRET:-}" ] && ! [[ $GATEWAY_SECRET =~ ^[A-Za-z0-9_-]{32,}$ ]]; then
  echo "render.sh: GATEWAY_SECRET must be 32 or more letters, digits, '_' or '-'" >&2
  exit 1
fi
exec perl -e '
  local $/; my $text = <STDIN>; my %missing;
  $text =~ s/\$\{(GATEWAY_[A-Z0-9_]+)\}/exists $ENV{$1} && length $ENV{$1} ? $ENV{$1} : do { $missing{$1} = 1; "" }/ge;
  if (%missing) { print STDERR "render.sh: no value for " . join(", ", sort keys %missing) . "\n"; exit 1 }
  print $text;
' <"$template"
