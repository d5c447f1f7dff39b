#!/usr/bin/env bash
# The release before, for the test of upgrading from it with runs in flight
# (tests/integration/upgrade_release_test.cpp, docs/upgrading.md): the operator binary `vto` and the
# Helm chart of the pinned commit RELEASE_BEFORE, the last one before v1beta1, the chart-owned CRDs
# and cluster identity. Built once into a cache outside the checkout, as scripts/bootstrap.sh caches
# the Go tools ($VTO_TOOL_CACHE, else ~/.cache/vto-tools), so a fresh clone, a worktree and CI's clone
# reuse it; `make test` and `make integration-test` run this script before CTest, so no test builds it.
#
#   scripts/release-before.sh         build it unless cached; print the directory (vto, chart/)
#   scripts/release-before.sh --dir   print the directory only, build nothing (the test asks this)
#
# Idempotent: once cached, it prints the directory and does nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

RELEASE_BEFORE=2488f564be7f3b80c0034f16b006a5fb37d43415
SHORT=${RELEASE_BEFORE:0:7}
TOOL_CACHE=${VTO_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vto-tools}
OUT=$TOOL_CACHE/vto-release-$SHORT

say() { echo "release-before: $*" >&2; }
cached() { [ -x "$OUT/vto" ] && [ -f "$OUT/chart/Chart.yaml" ]; }

if [ "${1:-}" = --dir ]; then
  echo "$OUT"
  exit 0
fi
if cached; then
  echo "$OUT"
  exit 0
fi

if ! git -C "$ROOT" cat-file -e "$RELEASE_BEFORE^{commit}" 2>/dev/null; then
  say "ERROR: commit $SHORT (the release before, which tests/integration/upgrade_release_test.cpp upgrades from) is not in this clone."
  if [ "$(git -C "$ROOT" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
    say "This is a shallow clone: run 'git fetch --unshallow' (or fetch $RELEASE_BEFORE), then scripts/release-before.sh again."
  else
    say "Fetch it ('git fetch origin $RELEASE_BEFORE', or clone the whole history), then run scripts/release-before.sh again."
  fi
  exit 1
fi

# One build at a time per cache: a second caller waits, then finds it cached.
mkdir -p "$TOOL_CACHE"
exec 9>"$TOOL_CACHE/.vto-release-$SHORT.lock"
flock 9
if cached; then
  echo "$OUT"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vto-release-$SHORT.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/source"
git -C "$ROOT" archive "$RELEASE_BEFORE" | tar -x -C "$work/source"

say "building vto of $SHORT (the release before) into $OUT: a few minutes, once"
started=$(date +%s)
# Only the operator (`--target vto`: no emulator, no tests), at -O0: the binary serves one test, which
# needs it to behave as that release did, not to be fast. Measured cold (empty ccache) on two cores:
# -O1 costs 668 CPU-seconds, -O0 527 (about 4.5 minutes of wall time); a unity build does not compile
# (anonymous namespaces collide), precompiled headers saved 7%, clang 14 rejects one file. -O3 (the
# flags of `make build`) would share ccache objects with the current tree's build where a file and
# its headers are unchanged since the release before (about 40% today), fewer as the tree moves on.
# The build directory sits two levels under the source, as build/release does, so ccache's paths
# (CCACHE_BASEDIR is the source directory) are the same whatever the temporary directory is called.
# The archive is no git checkout: configure asks `git rev-parse` for the revision `vto version` prints,
# and a stand-in answers with the commit's.
mkdir "$work/git"
printf '#!/bin/sh\necho %s\n' "${RELEASE_BEFORE:0:12}" >"$work/git/git"
chmod +x "$work/git/git"
PATH="$work/git:$PATH" cmake -S "$work/source" -B "$work/source/build/release" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" -DVTO_BIN_DIR="$work/bin" >"$work/configure.log" 2>&1 \
  || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/source/build/release" --target vto >"$work/build.log" 2>&1 \
  || { tail -50 "$work/build.log" >&2; say "ERROR: the build of $SHORT failed (above)"; exit 1; }
"$work/bin/vto" version | grep -q "${RELEASE_BEFORE:0:12}" || { say "ERROR: the built vto does not say it is $SHORT"; exit 1; }

# The chart exactly as that commit had it (CRDs in crds/, which Helm installs once and never upgrades).
# Assembled beside the cache entry and renamed into place, so nobody sees half of it.
out=$(mktemp -d "$TOOL_CACHE/.vto-release-$SHORT.XXXXXX")
trap 'rm -rf "$work" "$out"' EXIT
cp "$work/bin/vto" "$out/vto"
git -C "$ROOT" archive "$RELEASE_BEFORE" helm/vto | tar -x -C "$out"
mv "$out/helm/vto" "$out/chart"
rmdir "$out/helm"
echo "$RELEASE_BEFORE" >"$out/COMMIT"
chmod 755 "$out"
rm -rf "$OUT"
mv "$out" "$OUT"
say "built in $(($(date +%s) - started)) s"
echo "$OUT"
