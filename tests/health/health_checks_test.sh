#!/usr/bin/env bash
# The Argo CD health checks the chart ships (helm/vto/health/*.lua) under gopher-lua, and kstatus,
# over the recorded objects of every phase in tests/data/health: each file names, in its leading
# comments, the health Argo CD must show ("# argocd: X") and kstatus's status ("# kstatus: Y").
# Usage: health_checks_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1/vto-health-check
src=$2
[ -x "$bin" ] || { echo "missing $bin: run scripts/bootstrap.sh" >&2; exit 1; }
failures=0 checked=0
for file in "$src"/tests/data/health/*.yaml; do
  kind=$(sed -n 's/^kind: //p' "$file")
  case $kind in
    TrainingRun) script=$src/helm/vto/health/trainingrun.lua ;;
    RetrainingPolicy) script=$src/helm/vto/health/retrainingpolicy.lua ;;
    *) echo "$file: unknown kind $kind" >&2; exit 1 ;;
  esac
  want_argocd=$(sed -n 's/^# argocd: //p' "$file")
  want_kstatus=$(sed -n 's/^# kstatus: //p' "$file")
  [ -n "$want_argocd" ] && [ -n "$want_kstatus" ] || { echo "$file: no '# argocd:' or '# kstatus:' line" >&2; exit 1; }
  argocd=$("$bin" argocd "$script" "$file")
  kstatus=$("$bin" kstatus "$file")
  if [ "${argocd%%$'\t'*}" != "$want_argocd" ]; then
    echo "FAIL $(basename "$file"): Argo CD says '$argocd', want $want_argocd"; failures=$((failures + 1))
  fi
  if [ "${kstatus%%$'\t'*}" != "$want_kstatus" ]; then
    echo "FAIL $(basename "$file"): kstatus says '$kstatus', want $want_kstatus"; failures=$((failures + 1))
  fi
  # Argo CD shows the run's own words: a Degraded or Progressing run's message is never empty.
  if [ -z "${argocd#*$'\t'}" ] && [ "$want_argocd" != Healthy ]; then
    echo "FAIL $(basename "$file"): Argo CD shows no message"; failures=$((failures + 1))
  fi
  checked=$((checked + 1))
done
# The chart renders the same scripts into argocd-cm, under the keys Argo CD reads, only when asked.
"$1/helm" template vto "$src/helm/vto" --set argocd.healthChecks=true --show-only templates/argocd-health.yaml |
  python3 -c '
import sys, yaml
cm = yaml.safe_load(sys.stdin)
src = sys.argv[1]
for kind, script in (("TrainingRun", "trainingrun.lua"), ("RetrainingPolicy", "retrainingpolicy.lua")):
    key = "resource.customizations.health.vto.dev_" + kind
    assert cm["metadata"]["name"] == "argocd-cm", cm["metadata"]
    assert cm["data"][key] == open(src + "/helm/vto/health/" + script).read(), key + " differs from " + script
' "$src" || { echo "FAIL: the chart's argocd-cm keys"; failures=$((failures + 1)); }
if "$1/helm" template vto "$src/helm/vto" | grep -q argocd-cm; then
  echo "FAIL: argocd-cm rendered by default"; failures=$((failures + 1))
fi
echo "$checked objects checked, $failures failures"
[ "$checked" -ge 20 ] && [ "$failures" -eq 0 ]
