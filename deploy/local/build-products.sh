#!/usr/bin/env bash
# build-products.sh CONFIG PRODUCT…: builds each product with `swift build -c CONFIG --product …` (one by one: a plain
# `swift build` also builds the dependencies' executables), unless nothing they are built from changed since the
# last time these products were all built: then it says so and builds nothing (each no-op `swift build` still costs
# seconds of package loading and planning). What counts: Package.swift, Package.resolved, and every file under
# Services, Shared and Tools; a product whose binary is missing is always built.
set -euo pipefail
shopt -s inherit_errexit
root=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/../.." && pwd -P)
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
lib_name=build

[ $# -ge 2 ] || fail "usage: build-products.sh CONFIG PRODUCT…"
config="$1"; shift
swift="${SWIFT:-swift}"
cd "$root"
stamp_dir=".build/en-products"
stamp="$stamp_dir/$config-$(printf '%s\n' "$@" | cksum | cut -d' ' -f1)"
sources=(Package.swift Services Shared Tools)
[ -f Package.resolved ] && sources+=(Package.resolved)

up_to_date() {
  [ -f "$stamp" ] || return 1
  local product
  for product in "$@"; do [ -x ".build/$config/$product" ] || return 1; done
  [ -z "$(find "${sources[@]}" -newer "$stamp" -print -quit)" ]
}

if up_to_date "$@"; then
  say "nothing changed since the last $config build of $*: not built again"
  exit 0
fi
mkdir -p "$stamp_dir"
# Stamped with the time the builds start, so that a file changed while they run is built next time.
touch "$stamp.next"
for product in "$@"; do
  "$swift" build -c "$config" --product "$product"
done
mv "$stamp.next" "$stamp"
