#!/usr/bin/env bash
# `helm template` of helm/vto with each monitoring feature on (and off): the ServiceMonitor, the
# PrometheusRule and the dashboard ConfigMaps render with the configured labels, and the values
# schema refuses bad values. The server-side dry run against prometheus-operator's CRDs is in
# tests/integration/observability_test.cpp. Also the job ownership wiring: the ownership key Secret
# (kept on uninstall, or the user's own), its read-only mount and config key, and the cluster
# identity grant (`get` on kube-system only, and only without clusterId); that an upgrade keeps the
# Secret's data (`lookup`) needs a cluster, which `helm template` has not. And the CRDs: rendered as
# templates (so `helm upgrade` updates them), kept on uninstall, v1beta1 stored and v1alpha1 deprecated.
# Usage: observability_chart_test.sh HELM CHART_DIR
set -uo pipefail
helm=$1 chart=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
render() { "$helm" template t "$chart" --namespace vto-system "$@" 2>&1; }
expect() {  # expect DESCRIPTION NEEDLE TEXT: TEXT contains NEEDLE
  grep -qF -- "$2" <<<"$3" || fail "$1: no '$2' in the output"
}
count() { grep -cF -- "$1" <<<"$2"; }
document() {  # document KIND NAME TEXT: the rendered object of that kind and metadata.name
  awk -v RS='\n---\n' -v kind="kind: $1" -v name="  name: $2" \
    'index($0 "\n", "\n" kind "\n") && index($0 "\n", "\n" name "\n")' <<<"$3"
}

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

# Job ownership. Default values: the chart makes the key Secret, kept by `helm uninstall` (jobs signed
# by it outlive the release), with a 64-character key and this install's time; the Deployment mounts
# it read-only where the config says; the operator may `get` the kube-system namespace and no other.
out=$(render) || fail "default values do not render: $out"
secret=$(document Secret t-vto-ownership "$out")
[ -n "$secret" ] || fail "no Secret t-vto-ownership by default"
expect "ownership Secret kept on uninstall" "helm.sh/resource-policy: keep" "$secret"
file=$(sed -n 's/^  ownership.yaml: "\{0,1\}\([A-Za-z0-9+/=]*\)"\{0,1\}$/\1/p' <<<"$secret" | base64 -d 2>/dev/null)
grep -qE '^keys: \["[A-Za-z0-9]{64}"\]$' <<<"$file" || fail "ownership.yaml has no 64-character key: $file"
grep -qE '^trustUntaggedJobsCreatedBefore: "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"$' <<<"$file" ||
  fail "ownership.yaml has no UTC trustUntaggedJobsCreatedBefore: $file"
expect "config names the ownership key file" 'ownership-key-file: "/etc/vto/ownership/ownership.yaml"' "$out"
[ "$(count "cluster-id:" "$out")" = 0 ] || fail "cluster-id in the config while clusterId is empty"
deployment=$(document Deployment t-vto "$out")
expect "ownership mount" "{name: ownership, mountPath: /etc/vto/ownership, readOnly: true}" "$deployment"
expect "ownership volume" "secretName: t-vto-ownership" "$deployment"
expect "ownership volume mode" "defaultMode: 0440" "$deployment"
expect "ownership readable through the pod's group" "fsGroup: 65532" "$deployment"
expect "still non-root" "runAsNonRoot: true" "$deployment"
expect "still a read-only root filesystem" "readOnlyRootFilesystem: true" "$deployment"
identity=$(document ClusterRole t-vto-cluster-identity "$out")
want_rules='rules:
  - apiGroups: [""]
    resources: [namespaces]
    resourceNames: [kube-system]
    verbs: [get]'
[ "$(sed -n '/^rules:/,$p' <<<"$identity")" = "$want_rules" ] ||
  fail "ClusterRole t-vto-cluster-identity does not grant exactly get on kube-system: $identity"
binding=$(document ClusterRoleBinding t-vto-cluster-identity "$out")
expect "cluster identity binding's role" "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: t-vto-cluster-identity}" "$binding"
expect "cluster identity binding's subject" "{kind: ServiceAccount, name: vto, namespace: vto-system}" "$binding"
[ "$(count "resources: [namespaces]" "$out")" = 1 ] || fail "by default only the cluster identity role may read namespaces"
[ "$(count "name: t-vto-namespaces" "$out")" = 0 ] || fail "the -namespaces role rendered without a namespaceSelector rule"

# clusterId and existingSecret set: cluster-id in the config, no Secret and no namespace grant; the
# user's Secret is mounted in the chart's place.
out=$(render --set clusterId=prod-eu --set ownership.existingSecret=mine) || fail "clusterId and existingSecret do not render: $out"
expect "config cluster-id" 'cluster-id: "prod-eu"' "$out"
expect "config names the ownership key file with existingSecret" 'ownership-key-file: "/etc/vto/ownership/ownership.yaml"' "$out"
[ "$(count "kind: Secret" "$out")" = 0 ] || fail "a Secret rendered with ownership.existingSecret set"
expect "existingSecret mounted" "secretName: mine" "$(document Deployment t-vto "$out")"
[ "$(count "cluster-identity" "$out")" = 0 ] || fail "cluster-identity RBAC rendered with clusterId set"
[ "$(count "resources: [namespaces]" "$out")" = 0 ] || fail "namespaces granted with clusterId set"

# The tenancy namespaceSelector grant stays its own role, beside the cluster identity's.
selector=$(mktemp)
printf 'tenancy:\n  - namespaceSelector: {matchLabels: {tier: ml}}\n' >"$selector"
out=$(render -f "$selector") || fail "a namespaceSelector rule does not render: $out"
rm -f "$selector"
expect "-namespaces role beside cluster-identity" "name: t-vto-namespaces" "$out"
expect "cluster-identity beside -namespaces" "name: t-vto-cluster-identity" "$out"

for bad in clusterId=Prod-EU clusterId=eu.west "clusterId=$(printf 'a%.0s' {1..64})" ownership.existingSecret=Mine ownership.bogus=1; do
  if out=$(render --set "$bad"); then fail "the schema accepted --set $bad"; fi
done

# The CRDs are templates (files/crds/), so `helm upgrade` updates them; kept on uninstall; v1beta1
# stored, v1alpha1 served and deprecated. crds.install=false renders none. (Upgrading a release
# installed before, and uninstall, on a real API server: docs/upgrading.md.)
out=$(render) || fail "default values do not render: $out"
for crd in trainingruns.vto.dev retrainingpolicies.vto.dev; do
  doc=$(document CustomResourceDefinition "$crd" "$out")
  [ -n "$doc" ] || { fail "no CustomResourceDefinition $crd by default"; continue; }
  expect "$crd kept on uninstall" "helm.sh/resource-policy: keep" "$doc"
  [[ "$doc" == *$'    - name: v1beta1\n      served: true\n      storage: true\n'* ]] || fail "$crd: v1beta1 not served and stored"
  [[ "$doc" == *$'    - name: v1alpha1\n'*$'\n      served: true\n      storage: false\n      deprecated: true\n      deprecationWarning: "vto.dev/v1alpha1 '* ]] ||
    fail "$crd: v1alpha1 not served, deprecated, with a warning"
done
[ "$(count "kind: CustomResourceDefinition" "$(render --set crds.install=false)")" = 0 ] ||
  fail "CRDs rendered with crds.install=false"
if out=$(render --set crds.install=yes); then fail "the schema accepted --set crds.install=yes"; fi

if [ "$failures" -gt 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "ok: chart monitoring objects, CRDs and job ownership wiring render as configured"
