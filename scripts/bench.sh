#!/usr/bin/env bash
# make bench: figures, not tests. For each N in BENCH_RUNS (default "1000 3000 10000"):
#   1. vto (tests/bench/operator_bench.cpp): submission, a steady state with every job running, a cold start;
#   2. the Go peer (../shared/peer: controller-runtime, built with Go into build/peer) through the peer's
#      own bench.sh, with the same emulator flags, poll intervals, concurrency and window;
# then one table per N with both operators side by side and the targets of issue 14.
#
# Environment: BENCH_RUNS; BENCH_PEER=0 skips the peer; PEER_DIR (default ../shared/peer, the peer's
# source, read-only); BENCH_WINDOW (120 s), BENCH_SETTLE (30 s), BENCH_STEP_TIME (10s), BENCH_POLL (30 s),
# BENCH_FAST_POLL (5 s); BENCH_REPEAT (1): run both operators that many times, one after the other in
# turn, and show each figure as the median with its range; BENCH_VTO_FLAGS: extra `vto run` flags (read by
# tests/bench/operator_bench.cpp). Raw rows go to build/bench/<time>/{vto,peer}.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH_RUNS=${BENCH_RUNS:-1000 3000 10000}
export BENCH_WINDOW=${BENCH_WINDOW:-120} BENCH_SETTLE=${BENCH_SETTLE:-30} BENCH_STEP_TIME=${BENCH_STEP_TIME:-10s}
export BENCH_POLL=${BENCH_POLL:-30} BENCH_FAST_POLL=${BENCH_FAST_POLL:-5}
OUT=$ROOT/build/bench/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "bench: vto $COMMIT, sizes $BENCH_RUNS, load $(cut -d' ' -f1-3 /proc/loadavg); raw figures in $OUT" >&2

BENCH_REPEAT=${BENCH_REPEAT:-1}
[[ $BENCH_REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: BENCH_REPEAT must be a whole number ≥ 1" >&2; exit 1; }
export VTO_BIN_DIR=$ROOT/build/bin VTO_SOURCE_DIR=$ROOT

PEER=${BENCH_PEER:-1}
if [[ $PEER != 0 ]]; then
  PEER_DIR=${PEER_DIR:-$ROOT/../shared/peer}
  [[ -x $PEER_DIR/bench.sh ]] || { echo "bench.sh: no Go peer at $PEER_DIR (set PEER_DIR, or BENCH_PEER=0)" >&2; exit 1; }
  command -v go >/dev/null || { echo "bench.sh: the Go peer needs go (or set BENCH_PEER=0)" >&2; exit 1; }
  mkdir -p build/peer
  # Built from its own directory into ours; nothing of the peer is copied into vto.
  (cd "$PEER_DIR" && nice -n 10 go build -p 1 -o "$ROOT/build/peer/" ./cmd/...)
  # The peer's bench never creates the checkpoint bucket its runs name, and the emulator fails a job
  # whose bucket is missing (as real training code would): every peer run would end Failed before the
  # steady state. Its emulator runs with --missing-bucket create, through a bin dir of its own.
  PEER_TOOLS=$OUT/peer-tools
  mkdir -p "$PEER_TOOLS"
  for tool in vto vto-testcluster fake-gcs-server; do ln -sf "$ROOT/build/bin/$tool" "$PEER_TOOLS/$tool"; done
  printf '#!/bin/sh\nexec %q "$@" --missing-bucket create\n' "$ROOT/build/bin/vto-emulator" >"$PEER_TOOLS/vto-emulator"
  chmod +x "$PEER_TOOLS/vto-emulator"
fi

# In turn, so that a machine that slows down in the middle slows both operators alike.
PEER_TSV=
for ((round = 1; round <= BENCH_REPEAT; round++)); do
  ((BENCH_REPEAT == 1)) || echo "bench: round $round of $BENCH_REPEAT" >&2
  BENCH_RESULTS=$OUT/vto.tsv build/release/tests/vto_operator_bench $BENCH_RUNS
  [[ $PEER != 0 ]] || continue
  TMPDIR=$OUT PEER_BIN=$ROOT/build/peer VTO_BIN=$PEER_TOOLS SIZES=$BENCH_RUNS OPERATORS=peer \
    WINDOW=$BENCH_WINDOW SETTLE=$BENCH_SETTLE STEP_TIME=$BENCH_STEP_TIME POLL=$BENCH_POLL FAST_POLL=$BENCH_FAST_POLL \
    RUNNING_WAIT=600 "$PEER_DIR/bench.sh" >>"$OUT/peer-table.md"
  PEER_TSV=$OUT/peer.tsv
done
# Each of the peer's runs leaves its rows in a directory of its own.
[[ -z $PEER_TSV ]] || cat "$OUT"/peer-bench.*/results.tsv >"$PEER_TSV"
python3 tests/bench/side_by_side.py --commit "$COMMIT" --window "$BENCH_WINDOW" "$OUT/vto.tsv" $PEER_TSV | tee "$OUT/table.md"
