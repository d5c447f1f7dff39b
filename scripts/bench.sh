#!/usr/bin/env bash
# make bench: figures, not tests. BENCH_RUNS overrides the sizes (default "1000 10000").
set -euo pipefail
cd "$(dirname "$0")/.."
export VTO_BIN_DIR=$PWD/build/bin VTO_SOURCE_DIR=$PWD
build/release/tests/vto_operator_bench ${BENCH_RUNS:-1000 10000}
