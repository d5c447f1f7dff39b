#!/usr/bin/env bash
# `helm template` of helm/vto with each monitoring feature on (and off): the ServiceMonitor, the
# PrometheusRule and the dashboard ConfigMaps render with the configured labels, and the values
# schema refuses bad values. The server-side dry run against prometheus-operator's CRDs is in
# tests/integration/observability_test.cpp. Usage: observability_chart_test.sh HELM CHART_DIR
set -uo pipefail
helm=$1 chart=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
render() { "$helm" template t "$chart" --namespace vto-system "$@" 2>&1; }
expect() {  # expect DESCRIPTION NEEDLE TEXT: TEXT contains NEEDLE
  grep -qF -- "$2" <<<"$3" || fail "$1: no '$2' in the output"
}
count() { grep -cF -- "$1" <<<"$2"; }

out=$(render) || fail "default values do not render: $out"
for kind in ServiceMonitor PrometheusRule; do
  [ "$(count "kind: $kind" "$out")" = 0 ] || fail "$kind rendered while disabled"
done
[ "$(count "grafana_dashboard" "$out")" = 0 ] || fail "dashboards rendered while disabled"

out=$(render --set serviceMonitor.enabled=true --set serviceMonitor.labels.release=kps --set serviceMonitor.interval=15s) ||
  fail "serviceMonitor does not render: $out"
expect "ServiceMonitor" "kind: ServiceMonitor" "$out"
expect "ServiceMonitor release label" "release: kps" "$out"
expect "ServiceMonitor interval" "interval: 15s" "$out"
expect "ServiceMonitor keeps vto's namespace label" "honorLabels: true" "$out"
expect "ServiceMonitor job label" "jobLabel: app.kubernetes.io/name" "$out"

out=$(render --set prometheusRule.enabled=true --set prometheusRule.labels.release=kps \
  --set prometheusRule.runbookBaseUrl=https://wiki.example.com/vto) || fail "prometheusRule does not render: $out"
expect "PrometheusRule" "kind: PrometheusRule" "$out"
expect "PrometheusRule release label" "release: kps" "$out"
# Every alert of the rules file, each with the runbook base URL.
alerts=$(grep -c -- "- alert: Vto" "$chart/rules/vto-alerts.yaml")
[ "$alerts" -ge 11 ] || fail "the rules file has $alerts alerts, want at least 11"
[ "$(count "- alert: Vto" "$out")" = "$alerts" ] || fail "PrometheusRule has $(count "- alert: Vto" "$out") alerts, want $alerts"
[ "$(count "runbook_url: https://wiki.example.com/vto#" "$out")" = "$alerts" ] || fail "runbookBaseUrl not applied to every alert"
expect "PrometheusRule keeps Prometheus templates" '{{ $labels.namespace }}' "$out"

out=$(render --set dashboards.enabled=true --set dashboards.label=my_dashboards --set dashboards.labelValue=yes \
  --set dashboards.annotations.grafana_folder=vto --set dashboards.namespace=monitoring) ||
  fail "dashboards do not render: $out"
[ "$(count "my_dashboards: \"yes\"" "$out")" = 3 ] || fail "want 3 dashboard ConfigMaps with the configured label"
for board in operator trainingruns retraining; do
  expect "dashboard $board" "name: t-vto-dashboard-$board" "$out"
  expect "dashboard $board file" "vto-$board.json: |-" "$out"
done
expect "dashboards namespace" "namespace: monitoring" "$out"
expect "dashboards folder annotation" "grafana_folder: vto" "$out"
expect "dashboards keep Grafana legends" '"legendFormat": "{{' "$out"
out=$(render --set dashboards.enabled=true)
[ "$(count 'grafana_dashboard: "1"' "$out")" = 3 ] || fail "default dashboard label is not grafana_dashboard: \"1\""

for bad in serviceMonitor.interval=often dashboards.bogus=1 prometheusRule.runbookBaseUrl=wiki serviceMonitor.enabled=yes; do
  if out=$(render --set "$bad"); then fail "the schema accepted --set $bad"; fi
done

if [ "$failures" -gt 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "ok: chart monitoring objects render as configured"
