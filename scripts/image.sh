#!/usr/bin/env bash
# make image: builds the distroless container image from the Dockerfile with buildah (no Docker
# engine); its first stage runs on a Debian base made locally with debootstrap, pinned by the digest it
# gets here. Then checks the image: a non-root numeric user, no shell, and the operator runs inside it
# (`vto version`, `vto schedule` in a named time zone, which reads the image's zoneinfo, and the kubectl
# plugin name kubectl-vto).
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

# Pinned by digest: the Dockerfile refuses a base named by tag alone.
digest=$("${BUILDAH[@]}" images --digests --format '{{.Digest}}' "$BASE" | head -n1)
[[ $digest == sha256:* ]] || { say "ERROR: no digest for $BASE ($digest)"; exit 1; }
say "building $IMAGE on $BASE@$digest"
"${BUILDAH[@]}" bud --quiet --isolation chroot --pull=never --build-arg "BASE=$BASE@$digest" \
  -t "$IMAGE" -f Dockerfile . >/dev/null

ctr=$("${BUILDAH[@]}" from --pull=never "$IMAGE")
trap '"${BUILDAH[@]}" rm "$ctr" >/dev/null' EXIT
user=$("${BUILDAH[@]}" inspect --format '{{.OCIv1.Config.User}}' "$ctr")
[[ $user =~ ^[1-9][0-9]*:[0-9]+$ ]] || { say "ERROR: the image's user must be numeric and not root, got '$user'"; exit 1; }
run() { "${BUILDAH[@]}" run --isolation chroot --user "$user" "$ctr" -- "$@"; }
run /usr/local/bin/vto version
run /usr/local/bin/vto schedule --cron "30 2 * * *" --time-zone Europe/Berlin --after 2026-10-24T12:00:00Z --count 1 >/dev/null \
  || { say "ERROR: vto schedule cannot read time zones inside the image"; exit 1; }
[[ $(run /usr/local/bin/kubectl-vto --help) == "usage: kubectl vto "* ]] \
  || { say "ERROR: kubectl-vto (the kubectl plugin) is missing from the image or does not answer as one"; exit 1; }
if run /bin/sh -c true 2>/dev/null; then say "ERROR: the image has a shell; it should hold only vto and its libraries"; exit 1; fi
size=$("${BUILDAH[@]}" images --format '{{.Size}}' "$IMAGE" | head -n1)
say "built $IMAGE (user $user, $size, no shell)"
