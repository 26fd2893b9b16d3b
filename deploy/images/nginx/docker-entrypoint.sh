#!/bin/bash
# The entrypoint of the local nginx stand-in (deploy/images/nginx/Containerfile).
set -euo pipefail

if [ "${1:-}" = nginx ]; then
  for script in /docker-entrypoint.d/*; do
    case "$script" in
      *.envsh) # shellcheck disable=SC1090
        . "$script" ;;
      *.sh) [ -x "$script" ] && "$script" ;;
      *) ;;
    esac
  done
  templates=/etc/nginx/templates
  output="${NGINX_ENVSUBST_OUTPUT_DIR:-/etc/nginx/conf.d}"
  filter="${NGINX_ENVSUBST_FILTER:-}"
  # The variables envsubst may replace: every defined one whose name matches the filter (all without one).
  names="$(compgen -e | grep -E -- "${filter:-.}" | sed 's/^/$/' | tr '\n' ' ' || true)"
  for template in "$templates"/*.template; do
    [ -e "$template" ] || continue
    name="$(basename "$template" .template)"
    envsubst "$names" <"$template" >"$output/$name"
  done
fi

exec "$@"
