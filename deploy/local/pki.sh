#!/usr/bin/env bash
# The development PKI of the gateway, created once under <data>/pki (never committed); make run's, and the one
# deploy/env/dev-secrets.sh copies for compose and Kubernetes:
#
#   ca.pem, ca.key           the CA that signs the gateway's server certificate (clients trust it: cwa --cacert)
#   gateway.pem, gateway.key the server certificate for 127.0.0.1 and localhost, and for the gateway's names in
#                            compose (gateway) and Kubernetes (gateway.en-backend.svc)
#   lab-ca.pem, lab-ca.key   the CA of lab client certificates (nginx: ssl_client_certificate)
#   lab-1.pem, lab-1.key     a lab's client certificate, on test-result-service's allowlist
#   lab-2.pem, lab-2.key     a lab certificate from the same CA that is NOT on the allowlist (for tests)
#   lab-1.sha256             the SHA-256 thumbprint of lab-1's DER, the allowlist entry
#
#   deploy/local/pki.sh DATA_DIR        create what is missing, print nothing but errors
#   deploy/local/pki.sh DATA_DIR check  exit 0 when the whole PKI is present
#
# EN_GATEWAY_EXTRA_SAN adds names to the gateway's certificate (`IP:10.89.207.10`: the container fleet's gateway).
#
# P-256 keys, certificates valid for 825 days. Private keys are mode 600 in a mode 700 folder.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
data="${1:?usage: pki.sh DATA_DIR [check]}"
pki="$data/pki"
files=(ca.pem gateway.pem gateway.key lab-ca.pem lab-1.pem lab-1.key lab-2.pem lab-2.key lab-1.sha256)

complete() {
  local file
  for file in "${files[@]}"; do [ -s "$pki/$file" ] || return 1; done
}

if [ "${2:-}" = check ]; then complete; exit $?; fi
complete && exit 0
need_commands openssl

rm -rf "$pki.partial"
mkdir -p "$pki.partial"
chmod 700 "$pki.partial"
cd "$pki.partial"
umask 077

new_key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }

# A self-signed CA: new_ca NAME SUBJECT
new_ca() {
  new_key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days 825 -subj "$2" -out "$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

# A leaf signed by a CA: new_leaf NAME CA SUBJECT EXTENSIONS
new_leaf() {
  new_key "$1.key"
  openssl req -new -key "$1.key" -subj "$3" -out "$1.csr" 2>/dev/null
  printf '%b' "$4" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 825 -sha256 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

new_ca ca "/O=Exposure Notification Dev/CN=Dev Gateway CA"
new_leaf gateway ca "/O=Exposure Notification Dev/CN=localhost" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:gateway,DNS:gateway.en-backend.svc${EN_GATEWAY_EXTRA_SAN:+,$EN_GATEWAY_EXTRA_SAN}\n"
new_ca lab-ca "/O=Exposure Notification Dev/CN=Dev Lab CA"
for lab in lab-1 lab-2; do
  new_leaf "$lab" lab-ca "/O=Exposure Notification Dev/OU=Labs/CN=$lab" \
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"
done
openssl x509 -in lab-1.pem -outform DER | sha256sum | cut -d' ' -f1 >lab-1.sha256
chmod 644 ./*.pem lab-1.sha256
rm -f ./*.srl

cd - >/dev/null
rm -rf "$pki"
mv "$pki.partial" "$pki"
complete || fail "the PKI in $pki is incomplete"
