#!/usr/bin/env bash
# Development bearer tokens for teleTAN creation: the stand-in for the portal's identity provider on loopback.
#
#   deploy/local/dev-jwt.sh keys           create .data/keys/teletan-jwt.{key,pub.pem} if missing, print the
#                                          public key's path
#   deploy/local/dev-jwt.sh token [ROLE…]  print an RS256 JWT, valid 5 minutes, with these realm roles
#                                          (default c19hotline), iss dev-identity-provider, aud
#                                          verification-service and a random jti (one teleTAN per token)
#
# verification-service trusts the public key through TELETAN_JWT_PUBLIC_KEYS (make run sets it). Never use
# these keys outside a development machine.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
keys="${EN_DATA_DIR:-$root/.data}/keys"
private="$keys/teletan-jwt.key"
public="$keys/teletan-jwt.pub.pem"

need_commands openssl

ensure_keys() {
  [ -s "$private" ] && [ -s "$public" ] && return 0
  mkdir -p "$keys"
  chmod 700 "$keys"
  ( umask 077; openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$private" 2>/dev/null )
  openssl pkey -in "$private" -pubout -out "$public"
}

# base64url without padding, of stdin.
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

token() {
  ensure_keys
  local roles=("$@") now json_roles="" role
  [ ${#roles[@]} -gt 0 ] || roles=(c19hotline)
  for role in "${roles[@]}"; do
    case "$role" in *[!a-z0-9_]*) fail "role names are lower-case letters, digits and _" ;; esac
    json_roles+="${json_roles:+,}\"$role\""
  done
  now="$(date +%s)"
  local header payload input signature
  header="$(printf '{"alg":"RS256","typ":"JWT"}' | b64url)"
  local jti
  jti="$(openssl rand -hex 16)"
  payload="$(printf '{"sub":"dev-officer","iss":"dev-identity-provider","aud":"verification-service","jti":"%s","iat":%d,"exp":%d,"realm_access":{"roles":[%s]}}' \
    "$jti" "$now" "$((now + 300))" "$json_roles" | b64url)"
  input="$header.$payload"
  signature="$(printf '%s' "$input" | openssl dgst -sha256 -sign "$private" -binary | b64url)"
  printf '%s.%s\n' "$input" "$signature"
}

case "${1:-}" in
  keys) ensure_keys; printf '%s\n' "$public" ;;
  token) shift; token "$@" ;;
  *) sed -n '2,8p' "$0"; exit 2 ;;
esac
