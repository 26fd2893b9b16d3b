#!/usr/bin/env bash
# Development secrets for deploy/compose.yaml and the local Kubernetes overlay. Never use them in production: there
# the keys come from your PKI and HSM/KMS, and the passwords from your secret store (deploy/README.md, "Compose on
# one host", says which).
#
#   deploy/env/dev-secrets.sh [OUT]        OUT defaults to deploy/
#
# Writes, once (a second run keeps what exists, so passwords and keys stay valid):
#   OUT/.env                     compose's variables: passwords, GATEWAY_SECRET, LAB_CERT_SHA256_ALLOWLIST, EN_IMAGE_TAG,
#                                data donation's PLAY_INTEGRITY_* (from the files below) and DEVICE_CHECK_TEAM_ID/KEY_ID
#   OUT/secrets/gateway.pem, gateway.key       the gateway's TLS certificate (localhost, 127.0.0.1, gateway) and key
#   OUT/secrets/ca.pem                         the CA that signed it (clients trust it: curl --cacert)
#   OUT/secrets/lab-ca.pem                     the CA of lab client certificates
#   OUT/secrets/lab-1.pem, lab-1.key           a lab client certificate, on the allowlist
#                                              (these four from deploy/local/pki.sh, with the CAs' keys)
#   OUT/secrets/postgres.pem, postgres.key     the database server's TLS certificate (postgres, postgres.en-backend.svc)
#   OUT/secrets/database-ca-bundle.pem         the CAs the services verify it with (sslmode=verify-full): this machine's
#                                              public CAs and the development database CA that signed postgres.pem
#   OUT/secrets/portal-jwt.pem, .pub.pem       the portal's token key pair (EC P-256)
#   OUT/secrets/cdn-signing.pem, .pub.pem      the CDN signing key pair (EC P-256)
#   OUT/secrets/service-token-<caller>.pem, .pub.pem
#                                              the service-token key pairs (EC P-256) of submission, portal and
#                                              verification: the caller signs, the callee's SERVICE_CALLER_KEYS trusts
#                                              (data-donation-service trusts submission's)
#   OUT/secrets/federation-*.pem, .key         federation, from deploy/local/federation-pki.sh for country DE: its
#                                              client (federation-client) and batch-signing (federation-signing)
#                                              certificates and keys, the federation CA as federation-gateway-ca.pem
#                                              and federation-callback-ca.pem, the trust anchors
#   OUT/secrets/efgs*.pem, .key                the rehearsal federation gateway: its front's certificate (efgs), the
#                                              countries' CA (efgs-client-ca.pem), its callback client certificate
#                                              (efgs-callback), the CA of the national gateways (efgs-callback-ca.pem),
#                                              the trust anchor that signs its certificate rows (efgs-trust-anchor)
#   OUT/secrets/teletan-pepper.keys            the pepper of teleTAN hashes (verification), one 32-byte key `dev-1`
#   OUT/secrets/totp.keys                      the key of officers' TOTP secrets (portal), one 32-byte key `dev-1`
#   OUT/secrets/android-id-pepper.keys         the pepper of Android IDs (data donation), one 32-byte key `dev-1`
#   OUT/secrets/device-check.p8                data donation's DeviceCheck key (PEM PKCS#8, EC P-256; Apple does not
#                                              know it: with the development team and key ids of .env, a real Apple
#                                              would refuse its tokens)
#   OUT/secrets/play-integrity-decryption.key  a rehearsal app's Play Integrity decryption key: Base64 of 32 random
#                                              bytes, the value of PLAY_INTEGRITY_DECRYPTION_KEY in .env
#   OUT/secrets/play-integrity-signing.pem, .pub.der.b64
#                                              the rehearsal app's verdict-signing key pair (EC P-256, the private key
#                                              PEM PKCS#8): a rehearsal client signs Play Integrity tokens with the
#                                              PEM key and encrypts them with the decryption key; the public key as
#                                              Base64 DER (SPKI) is PLAY_INTEGRITY_VERIFICATION_KEY in .env
#   OUT/secrets/k8s-secrets.yaml               all of it as the Kubernetes Secrets the manifests reference
#                                              (namespace en-backend, DATABASE_URLs for the local overlay's postgres)
# The containers run as uid 10001 / gid 10001 (the gateway as uid 101 in group 10001): as root, the files go to
# group 10001 with mode 0640; otherwise they are made world-readable (0644), which is only acceptable on a
# development machine.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/../local/lib.sh
. "$root/deploy/local/lib.sh"
out="${1:-$root/deploy}"
secrets="$out/secrets"
need_commands openssl

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
# Values an older .env lacks are added to it (federation's, data donation's).
for name in FEDERATION_DB_PASSWORD EFGS_DB_PASSWORD EFGS_FRONT_SECRET DATADONATION_DB_PASSWORD; do
  for file in "$work/env" "$out/.env"; do
    [ -s "$file" ] || continue
    grep -q "^$name=" "$file" || echo "$name=$(openssl rand -hex 24)" >>"$file"
    break
  done
done

# ---- PKI: deploy/local/pki.sh's gateway CA and server certificate, lab CA and lab-1, where they are missing ----
missing() { local file; for file in "$@"; do [ -s "$secrets/$file" ] || return 0; done; return 1; }
copy_pki() { "$root/deploy/local/pki.sh" "$work"; local file; for file in "$@"; do cp "$work/pki/$file" "$secrets/$file"; done; }
if missing gateway.pem gateway.key ca.pem; then copy_pki ca.pem ca.key gateway.pem gateway.key; fi
if missing lab-ca.pem lab-1.pem lab-1.key; then copy_pki lab-ca.pem lab-ca.key lab-1.pem lab-1.key; fi
lab_thumbprint="$(openssl x509 -in "$secrets/lab-1.pem" -outform DER | sha256sum | cut -d' ' -f1)"
if [ -s "$work/env" ]; then
  echo "LAB_CERT_SHA256_ALLOWLIST=lab-1=$lab_thumbprint" >>"$work/env"
  mv "$work/env" "$out/.env"
fi

# ---- federation: deploy/local/federation-pki.sh for DE (the federation CA signs the rehearsal gateway's front, its
# callback client certificate and DE's client certificate); the national gateway's CA for the callbacks ----
if missing federation-client.pem federation-client.key federation-signing.pem federation-signing.key \
  federation-gateway-ca.pem federation-callback-ca.pem federation-trust-anchors.pem efgs.pem efgs.key efgs-client-ca.pem \
  efgs-callback.pem efgs-callback.key efgs-trust-anchor.pem efgs-trust-anchor.key; then
  "$root/deploy/local/federation-pki.sh" "$work/federation" DE
  cp "$work/federation/DE/client.pem" "$secrets/federation-client.pem"
  cp "$work/federation/DE/client.key" "$secrets/federation-client.key"
  cp "$work/federation/DE/signing.pem" "$secrets/federation-signing.pem"
  cp "$work/federation/DE/signing.key" "$secrets/federation-signing.key"
  for name in federation-gateway-ca federation-callback-ca efgs-client-ca; do cp "$work/federation/ca.pem" "$secrets/$name.pem"; done
  cp "$work/federation/trust-anchors.pem" "$secrets/federation-trust-anchors.pem"
  for name in efgs efgs-callback efgs-trust-anchor; do cp "$work/federation/$name.pem" "$work/federation/$name.key" "$secrets/"; done
fi
cp "$secrets/ca.pem" "$secrets/efgs-callback-ca.pem"
# ---- the database's TLS: a development CA (its key is thrown away), the server certificate, the CA bundle ----
if missing postgres.pem postgres.key database-ca-bundle.pem; then
  new_key "$work/database-ca.key"
  openssl req -x509 -new -key "$work/database-ca.key" -sha256 -days 825 -subj "/O=Exposure Notification Dev/CN=Dev Database CA" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$work/database-ca.pem" 2>/dev/null
  new_key "$secrets/postgres.key"
  openssl req -new -key "$secrets/postgres.key" -subj "/O=Exposure Notification Dev/CN=postgres" -out "$work/postgres.csr" 2>/dev/null
  printf '%b' "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:postgres,DNS:postgres.en-backend.svc,DNS:postgres.en-backend.svc.cluster.local\n" >"$work/postgres.ext"
  openssl x509 -req -in "$work/postgres.csr" -CA "$work/database-ca.pem" -CAkey "$work/database-ca.key" -CAcreateserial \
    -days 825 -sha256 -extfile "$work/postgres.ext" -out "$secrets/postgres.pem" 2>/dev/null
  # Mounted over the images' /etc/ssl/certs/ca-certificates.crt: the public CAs stay trusted (S3, …).
  { [ -s /etc/ssl/certs/ca-certificates.crt ] && cat /etc/ssl/certs/ca-certificates.crt; cat "$work/database-ca.pem"; } \
    >"$secrets/database-ca-bundle.pem"
fi

# ---- token and signing keys ----
for pair in portal-jwt cdn-signing service-token-submission service-token-portal service-token-verification; do
  if [ ! -s "$secrets/$pair.pem" ]; then new_key "$secrets/$pair.pem"; fi
  openssl ec -in "$secrets/$pair.pem" -pubout -out "$secrets/$pair.pub.pem" 2>/dev/null
done

# ---- key files of secrets at rest: `id=base64:<key>` per line, the first current (deploy/README.md) ----
for keys in teletan-pepper totp android-id-pepper; do
  if [ ! -s "$secrets/$keys.keys" ]; then printf 'dev-1=base64:%s\n' "$(openssl rand -base64 32)" >"$secrets/$keys.keys"; fi
done

# ---- data donation: the DeviceCheck key (Apple's .p8 format), a rehearsal app's Play Integrity keys ----
# PEM PKCS#8 (`BEGIN PRIVATE KEY`), the form of Apple's .p8 files, for both private keys.
new_pkcs8_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
if [ ! -s "$secrets/device-check.p8" ]; then new_pkcs8_key "$secrets/device-check.p8"; fi
if [ ! -s "$secrets/play-integrity-decryption.key" ]; then openssl rand -base64 32 >"$secrets/play-integrity-decryption.key"; fi
if [ ! -s "$secrets/play-integrity-signing.pem" ]; then new_pkcs8_key "$secrets/play-integrity-signing.pem"; fi
openssl ec -in "$secrets/play-integrity-signing.pem" -pubout -outform DER 2>/dev/null | base64 -w0 \
  >"$secrets/play-integrity-signing.pub.der.b64"
# .env carries what the service reads as values: the Play Integrity keys (always those of the files above) and the
# development DeviceCheck ids (kept when set).
set_env() {  # set_env NAME VALUE: replaces or adds NAME=VALUE in .env
  grep -v "^$1=" "$out/.env" >"$work/env.new" || true
  printf '%s=%s\n' "$1" "$2" >>"$work/env.new"
  mv "$work/env.new" "$out/.env"
}
set_env PLAY_INTEGRITY_DECRYPTION_KEY "$(tr -d '\n' <"$secrets/play-integrity-decryption.key")"
set_env PLAY_INTEGRITY_VERIFICATION_KEY "$(cat "$secrets/play-integrity-signing.pub.der.b64")"
grep -q '^DEVICE_CHECK_TEAM_ID=' "$out/.env" || set_env DEVICE_CHECK_TEAM_ID DEVTEAM001
grep -q '^DEVICE_CHECK_KEY_ID=' "$out/.env" || set_env DEVICE_CHECK_KEY_ID DEVKEY0001

# ---- the same as Kubernetes Secrets (the local overlay's in-cluster database) ----
value() { sed -n "s/^$1=//p" "$out/.env" | tail -n 1; }
for name in POSTGRES_PASSWORD SUBMISSION_DB_PASSWORD DISTRIBUTION_DB_PASSWORD VERIFICATION_DB_PASSWORD \
            TESTRESULT_DB_PASSWORD PORTAL_DB_PASSWORD DATADONATION_DB_PASSWORD GATEWAY_SECRET LAB_CERT_SHA256_ALLOWLIST; do
  [ -n "$(value "$name")" ] || fail "$out/.env has no $name (remove the file to write a new one)"
done
url() { printf 'postgres://%s:%s@postgres:5432/%s?sslmode=verify-full' "$1" "$(value "$2")" "$3"; }
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
  secret database-ca-bundle Opaque "ca-certificates.crt=$(b64 "$secrets/database-ca-bundle.pem")"
  secret postgres-tls kubernetes.io/tls "tls.crt=$(b64 "$secrets/postgres.pem")" "tls.key=$(b64 "$secrets/postgres.key")"
  secret test-result-secrets Opaque "DATABASE_URL=$(b64text "$(url testresult TESTRESULT_DB_PASSWORD testresult)")" \
    "LAB_CERT_SHA256_ALLOWLIST=$(b64text "$(value LAB_CERT_SHA256_ALLOWLIST)")"
  secret verification-secrets Opaque "DATABASE_URL=$(b64text "$(url verification VERIFICATION_DB_PASSWORD verification)")"
  secret submission-secrets Opaque "DATABASE_URL=$(b64text "$(url submission SUBMISSION_DB_PASSWORD keys)")"
  secret portal-secrets Opaque "DATABASE_URL=$(b64text "$(url portal PORTAL_DB_PASSWORD portal)")"
  secret distribution-secrets Opaque "DATABASE_URL=$(b64text "$(url distribution DISTRIBUTION_DB_PASSWORD keys)")"
  secret data-donation-secrets Opaque \
    "DATABASE_URL=$(b64text "$(url datadonation DATADONATION_DB_PASSWORD datadonation)")" \
    "PLAY_INTEGRITY_DECRYPTION_KEY=$(b64text "$(value PLAY_INTEGRITY_DECRYPTION_KEY)")" \
    "PLAY_INTEGRITY_VERIFICATION_KEY=$(b64text "$(value PLAY_INTEGRITY_VERIFICATION_KEY)")" \
    "DEVICE_CHECK_TEAM_ID=$(b64text "$(value DEVICE_CHECK_TEAM_ID)")" \
    "DEVICE_CHECK_KEY_ID=$(b64text "$(value DEVICE_CHECK_KEY_ID)")"
  secret portal-jwt-key Opaque "portal-jwt.pem=$(b64 "$secrets/portal-jwt.pem")"
  secret portal-jwt-public-key Opaque "portal-jwt.pub.pem=$(b64 "$secrets/portal-jwt.pub.pem")"
  secret cdn-signing-key Opaque "cdn-signing.pem=$(b64 "$secrets/cdn-signing.pem")"
  secret teletan-pepper Opaque "teletan-pepper.keys=$(b64 "$secrets/teletan-pepper.keys")"
  secret totp-key Opaque "totp.keys=$(b64 "$secrets/totp.keys")"
  secret android-id-pepper Opaque "android-id-pepper.keys=$(b64 "$secrets/android-id-pepper.keys")"
  secret device-check-key Opaque "device-check.p8=$(b64 "$secrets/device-check.p8")"
  for caller in submission portal verification; do
    secret "$caller-service-token" Opaque "key.pem=$(b64 "$secrets/service-token-$caller.pem")"
  done
  secret service-callers Opaque "submission-service.pub.pem=$(b64 "$secrets/service-token-submission.pub.pem")" \
    "portal-service.pub.pem=$(b64 "$secrets/service-token-portal.pub.pem")" \
    "verification-service.pub.pem=$(b64 "$secrets/service-token-verification.pub.pem")"
  # The federation component's (deploy/k8s/components/federation; make deploy-check tries its containers with them).
  secret federation-secrets Opaque "DATABASE_URL=$(b64text "$(url federation FEDERATION_DB_PASSWORD keys)")"
  secret federation-certificates Opaque "client.pem=$(b64 "$secrets/federation-client.pem")" \
    "client.key=$(b64 "$secrets/federation-client.key")" "signing.pem=$(b64 "$secrets/federation-signing.pem")" \
    "signing.key=$(b64 "$secrets/federation-signing.key")" "efgs-ca.pem=$(b64 "$secrets/federation-gateway-ca.pem")" \
    "trust-anchors.pem=$(b64 "$secrets/federation-trust-anchors.pem")"
  secret gateway-efgs-callback-ca Opaque "ca.crt=$(b64 "$secrets/federation-callback-ca.pem")"
  postgres_items=()
  for name in POSTGRES_PASSWORD SUBMISSION_DB_PASSWORD DISTRIBUTION_DB_PASSWORD VERIFICATION_DB_PASSWORD \
              TESTRESULT_DB_PASSWORD PORTAL_DB_PASSWORD DATADONATION_DB_PASSWORD; do
    postgres_items+=("$name=$(b64text "$(value "$name")")")
  done
  secret postgres-passwords Opaque "${postgres_items[@]}"
} >"$work/k8s-secrets.yaml"
mv "$work/k8s-secrets.yaml" "$secrets/k8s-secrets.yaml"

# ---- permissions: readable by the containers' group, nobody else ----
if is_root; then
  chgrp -R 10001 "$secrets" "$out/.env"
  chmod 0750 "$secrets"
  chmod 0640 "$secrets"/* "$out/.env"
else
  chmod 0755 "$secrets"
  chmod 0644 "$secrets"/*
  chmod 0600 "$out/.env" "$secrets/k8s-secrets.yaml"
fi
echo "dev-secrets.sh: development secrets in $out/.env and $secrets/ (lab-1 thumbprint $lab_thumbprint)"
