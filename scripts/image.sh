#!/usr/bin/env bash
# make image: builds the container image from the Dockerfile with buildah (no Docker engine), on a
# Debian base made locally with debootstrap, then runs `vto version` inside it as a non-root user.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-localhost/vto:dev}
BASE=docker.io/library/debian:bookworm-slim
BUILDAH=(buildah --storage-driver vfs)
say() { echo "image: $*" >&2; }

for p in buildah debootstrap; do
  command -v "$p" >/dev/null || { say "installing $p"; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null; }
done

# The base image, made once: debootstrap's minbase bookworm, committed under the official name so
# the Dockerfile's FROM resolves without a registry (--pull=never).
if ! "${BUILDAH[@]}" inspect --type image "$BASE" >/dev/null 2>&1; then
  rootfs=$(mktemp -d)
  trap 'rm -rf "$rootfs"' EXIT
  say "debootstrap --variant=minbase bookworm (once)"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >/dev/null
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  ctr=$("${BUILDAH[@]}" from scratch)
  "${BUILDAH[@]}" copy "$ctr" "$rootfs" / >/dev/null
  "${BUILDAH[@]}" config --cmd /bin/bash "$ctr"
  "${BUILDAH[@]}" commit --quiet "$ctr" "$BASE" >/dev/null
  "${BUILDAH[@]}" rm "$ctr" >/dev/null
fi

say "building $IMAGE"
"${BUILDAH[@]}" bud --quiet --isolation chroot --pull=never -t "$IMAGE" -f Dockerfile . >/dev/null

# Run `vto version` inside the image as its configured (non-root) user.
ctr=$("${BUILDAH[@]}" from --pull=never "$IMAGE")
trap '"${BUILDAH[@]}" rm "$ctr" >/dev/null' EXIT
user=$("${BUILDAH[@]}" inspect --format '{{.OCIv1.Config.User}}' "$ctr")
[ "${user%%:*}" != 0 ] && [ "${user%%:*}" != root ] && [ -n "$user" ] || { say "ERROR: image runs as root ($user)"; exit 1; }
"${BUILDAH[@]}" run --isolation chroot "$ctr" -- /usr/local/bin/vto version
"${BUILDAH[@]}" run --isolation chroot "$ctr" -- sh -c 'test "$(id -u)" != 0' \
  || { say "ERROR: the container process runs as root"; exit 1; }
say "built $IMAGE (user $user)"
