#!/usr/bin/env bash
# What only the tests need, beyond scripts/bootstrap.sh: built once into the tool cache outside the
# checkout and copied into build/bin, so that `make demo` and `make build` on a fresh machine never pay
# for them. `make test` and `make integration-test` run this after the build (never inside a test: a
# compile there would meet CTest's timeout and load the cores under the other tests).
#   - Kueue's manager and CRDs (tests/support/kueue_process.h);
#   - the release before's `vto` and chart (scripts/release-before.sh, integration.upgrade_release_test).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/build/bin
mkdir -p "$BIN"
say() { echo "test-tools: $*" >&2; }
. "$ROOT/scripts/lib/build-go.sh"

# Kueue's manager, pinned, for the tests of admission by Kueue (tests/support/kueue_process.h): built
# from the release's module (checked against sum.golang.org) in its own directory of the module cache,
# so with exactly the dependencies its go.mod and go.sum pin, as `make build` upstream does. A cold
# build (empty module and build caches) took 9m46s on two cores. Its CRDs go next to it, into
# build/bin/kueue-crds (tests install them from there).
KUEUE=v0.17.0
kueue_module=$(cd / && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kueue@$KUEUE" \
  | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -f "$kueue_module/go.mod" ] || { say "ERROR: could not download sigs.k8s.io/kueue@$KUEUE"; exit 1; }
build_go kueue "$kueue_module" ./cmd/kueue -ldflags "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE"
kueue_crds=$TOOL_CACHE/kueue-crds-$KUEUE
if [ ! -f "$kueue_crds/VERSION" ]; then
  mkdir -p "$kueue_crds"
  cp "$kueue_module"/config/components/crd/bases/kueue.x-k8s.io_*.yaml "$kueue_crds/"
  chmod u+w "$kueue_crds"/*.yaml
  echo "$KUEUE" > "$kueue_crds/VERSION"
fi
if ! diff -rq "$kueue_crds" "$BIN/kueue-crds" >/dev/null 2>&1; then
  rm -rf "$BIN/kueue-crds" && cp -r "$kueue_crds" "$BIN/kueue-crds"
fi

scripts/release-before.sh >/dev/null
