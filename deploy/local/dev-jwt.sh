#!/usr/bin/env bash
# Development bearer tokens for teleTAN creation: the stand-in for the portal's identity provider on loopback.
#
#   deploy/local/dev-jwt.sh keys           create .data/keys/teletan-jwt.{key,pub.pem} if missing, print the
#                                          public key's path
#   deploy/local/dev-jwt.sh token [ROLE…]  print an RS256 JWT, valid 5 minutes, with these realm roles
#                                          (default c19hotline), iss dev-identity-provider, aud
#                                          verification-service and a random jti (one teleTAN per token)
#   deploy/local/dev-jwt.sh service CALLER AUDIENCE
#                                          print a service token (X-CWA-Service-Token), valid 60 seconds, signed
#                                          with make run's key of CALLER (submission, portal or verification) for
#                                          AUDIENCE (verification-service or test-result-service)
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

# An ES256 service token as make run's services sign them: iss <CALLER>-service, aud AUDIENCE, iat now, exp in 60 s.
service_token() {
  [ $# -eq 2 ] || fail "usage: dev-jwt.sh service CALLER AUDIENCE"
  local caller="$1" audience="$2" key now header payload input der r s
  case "$caller" in submission|portal|verification) ;; *) fail "CALLER is submission, portal or verification" ;; esac
  case "$audience" in *[!a-z-]*|"") fail "AUDIENCE is a service name such as verification-service" ;; esac
  key="$keys/service-token-$caller.pem"
  [ -s "$key" ] || fail "$key is missing: make run creates it"
  now="$(date +%s)"
  header="$(printf '{"alg":"ES256","typ":"cwa-service+jwt"}' | b64url)"
  payload="$(printf '{"aud":"%s","exp":%d,"iat":%d,"iss":"%s-service"}' "$audience" "$((now + 60))" "$now" "$caller" | b64url)"
  input="$header.$payload"
  der="$(mktemp)"
  printf '%s' "$input" | openssl dgst -sha256 -sign "$key" -binary >"$der"
  # JWS wants r ‖ s, 32 bytes each (RFC 7518 §3.4); openssl writes a DER sequence of two integers.
  { read -r r; read -r s; } < <(openssl asn1parse -inform DER -in "$der" | sed -n 's/.*INTEGER *://p')
  rm -f "$der"
  # asn1parse drops leading zero bytes and adds one before a high bit: pad to 64 digits first, then keep the last 64.
  r="$(printf '%064s' "$r" | tr ' ' 0)"; r="${r: -64}"
  s="$(printf '%064s' "$s" | tr ' ' 0)"; s="${s: -64}"
  printf '%s.%s\n' "$input" "$(perl -e 'print pack("H*", $ARGV[0])' "$r$s" | b64url)"
}

case "${1:-}" in
  keys) ensure_keys; printf '%s\n' "$public" ;;
  token) shift; token "$@" ;;
  service) shift; service_token "$@" ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
