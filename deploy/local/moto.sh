#!/usr/bin/env bash
# Prints the path of a Python that can run moto's S3 server (`python -m moto.server`), which the S3 tests of
# distribution-service start: python3 itself when it has moto, otherwise the venv .data/moto-venv, into which moto is
# installed from PyPI the first time. make test exports the path as EN_MOTO_PYTHON with EN_REQUIRE_S3=1, so on a
# machine where this fails the S3 tests fail instead of skipping.
set -euo pipefail
shopt -s inherit_errexit
root=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/../.." && pwd -P)
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
lib_name=moto

has_moto() { "$1" -c 'import moto.server' 2>/dev/null; }

system=$(command -v python3) || fail "python3 is missing"
if has_moto "$system"; then
  printf '%s\n' "$system"
  exit 0
fi
venv="${EN_DATA_DIR:-$root/.data}/moto-venv"
if ! { [ -x "$venv/bin/python" ] && has_moto "$venv/bin/python"; }; then
  # Debian's python3 creates venvs only with python3-venv (it brings ensurepip).
  python3 -c 'import venv, ensurepip' 2>/dev/null || install_packages python3-venv
  say "installing moto's S3 server from PyPI into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check 'moto[server]>=5' >&2
  has_moto "$venv/bin/python" || fail "moto did not install into $venv"
fi
printf '%s\n' "$venv/bin/python"
