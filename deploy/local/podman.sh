#!/usr/bin/env bash
# What the container scripts (images.sh, containers.sh) share; sourced after lib.sh, with `root` set to the repository.
#
#   podman_ready    install podman and what it runs with here, and write this repository's configuration, which
#                   sourcing this file points podman at (CONTAINERS_CONF=.data/containers/containers.conf); the image
#                   store is podman's own
#   build_image ARGS…  `podman build` as this machine allows it (chroot isolation, the host's network), in Docker
#                   format: the OCI format has no HEALTHCHECK and no SHELL
#
# What the configuration says, and why: runc (crun refuses this kernel's cgroup mode), cgroupfs (no systemd),
# no default ulimits (the defaults exceed what a container may set here), netavark with aardvark-dns (containers
# find their peers by name on compose's networks), events in a file (no journald).

# Every podman command of these scripts reads this configuration, whatever it does: with podman's defaults (the CNI
# network backend among them) it would not see the networks made with it.
export CONTAINERS_CONF="${root:?}/.data/containers/containers.conf"

podman_ready() {
  install_packages podman runc netavark aardvark-dns iptables debootstrap
  local conf="$CONTAINERS_CONF"
  mkdir -p "$(dirname "$conf")"
  cat >"$conf" <<'CONF'
[containers]
default_ulimits = []

[network]
network_backend = "netavark"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  # podman chooses its network backend once per store: a store first used with CNI keeps it.
  if [ "$(podman info --format '{{.Host.NetworkBackend}}' 2>/dev/null)" != netavark ]; then
    fail "podman's store uses another network backend than netavark; reset it (podman system reset) and run again"
  fi
}

build_image() { podman build --format docker --isolation chroot --network host --layers "$@"; }
