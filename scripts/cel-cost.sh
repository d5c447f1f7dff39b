#!/usr/bin/env bash
# Prints what the TrainingRun CRD's CEL rules cost the API server per write of the bench's run, whole
# and rule by rule, with the API server's own validator (scripts/cel-cost/main.go). A figure, not a
# test: run it before and after changing a rule.
#
#   scripts/cel-cost.sh [CRD.yaml]   (default: helm/vto/files/crds/trainingruns.vto.dev.yaml)
#
# It builds against tests/cluster's Go module (the Kubernetes version the tests run), in a temporary
# module of its own so that tests/cluster's go.mod, and the tool cache's hash of it, stay as they are.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CRD=$(realpath "${1:-$ROOT/helm/vto/files/crds/trainingruns.vto.dev.yaml}")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
sed 's#^module .*#module vto.dev/celcost#' "$ROOT/tests/cluster/go.mod" >"$WORK/go.mod"
cp "$ROOT/tests/cluster/go.sum" "$ROOT/scripts/cel-cost/main.go" "$WORK/"
cd "$WORK"
GOFLAGS=-mod=mod go build -o cel-cost . 2>&1 | grep -v '^go: ' >&2 || true
[[ -x cel-cost ]] || { echo "cel-cost.sh: the build failed" >&2; exit 1; }
GOMAXPROCS=1 ./cel-cost "$CRD"
