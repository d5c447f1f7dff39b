#!/usr/bin/env bash
# make demo: the whole system on loopback — a real kube-apiserver + etcd, fake-gcs-server, the Vertex
# emulator and the operator — then the sample TrainingRuns, watched until they finish. Ctrl-C stops
# everything and leaves no process behind. `scripts/demo.sh --no-watch` sets up and exits (smoke test).
# Every server binds a port it picked itself (or retries a lost one); build/demo/env records them all.
# VTO_DEMO_STATE and VTO_BIN_DIR move the state directory and the binaries (tests/integration/demo_readme_test.cpp).
# VTO_DEMO_KUEUE=1 adds admission by Kueue (docs/kueue.md): the real Kueue manager (scripts/test-tools.sh
# builds it into the bin dir), an L4 queue, and runs that wait for it and are preempted by a higher priority.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${VTO_BIN_DIR:-$ROOT/build/bin}
STATE=${VTO_DEMO_STATE:-$ROOT/build/demo}
WATCH=1; [ "${1:-}" = "--no-watch" ] && WATCH=0

say() { printf '\033[1mdemo:\033[0m %s\n' "$*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  say "stopped; logs are in $STATE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# start NAME CMD...: runs CMD in its own process group (so stopping it stops its children), logging to STATE.
start() {
  local name=$1; shift
  setsid "$@" >"$STATE/$name.out" 2>"$STATE/$name.log" &
  pids+=($!)
  echo $! >>"$STATE/pids"  # so a test can check that nothing outlives the demo
}
# wait_until SECONDS DESCRIPTION CMD...: polls CMD with a deadline.
wait_until() {
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { say "gave up waiting for $what; see $STATE"; exit 1; }
    sleep 0.2
  done
}

rm -rf "$STATE"; mkdir -p "$STATE"

say "starting the Kubernetes control plane (etcd + kube-apiserver v1.37.2)"
start cluster "$BIN/vto-testcluster" --dir "$STATE/cluster"
wait_until 120 "the API server" grep -qx ready "$STATE/cluster.out"
export KUBECONFIG=$STATE/cluster/kubeconfig
echo "export KUBECONFIG=$KUBECONFIG" >"$STATE/env"
say "API server ready; in another terminal: source build/demo/env"

# fake-gcs-server cannot report a port it picked itself: give it a free one, and a new one when
# another process took that port before it bound (it exits with "address already in use").
for attempt in 1 2 3 4 5; do
  GCS_PORT=$(free_port)
  start gcs "$BIN/fake-gcs-server" -scheme http -host 127.0.0.1 -port "$GCS_PORT" -backend memory \
    -public-host "127.0.0.1:$GCS_PORT" -log-level info
  gcs_pid=${pids[-1]}
  wait_until 30 "fake-gcs-server" bash -c "grep -q 'server started' '$STATE/gcs.log' || ! kill -0 $gcs_pid"
  kill -0 "$gcs_pid" 2>/dev/null && break
  grep -q 'address already in use' "$STATE/gcs.log" && ((attempt < 5)) || { say "fake-gcs-server failed; see $STATE/gcs.log"; exit 1; }
done
wait_until 30 "fake-gcs-server" curl -sf "http://127.0.0.1:$GCS_PORT/storage/v1/b"
say "fake-gcs-server on http://127.0.0.1:$GCS_PORT"
echo "export STORAGE_EMULATOR_HOST=http://127.0.0.1:$GCS_PORT" >>"$STATE/env"

# Every bucket the samples name, as a user would create them on Google Cloud: the training code
# writes its checkpoints there (the emulator fails a job whose bucket is missing, and vto holds a run
# whose output bucket is missing in OutputBucketNotFound).
for bucket in $(grep -ho 'gs://[a-z0-9][a-z0-9._-]*' config/samples/*.yaml config/demo/*.yaml | sort -u | cut -c6-); do
  curl -sf -X POST -H 'Content-Type: application/json' -d "{\"name\": \"$bucket\"}" \
    "http://127.0.0.1:$GCS_PORT/storage/v1/b?project=demo-project" >/dev/null
  say "bucket gs://$bucket created"
done

if [ -x "$BIN/vto-emulator" ]; then
  # Short steps so the demo finishes in about a minute; each step writes a checkpoint to fake-gcs-server.
  # Port 0: the emulator binds a free port and names it in its "listening on URL" line.
  start vertex "$BIN/vto-emulator" --listen 127.0.0.1:0 --gcs-endpoint "http://127.0.0.1:$GCS_PORT" \
    --queue-time 3s --steps 10 --step-time 2s
  wait_until 30 "the Vertex emulator" grep -q 'listening on http://' "$STATE/vertex.out"
  VERTEX_PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$STATE/vertex.out")
  say "Vertex AI emulator on http://127.0.0.1:$VERTEX_PORT"
  echo "export VERTEX_EMULATOR=http://127.0.0.1:$VERTEX_PORT" >>"$STATE/env"
else
  say "the Vertex emulator is not built yet (issue 5): skipped"
fi

if "$BIN/vto" crd >"$STATE/crds.yaml" 2>/dev/null; then
  kubectl apply --server-side --force-conflicts -f "$STATE/crds.yaml" >/dev/null
  kubectl wait --for=condition=Established crd/trainingruns.vto.dev crd/retrainingpolicies.vto.dev --timeout=60s >/dev/null
  say "CRDs installed: kubectl explain trainingrun.spec"
else
  say "the CRDs are not implemented yet (issue 4): skipped"
fi

# --- Admission by Kueue (VTO_DEMO_KUEUE=1): the manager as tests/support/kueue_process.cpp runs it. ---
KUEUE_FLAGS=()
if [ "${VTO_DEMO_KUEUE:-0}" = 1 ]; then
  [ -x "$BIN/kueue" ] && [ -d "$BIN/kueue-crds" ] || { say "VTO_DEMO_KUEUE=1 needs Kueue in $BIN: make test-tools"; exit 1; }
  kubectl apply --server-side --force-conflicts -f "$BIN/kueue-crds" >/dev/null
  kubectl wait --for=condition=Established --timeout=60s -f "$BIN/kueue-crds" >/dev/null
  K=$STATE/kueue
  mkdir -p "$K/webhook-certs" "$K/etc-overlay/kueue/metrics/certs"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$K/webhook-certs/tls.key" -out "$K/webhook-certs/tls.crt" 2>/dev/null
  cp "$K"/webhook-certs/tls.* "$K/etc-overlay/kueue/metrics/certs/"
  # No webhooks are registered (the API server never calls Kueue); its servers still want certificates,
  # the metrics one at the fixed /etc/kueue/metrics/certs: a read-only overlay of /etc in Kueue's own
  # mount namespace gives it that path, the host's /etc untouched (docs/kueue-integration-notes.md).
  cat >"$K/config.yaml" <<YAML
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health: {healthProbeBindAddress: "127.0.0.1:0"}
metrics: {bindAddress: "127.0.0.1:$(free_port)"}
webhook: {host: 127.0.0.1, port: $(free_port), certDir: $K/webhook-certs}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
integrations: {frameworks: ["batch/job"]}
featureGates: {VisibilityOnDemand: false, MultiKueue: false, TopologyAwareScheduling: false}
YAML
  userns=(); [ "$(id -u)" = 0 ] || userns=(--user --map-root-user)
  start kueue unshare "${userns[@]}" --mount --propagation private sh -c \
    'mount -t overlay overlay -o lowerdir="$1/etc-overlay":/etc /etc && exec "$2" --config "$1/config.yaml" --kubeconfig "$3"' \
    sh "$K" "$BIN/kueue" "$KUBECONFIG"
  kueue_ready() {
    local port
    port=$(grep -ho '"name":"health probe","addr":"127.0.0.1:[0-9]*"' "$STATE/kueue.log" "$STATE/kueue.out" | head -1 | grep -o '[0-9]*"$' | tr -d '"')
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz"
  }
  wait_until 120 "Kueue (log: $STATE/kueue.log)" kueue_ready
  kubectl apply -f config/demo/kueue/queues.yaml >/dev/null
  KUEUE_FLAGS=(--kueue)
  say "Kueue ready; ClusterQueue vertex-gpus holds one Vertex L4 (config/demo/kueue/)"
fi
# --- end Kueue ---

# --- Observability (issue 13): Prometheus scrapes the metrics port the operator bound (read back below). ---
METRICS_PORT=

if "$BIN/vto" run --help >/dev/null 2>&1; then
  # The emulator also plays the GCE metadata server, so the operator's real Google auth chain runs.
  GCE_METADATA_HOST=127.0.0.1:$VERTEX_PORT STORAGE_EMULATOR_HOST=http://127.0.0.1:$GCS_PORT \
  start operator "$BIN/vto" run --log-format text --vertex-fast-poll-interval 1 --vertex-poll-interval 2 \
    --kubeconfig "$KUBECONFIG" --vertex-endpoint "http://127.0.0.1:$VERTEX_PORT" \
    --gcs-endpoint "http://127.0.0.1:$GCS_PORT" --default-project demo-project --default-location us-central1 \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    --config config/demo/tenancy.yaml --budget-poll-interval 5 "${KUEUE_FLAGS[@]}"
  # The operator binds free ports itself and logs them: read them back for the user.
  wait_until 60 "the operator's endpoints" grep -q 'health probes listening on http://' "$STATE/operator.log"
  METRICS_URL=$(grep -o 'metrics listening on http://[^ ]*' "$STATE/operator.log" | head -1 | cut -d' ' -f4)
  HEALTH_URL=$(grep -o 'health probes listening on http://[^ ]*' "$STATE/operator.log" | head -1 | cut -d' ' -f5)
  echo "export VTO_METRICS_URL=$METRICS_URL VTO_HEALTH_URL=$HEALTH_URL" >>"$STATE/env"
  METRICS_PORT=${METRICS_URL#http://127.0.0.1:}; METRICS_PORT=${METRICS_PORT%/metrics}  # Prometheus scrapes it
  say "operator started (log: $STATE/operator.log)"
  say "operator metrics: $METRICS_URL   health: $HEALTH_URL"
  kubectl apply -f config/samples/ >/dev/null
  say "sample TrainingRuns applied"
  # Budgets: team-small may spend $0.40 a month (config/demo/tenancy.yaml): one run at a time fits.
  kubectl create namespace team-small >/dev/null
  kubectl apply -f config/demo/team-budget.yaml >/dev/null
  say "one of team-small's two runs waits for its budget (BudgetExceeded) while the other runs:"
  say "  kubectl -n team-small get trun -o wide   # PHASE, COST, and why one is Queued"
  # Retraining: config/samples/retrainingpolicy_every_minute.yaml retrains every minute with warm start.
  say "RetrainingPolicy mnist-every-minute retrains each minute from the last good model; in another terminal:"
  say "  kubectl get rtp -w"
  say "  kubectl annotate rtp/mnist-every-minute vto.dev/retrain-requested=\"\$(date +%s)\" --overwrite"
  # Models: each run registers a version of mnist; the better auc becomes champion (README "Models").
  say "  kubectl get rtp mnist-every-minute   # CHAMPION and METRIC: the version in production and its auc"
else
  say "the operator is not implemented yet (issue 6): the control plane and emulators run without it"
fi

# --- Capacity failover: once llm-failover's first job has checkpointed, us-central1 runs out of its
# A100s on Spot (only that sample asks for them) and Vertex fails the job as a stockout; vto moves the run
# to us-east4, resuming from the checkpoint (docs/capacity.md). `kubectl describe trun llm-failover`. ---
if [ -n "${VERTEX_PORT:-}" ] && kubectl get trun llm-failover >/dev/null 2>&1; then
  start capacity-drill env VERTEX="http://127.0.0.1:$VERTEX_PORT" bash -c '
    until job=$(kubectl get trun llm-failover -o jsonpath="{.status.job.name}") && [ -n "$job" ] &&
          curl -sf "$VERTEX/emulator/v1/$job:trace" | grep -q "\"stepsRun\":\[[0-9]*,[0-9]"; do sleep 1; done
    curl -sf -X POST -H "Content-Type: application/json" "$VERTEX/emulator/v1/capacity" -d "{\"location\": \"us-central1\",
      \"acceleratorType\": \"NVIDIA_TESLA_A100\", \"machineType\": \"a2-highgpu-8g\", \"strategy\": \"SPOT\", \"available\": false}"
    curl -sf -X POST -H "Content-Type: application/json" "$VERTEX/emulator/v1/$job:fail" -d "{\"failureClass\": \"Stockout\"}"'
  say "capacity: us-central1 runs out of Spot A100s once llm-failover has checkpointed; it resumes in place (a Spot STOCKOUT is a preemption), then moves to us-east4"
fi
# --- end capacity failover ---

# --- Kueue: two batch runs on one L4 (one waits), then an urgent one preempts the running batch run once
# it has checkpointed; the batch run resumes from its checkpoint when the L4 is free again. ---
if ((${#KUEUE_FLAGS[@]})); then
  kubectl apply -f config/demo/kueue/batch.yaml >/dev/null
  start kueue-drill env VERTEX="http://127.0.0.1:$VERTEX_PORT" bash -c '
    until job=$(kubectl get trun kueue-batch-1 kueue-batch-2 -o jsonpath="{.items[*].status.job.name}") && [ -n "$job" ] &&
          curl -sf "$VERTEX/emulator/v1/$job:trace" | grep -q "\"stepsRun\":\[[0-9]*,[0-9]"; do sleep 1; done
    kubectl apply -f config/demo/kueue/urgent.yaml'
  say "Kueue: kueue-batch-1 and -2 share one L4 (one waits: WaitingForKueue); kueue-urgent preempts the running one once it has checkpointed"
  say "  kubectl get trun -l kueue.x-k8s.io/queue-name -w   # and: kubectl get workloads; kubectl describe trun kueue-batch-1"
fi
# --- end Kueue demo ---

# --- Observability (issue 13): Debian's Prometheus scraping the operator, with vto's alert rules. ---
if command -v prometheus >/dev/null; then
  PROMETHEUS_PORT=$(free_port)
  cat >"$STATE/prometheus.yml" <<YAML
global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: ['$ROOT/helm/vto/rules/vto-alerts.yaml']
scrape_configs:
  - job_name: vto            # the job the shipped dashboards and alerts select
    honor_labels: true       # keep vto's namespace label, as the chart's ServiceMonitor does
    static_configs: [{targets: ['127.0.0.1:$METRICS_PORT'], labels: {namespace: vto-system}}]
YAML
  start prometheus prometheus --config.file="$STATE/prometheus.yml" --storage.tsdb.path="$STATE/prometheus-data" \
    --web.listen-address="127.0.0.1:$PROMETHEUS_PORT"
  wait_until 30 "Prometheus" curl -sf "http://127.0.0.1:$PROMETHEUS_PORT/-/ready"
  say "Prometheus on http://127.0.0.1:$PROMETHEUS_PORT scraping vto's /metrics (try: sum by (phase) (vto_trainingruns))"
  echo "export PROMETHEUS_URL=http://127.0.0.1:$PROMETHEUS_PORT" >>"$STATE/env"
else
  say "prometheus is not installed (scripts/bootstrap.sh installs it): metrics on http://127.0.0.1:$METRICS_PORT/metrics"
fi
# --- end observability ---

if ((WATCH)); then
  say "Ctrl-C stops everything"
  if kubectl get crd trainingruns.vto.dev >/dev/null 2>&1; then
    kubectl get trun -A -w
  else
    wait "${pids[0]}"
  fi
fi
