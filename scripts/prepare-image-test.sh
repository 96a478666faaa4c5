#!/usr/bin/env bash
# Prepares this machine for the container image test
# (cli/tests/it/container_image.rs): a local stand-in for the Dockerfile's
# base image, debian:bookworm-slim, in podman's store.
# Idempotent and quiet when everything is present.
#
# The base image is not pulled: the test machines reach no image registry,
# only Debian's package mirror. The stand-in is Debian's own bookworm made
# with `debootstrap --variant=minbase` (essential packages and apt, as the
# slim image has), imported into podman under the official image's name.
# The tarball is cached under /var/cache/runner-tests/, so a second
# machine setup (or an emptied podman store) only imports it again.
#
# The podman settings the test needs (the runtime, the ulimits) are not
# written here into the machine's configuration: the test passes its own
# file, cli/tests/it/containers.conf, in CONTAINERS_CONF (see why there).
set -euo pipefail

base=docker.io/library/debian:bookworm-slim
mirror=http://deb.debian.org/debian
cache=/var/cache/runner-tests
tarball="$cache/debian-bookworm-minbase.tar"

# The packages (podman, runc, debootstrap, uidmap) come with the rest of
# the tests' packages, from install-test-deps.sh, which runs this script.
missing=()
for command in podman runc debootstrap newuidmap; do
  command -v "$command" >/dev/null 2>&1 || missing+=("$command")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing: ${missing[*]} (run scripts/install-test-deps.sh as root)" >&2
  exit 1
fi

if podman image exists "$base"; then
  exit 0
fi
if [ ! -s "$tarball" ]; then
  # debootstrap needs root; importing the tarball it leaves does not
  # (rootless podman keeps its own images, so each user imports it).
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing image: $base (run this script as root once to make its stand-in, then as yourself)" >&2
    exit 1
  fi
  echo "making: a stand-in for $base (debootstrap --variant=minbase bookworm from $mirror)" >&2
  mkdir -p "$cache"
  root="$(mktemp -d "$cache/bookworm.XXXXXX")"
  trap 'rm -rf "$root" "$tarball.partial"' EXIT
  if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1; then
    cat "$root.log" >&2
    rm -f "$root.log"
    exit 1
  fi
  rm -f "$root.log"
  # As the slim image: no package lists or apt caches in the image.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
  tar --numeric-owner -C "$root" -cf "$tarball.partial" .
  mv "$tarball.partial" "$tarball"
fi
echo "importing: $tarball as $base" >&2
# The official image's PATH and command, so a Dockerfile sees the same.
podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["bash"]' \
  "$tarball" "$base" >/dev/null
