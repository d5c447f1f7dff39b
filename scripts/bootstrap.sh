#!/usr/bin/env bash
# Installs everything vto's build, tests and demo need on a Debian 12 machine, and builds the Go tools
# (the test control plane, fake-gcs-server, helm) into build/bin. Idempotent, and quiet when nothing is
# missing: each step checks first and says something only when it does work.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/build/bin
mkdir -p "$BIN"

say() { echo "bootstrap: $*" >&2; }

# 1. Debian packages.
APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git curl ca-certificates
  ccache              # every C++ build (CMakeLists.txt): a fresh clone compiles what changed, not everything
  libcpprest-dev libboost-dev libssl-dev libspdlog-dev prometheus-cpp-dev libyaml-cpp-dev
  nlohmann-json3-dev libhowardhinnant-date-dev libgtest-dev
  libjemalloc-dev     # vto's allocator (cmd/CMakeLists.txt)
  tzdata              # IANA time zones (/usr/share/zoneinfo) for RetrainingPolicy schedules
  prometheus          # prometheus and promtool for the metrics tests
  clang libclang-rt-14-dev  # libFuzzer for the decoder/validator fuzz target
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. Toolchains that Debian 12 ships too old or not at all: checked, not installed.
need() { command -v "$1" >/dev/null || { say "ERROR: $1 is required ($2)"; exit 1; }; }
need go "Go >= 1.26 from go.dev; Debian 12's golang is too old for Kubernetes 1.37"
need kubectl "the Kubernetes CLI"
need node "Node.js >= 20, for the Vertex client conformance test"
need npm "npm, for the Vertex client conformance test"
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
[ "$go_minor" -ge 26 ] || { say "ERROR: Go >= 1.26 needed, found $(go env GOVERSION)"; exit 1; }

# 3. Go tools, built once per version into a cache outside the checkout (a fresh clone, a worktree and
# CI's clone reuse it; a change to the Go version, the module or a flag builds anew) and copied into
# build/bin. The first build of the API server takes 10-20 minutes on two cores.
. "$ROOT/scripts/lib/build-go.sh"
# The API server reports the release it was built from, as a release build does (kubectl version, /version).
k8s=$(cd "$ROOT/tests/cluster" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$k8s" | cut -d. -f2)
v=k8s.io/component-base/version
build_go vto-testcluster "$ROOT/tests/cluster" . -ldflags "-X $v.gitVersion=$k8s -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean -X $v.buildDate=1970-01-01T00:00:00Z"

# fake-gcs-server and helm: versions pinned in scripts/go-tools/go.mod (with go.sum).
build_go fake-gcs-server "$ROOT/scripts/go-tools" github.com/fsouza/fake-gcs-server
build_go helm "$ROOT/scripts/go-tools" helm.sh/helm/v3/cmd/helm
# The GitOps health checks under the libraries Argo CD and Flux embed (tests/health).
build_go vto-health-check "$ROOT/tests/health" .

# 4. npm packages for the Vertex conformance test (the official @google-cloud/aiplatform client).
if [ -f "$ROOT/tests/conformance/package-lock.json" ]; then
  stamp=$ROOT/tests/conformance/node_modules/.vto-lock-stamp
  if [ ! -f "$stamp" ] || ! cmp -s "$stamp" "$ROOT/tests/conformance/package-lock.json"; then
    say "installing npm packages for tests/conformance"
    (cd "$ROOT/tests/conformance" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$ROOT/tests/conformance/package-lock.json" "$stamp"
  fi
fi

# 5. prometheus-operator's ServiceMonitor and PrometheusRule CRDs, pinned, for the chart's server-side
# dry run (tests/integration/observability_test.cpp). The Go module proxy serves the release's module
# zip (checked against sum.golang.org), which holds the generated CRDs under example/.
PROMETHEUS_OPERATOR=v0.85.0
crds=$ROOT/build/prometheus-operator-crds
if [ "$(cat "$crds/VERSION" 2>/dev/null)" != "$PROMETHEUS_OPERATOR" ]; then
  say "fetching prometheus-operator $PROMETHEUS_OPERATOR CRDs"
  module=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json \
    "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  mkdir -p "$crds"
  for kind in servicemonitors prometheusrules; do
    cp "$module/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$crds/"
    chmod u+w "$crds/monitoring.coreos.com_$kind.yaml"
  done
  echo "$PROMETHEUS_OPERATOR" > "$crds/VERSION"
fi
