#!/usr/bin/env bash
# The development PKI of federation, created once under DIR (never committed): the rehearsal gateway's (efgs-gateway)
# and that of each country that federates through it.
#
#   ca.pem, ca.key                     the federation CA: it signs the gateway's server certificate, its callback
#                                      client certificate and the countries' client certificates
#   efgs.pem, efgs.key                 the gateway front's server certificate (127.0.0.1, localhost, efgs)
#   efgs-callback.pem, .key            the client certificate the gateway calls national callbacks with
#                                      (CN=efgs-callback: federation-service's EFGS_CALLBACK_CERT_CN)
#   efgs-trust-anchor.pem, .key        the gateway operator's trust anchor, self-signed: it signs the certificate rows
#                                      (`efgs-gateway country add --trust-anchor-cert/-key`, EFGS_TRUST_ANCHOR_FILE)
#   CC/client.pem, CC/client.key       country CC's client certificate (C=CC), registered as AUTHENTICATION
#   CC/signing.pem, CC/signing.key     country CC's self-signed batch-signing certificate (C=CC), registered as SIGNING
#   trust-anchors.pem                  every country's signing certificate: FEDERATION_TRUST_ANCHORS
#
#   deploy/local/federation-pki.sh DIR CC [CC ...]   create what is missing (countries may be added later)
#
# P-256 keys, certificates valid for 825 days. Private keys are mode 600 in a mode 700 folder.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
dir="${1:?usage: federation-pki.sh DIR CC [CC ...]}"
shift
[ $# -gt 0 ] || fail "usage: federation-pki.sh DIR CC [CC ...]"
need_commands openssl
mkdir -p "$dir"
chmod 700 "$dir"
cd "$dir"
umask 077

new_key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }

# A leaf the federation CA signs: new_leaf NAME SUBJECT EXTENSIONS
new_leaf() {
  new_key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
  printf '%b' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 -sha256 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext" ca.srl
  chmod 644 "$1.pem"
}

client="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"
if [ ! -s ca.pem ]; then
  new_key ca.key
  openssl req -x509 -new -key ca.key -sha256 -days 825 -subj "/O=Exposure Notification Dev/CN=Dev Federation CA" \
    -out ca.pem -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  chmod 644 ca.pem
  rm -f efgs.pem efgs-callback.pem ./*/client.pem
fi
[ -s efgs.pem ] || new_leaf efgs "/O=Exposure Notification Dev/CN=efgs" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:efgs\n"
[ -s efgs-callback.pem ] || new_leaf efgs-callback "/O=Exposure Notification Dev/CN=efgs-callback" "$client"
if [ ! -s efgs-trust-anchor.pem ]; then
  new_key efgs-trust-anchor.key
  openssl req -x509 -new -key efgs-trust-anchor.key -sha256 -days 825 \
    -subj "/O=Exposure Notification Dev/CN=EFGS Trust Anchor" -out efgs-trust-anchor.pem \
    -addext "basicConstraints=critical,CA:FALSE" -addext "keyUsage=critical,digitalSignature" 2>/dev/null
  chmod 644 efgs-trust-anchor.pem
fi
for country in "$@"; do
  [[ $country =~ ^[A-Z]{2}$ ]] || fail "$country is not a country code"
  mkdir -p "$country"
  [ -s "$country/client.pem" ] || new_leaf "$country/client" "/C=$country/O=Exposure Notification Dev/CN=efgs-client-$country" "$client"
  if [ ! -s "$country/signing.pem" ]; then
    new_key "$country/signing.key"
    openssl req -x509 -new -key "$country/signing.key" -sha256 -days 825 \
      -subj "/C=$country/O=Exposure Notification Dev/CN=batch-signing-$country" -out "$country/signing.pem" \
      -addext "basicConstraints=critical,CA:FALSE" -addext "keyUsage=critical,digitalSignature" 2>/dev/null
    chmod 644 "$country/signing.pem"
  fi
done
cat ./*/signing.pem >trust-anchors.pem
chmod 644 trust-anchors.pem
