#!/usr/bin/env bash
# make images: every image of the containerised fleet, built with podman on this machine, without a registry.
#
#   localhost/en-debian:bookworm          the runtime base, what debian:bookworm-slim is: `debootstrap --variant=minbase
#                                         bookworm` from the Debian mirror, then deploy/images/base (updates, no docs)
#   en-backend/<service>:<EN_IMAGE_TAG>   deploy/Dockerfile for each service with BINARIES=prebuilt: the binaries of
#                                         .build/<CONFIG>, linked here with --static-swift-stdlib, on that base
#   localhost/en-postgres:15, localhost/en-nginx:bookworm
#                                         stand-ins for the official postgres and nginx images (deploy/images/)
#
# The base is cached: its tag and .data/images/en-debian-<key>.tar are keyed by the hash of its recipe (the
# debootstrap suite, variant and mirror, and deploy/images/base/*), and .data/images/en-debian-<key>.packages lists
# its packages. A new recipe makes a new base; EN_REFRESH_BASE=1 makes it anew anyway (a month's security updates).
#
# CONFIG: release (default; what the image facts in deploy/README.md are measured on) or debug (make test: the build
# it already has, relinked). EN_IMAGE_TAG: latest (default). EN_DEBIAN_MIRROR: http://deb.debian.org/debian.
# SKIP_BUILD=1: use the static binaries already in .build/<CONFIG>. Prints the images and their sizes.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$root/deploy/local/lib.sh"
# shellcheck source=SCRIPTDIR/podman.sh
. "$root/deploy/local/podman.sh"
cd "$root"

config="${CONFIG:-release}"
tag="${EN_IMAGE_TAG:-latest}"
mirror="${EN_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
services=(test-result-service verification-service submission-service portal-service distribution-service federation-service
  data-donation-service efgs-gateway)
cache="$root/.data/images"
started=$(date +%s)

podman_ready
mkdir -p "$cache"

# ---- the base ------------------------------------------------------------------------------------------------------
key="$( (echo "debootstrap --variant=minbase bookworm $mirror"; cat deploy/images/base/*) | sha256sum | cut -c1-12)"
base="localhost/en-debian:bookworm-$key"
if [ -n "${EN_REFRESH_BASE:-}" ]; then
  podman rmi -f "$base" >/dev/null 2>&1 || true
  rm -f "$cache/en-debian-$key.tar" "$cache/en-debian-$key.packages"
fi
if podman image exists "$base"; then
  say "base $base: cached"
elif [ -s "$cache/en-debian-$key.tar" ]; then
  say "base $base: loading .data/images/en-debian-$key.tar"
  podman load -q -i "$cache/en-debian-$key.tar" >/dev/null
else
  say "base $base: debootstrap --variant=minbase bookworm from $mirror"
  rootfs="$cache/rootfs.partial"
  rm -rf "$rootfs"
  as_root debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 \
    || fail_with_log "$cache/debootstrap.log" "debootstrap failed"
  as_root tar -C "$rootfs" -c . | podman import -q - "localhost/en-debian-raw:$key" >/dev/null
  as_root rm -rf "$rootfs"
  # One layer: the debootstrap tree still holds the downloaded packages, which the recipe deletes.
  build_image -q --squash-all --build-arg "RAW_IMAGE=localhost/en-debian-raw:$key" -t "$base" deploy/images/base >/dev/null
  podman rmi "localhost/en-debian-raw:$key" >/dev/null
  rm -f "$cache"/en-debian-*.tar
  podman save -q -o "$cache/en-debian-$key.tar" "$base"
fi
podman tag "$base" localhost/en-debian:bookworm
[ -s "$cache/en-debian-$key.packages" ] \
  || podman run --rm "$base" dpkg-query -W -f '${Package} ${Version}\n' >"$cache/en-debian-$key.packages"
for old in $(podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/en-debian:bookworm-' | grep -vF "$base"); do
  podman rmi "$old" >/dev/null 2>&1 || true
done
say "base: $(wc -l <"$cache/en-debian-$key.packages") packages (.data/images/en-debian-$key.packages)"

# ---- the services: host binaries, static Swift runtime --------------------------------------------------------------
# A debug link with --static-swift-stdlib leaves Foundation's references into CoreFoundation and the other static
# Foundation libraries unresolved (Swift 6.3.1; a release link drops them with dead sections): there the libraries
# are named once more, as one group, after everything else.
link=()
if [ "$config" = debug ]; then
  # The toolchain's static libraries: <toolchain>/usr/lib/swift_static/linux, next to the swift driver's bin/.
  static_libraries="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift_static/linux"
  [ -d "$static_libraries" ] || fail "no static Swift libraries at $static_libraries"
  link=(-Xlinker "-L$static_libraries" -Xlinker --start-group)
  for library in Foundation CoreFoundation FoundationEssentials FoundationInternationalization _FoundationCollections \
                 _FoundationCShims _FoundationICU swiftSynchronization swiftCore dispatch BlocksRuntime; do
    link+=(-Xlinker "-l$library")
  done
  link+=(-Xlinker --end-group)
fi
bin=".build/$config"
for service in "${services[@]}"; do
  if [ -z "${SKIP_BUILD:-}" ]; then
    say "linking $service ($config, --static-swift-stdlib)"
    swift build -c "$config" --static-swift-stdlib "${link[@]}" --product "$service" >"$cache/build.log" 2>&1 \
      || fail_with_log "$cache/build.log" "swift build of $service failed"
  fi
  [ -x "$bin/$service" ] || fail "$bin/$service is missing"
  ls -d "$bin"/*.resources >/dev/null 2>&1 || fail "no resource bundles in $bin"
  if ldd "$bin/$service" | grep -q libswiftCore; then fail "$bin/$service is linked to the Swift runtime dynamically"; fi
done

# Objects compiled for the static link name the static Foundation libraries for the linker, and the Swift driver does
# not compile a file again when only --static-swift-stdlib changed: a later plain build of this configuration would
# reuse them and fail to link. They are removed, so that build compiles them again.
while IFS= read -r -d '' object; do
  if readelf -p .swift1_autolink_entries "$object" 2>/dev/null | grep -q -- -lCoreFoundation; then rm -f "$object"; fi
done < <(find "$bin/" -name '*.o' -print0)

# The context of the prebuilt stage: prebuilt/<service>/ (binary and resource bundles, the tests' bundles left out)
# and the one file of the repository the runtime stage copies.
context="$cache/context"
rm -rf "$context"
mkdir -p "$context/deploy"
cp deploy/healthcheck.sh "$context/deploy/"
for service in "${services[@]}"; do
  mkdir -p "$context/prebuilt/$service"
  cp "$bin/$service" "$context/prebuilt/$service/"
  # (.build/<CONFIG> is a symbolic link: find starts below it.)
  find "$bin/" -maxdepth 1 -name '*.resources' ! -name '*Tests.resources' -exec cp -R {} "$context/prebuilt/$service/" \;
done
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
created="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
for service in "${services[@]}"; do
  say "image en-backend/$service:$tag"
  build_image -q -f deploy/Dockerfile --build-arg BINARIES=prebuilt --build-arg "SERVICE=$service" \
    --build-arg "RUNTIME_IMAGE=$base" --build-arg "VERSION=$tag" --build-arg "REVISION=$revision" \
    --build-arg "CREATED=$created" -t "en-backend/$service:$tag" "$context" >"$cache/build.log" 2>&1 \
    || fail_with_log "$cache/build.log" "the image of $service did not build"
done
rm -rf "$context"

# ---- the stand-ins of the third-party images --------------------------------------------------------------------
for image in postgres:15 nginx:bookworm; do
  say "image localhost/en-$image"
  build_image -q --build-arg "BASE_IMAGE=$base" -t "localhost/en-$image" "deploy/images/${image%%:*}" \
    >"$cache/build.log" 2>&1 || fail_with_log "$cache/build.log" "the image en-$image did not build"
done
podman image prune -f >/dev/null

# Pending security updates: what bookworm-security and bookworm-updates offer now for the runtime stage's packages
# (the security tracker that debsecan reads is not reachable from every build machine; the Debian mirror is).
pending="$(podman run --rm --network host --user 0 --entrypoint bash "en-backend/${services[0]}:$tag" -c \
  'apt-get update -qq 2>/dev/null && apt list --upgradable 2>/dev/null | grep -c /' || true)"
say "runtime stage: ${pending:-?} packages with a newer version in bookworm, bookworm-updates or bookworm-security"

podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' \
  | grep -E '^(localhost/en-backend/|localhost/en-debian:bookworm |localhost/en-postgres|localhost/en-nginx)' | sort
say "images ready in $(( $(date +%s) - started )) s"
