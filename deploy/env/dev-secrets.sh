#!/usr/bin/env bash
# Development secrets for deploy/compose.yaml and the local Kubernetes overlay. Never use them in production: there
# the keys come from your PKI and HSM/KMS, and the passwords from your secret store (the README, "Deploying", says which).
#
#   deploy/env/dev-secrets.sh [OUT]        OUT defaults to deploy/
#
# Writes, once (a second run keeps what exists, so passwords and keys stay valid):
#   OUT/.env                     compose's variables: passwords, GATEWAY_SECRET, LAB_CERT_SHA256_ALLOWLIST, EN_IMAGE_TAG
#   OUT/secrets/gateway.pem, gateway.key       the gateway's TLS certificate (localhost, 127.0.0.1, gateway) and key
#   OUT/secrets/ca.pem                         the CA that signed it (clients trust it: curl --cacert)
#   OUT/secrets/lab-ca.pem                     the CA of lab client certificates
#   OUT/secrets/lab-1.pem, lab-1.key           a lab client certificate, on the allowlist
#   OUT/secrets/portal-jwt.pem, .pub.pem       the portal's token key pair (EC P-256)
#   OUT/secrets/cdn-signing.pem, .pub.pem      the CDN signing key pair (EC P-256)
#   OUT/secrets/k8s-secrets.yaml               all of it as the Kubernetes Secrets the manifests reference
#                                              (namespace en-backend, DATABASE_URLs for the local overlay's postgres)
# The containers run as uid 10001 / gid 10001 (the gateway as uid 101 in group 10001): as root, the files go to
# group 10001 with mode 0640; otherwise they are made world-readable (0644), which is only acceptable on a
# development machine.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
out="${1:-$root/deploy}"
secrets="$out/secrets"
fail() { printf 'dev-secrets.sh: %s\n' "$*" >&2; exit 1; }
command -v openssl >/dev/null || fail "openssl is required"

mkdir -p "$secrets"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

password() { openssl rand -hex 24; }
new_key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }
b64() { base64 -w0 <"$1"; }
b64text() { printf '%s' "$1" | base64 -w0; }

# ---- compose's .env (passwords and the gateway secret; the allowlist follows the lab certificate) ----
if [ ! -s "$out/.env" ]; then
  {
    echo "# Development values written by deploy/env/dev-secrets.sh; see deploy/env/secrets.env.example."
    echo "EN_IMAGE_TAG=latest"
    for name in POSTGRES_PASSWORD SUBMISSION_DB_PASSWORD DISTRIBUTION_DB_PASSWORD VERIFICATION_DB_PASSWORD \
                TESTRESULT_DB_PASSWORD PORTAL_DB_PASSWORD; do
      echo "$name=$(password)"
    done
    echo "GATEWAY_SECRET=$(openssl rand -hex 32)"
  } >"$work/env"
fi

# ---- PKI: a gateway CA and server certificate, a lab CA and one lab certificate ----
ca() {  # ca NAME SUBJECT
  new_key "$secrets/$1.key"
  openssl req -x509 -new -key "$secrets/$1.key" -sha256 -days 825 -subj "$2" -out "$secrets/$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}
leaf() {  # leaf NAME CA SUBJECT EXTENSIONS
  new_key "$secrets/$1.key"
  openssl req -new -key "$secrets/$1.key" -subj "$3" -out "$work/$1.csr" 2>/dev/null
  printf '%b' "$4" >"$work/$1.ext"
  openssl x509 -req -in "$work/$1.csr" -CA "$secrets/$2.pem" -CAkey "$secrets/$2.key" -CAcreateserial \
    -CAserial "$work/$2.srl" -days 825 -sha256 -extfile "$work/$1.ext" -out "$secrets/$1.pem" 2>/dev/null
}
if [ ! -s "$secrets/gateway.pem" ] || [ ! -s "$secrets/gateway.key" ] || [ ! -s "$secrets/ca.pem" ]; then
  ca ca "/O=Exposure Notification Dev/CN=Dev Gateway CA"
  leaf gateway ca "/O=Exposure Notification Dev/CN=localhost" \
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1,DNS:gateway,DNS:gateway.en-backend.svc\n"
fi
if [ ! -s "$secrets/lab-ca.pem" ] || [ ! -s "$secrets/lab-1.pem" ] || [ ! -s "$secrets/lab-1.key" ]; then
  ca lab-ca "/O=Exposure Notification Dev/CN=Dev Lab CA"
  leaf lab-1 lab-ca "/O=Exposure Notification Dev/OU=Labs/CN=lab-1" \
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"
fi
lab_thumbprint="$(openssl x509 -in "$secrets/lab-1.pem" -outform DER | sha256sum | cut -d' ' -f1)"
if [ -s "$work/env" ]; then
  echo "LAB_CERT_SHA256_ALLOWLIST=$lab_thumbprint" >>"$work/env"
  mv "$work/env" "$out/.env"
fi

# ---- token and signing keys ----
for pair in portal-jwt cdn-signing; do
  if [ ! -s "$secrets/$pair.pem" ]; then new_key "$secrets/$pair.pem"; fi
  openssl ec -in "$secrets/$pair.pem" -pubout -out "$secrets/$pair.pub.pem" 2>/dev/null
done

# ---- the same as Kubernetes Secrets (the local overlay's in-cluster database) ----
value() { sed -n "s/^$1=//p" "$out/.env" | tail -n 1; }
for name in POSTGRES_PASSWORD SUBMISSION_DB_PASSWORD DISTRIBUTION_DB_PASSWORD VERIFICATION_DB_PASSWORD \
            TESTRESULT_DB_PASSWORD PORTAL_DB_PASSWORD GATEWAY_SECRET LAB_CERT_SHA256_ALLOWLIST; do
  [ -n "$(value "$name")" ] || fail "$out/.env has no $name (remove the file to write a new one)"
done
url() { printf 'postgres://%s:%s@postgres:5432/%s?sslmode=disable' "$1" "$(value "$2")" "$3"; }
secret() {  # secret NAME TYPE KEY=BASE64...
  local name="$1" type="$2" item
  shift 2
  printf -- '---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: en-backend\ntype: %s\ndata:\n' "$name" "$type"
  for item in "$@"; do printf '  %s: %s\n' "${item%%=*}" "${item#*=}"; done
}
{
  echo "# Development Secrets written by deploy/env/dev-secrets.sh for deploy/k8s/overlays/local. Never commit."
  secret gateway-secret Opaque "GATEWAY_SECRET=$(b64text "$(value GATEWAY_SECRET)")"
  secret gateway-tls kubernetes.io/tls "tls.crt=$(b64 "$secrets/gateway.pem")" "tls.key=$(b64 "$secrets/gateway.key")"
  secret gateway-lab-ca Opaque "ca.crt=$(b64 "$secrets/lab-ca.pem")"
  secret test-result-secrets Opaque "DATABASE_URL=$(b64text "$(url testresult TESTRESULT_DB_PASSWORD testresult)")" \
    "LAB_CERT_SHA256_ALLOWLIST=$(b64text "$(value LAB_CERT_SHA256_ALLOWLIST)")"
  secret verification-secrets Opaque "DATABASE_URL=$(b64text "$(url verification VERIFICATION_DB_PASSWORD verification)")"
  secret submission-secrets Opaque "DATABASE_URL=$(b64text "$(url submission SUBMISSION_DB_PASSWORD keys)")"
  secret portal-secrets Opaque "DATABASE_URL=$(b64text "$(url portal PORTAL_DB_PASSWORD portal)")"
  secret distribution-secrets Opaque "DATABASE_URL=$(b64text "$(url distribution DISTRIBUTION_DB_PASSWORD keys)")"
  secret portal-jwt-key Opaque "portal-jwt.pem=$(b64 "$secrets/portal-jwt.pem")"
  secret portal-jwt-public-key Opaque "portal-jwt.pub.pem=$(b64 "$secrets/portal-jwt.pub.pem")"
  secret cdn-signing-key Opaque "cdn-signing.pem=$(b64 "$secrets/cdn-signing.pem")"
  postgres_items=()
  for name in POSTGRES_PASSWORD SUBMISSION_DB_PASSWORD DISTRIBUTION_DB_PASSWORD VERIFICATION_DB_PASSWORD \
              TESTRESULT_DB_PASSWORD PORTAL_DB_PASSWORD; do
    postgres_items+=("$name=$(b64text "$(value "$name")")")
  done
  secret postgres-passwords Opaque "${postgres_items[@]}"
} >"$work/k8s-secrets.yaml"
mv "$work/k8s-secrets.yaml" "$secrets/k8s-secrets.yaml"

# ---- permissions: readable by the containers' group, nobody else ----
rm -f "$secrets"/*.srl
if [ "$(id -u)" = 0 ]; then
  chgrp -R 10001 "$secrets" "$out/.env"
  chmod 0750 "$secrets"
  chmod 0640 "$secrets"/* "$out/.env"
else
  chmod 0755 "$secrets"
  chmod 0644 "$secrets"/*
  chmod 0600 "$out/.env" "$secrets/k8s-secrets.yaml"
fi
echo "dev-secrets.sh: development secrets in $out/.env and $secrets/ (lab-1 thumbprint $lab_thumbprint)"
