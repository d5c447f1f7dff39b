{{- define "vto.fullname" -}}
{{- printf "%s-vto" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vto.labels" -}}
app.kubernetes.io/name: vto
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "vto.selectorLabels" -}}
app.kubernetes.io/name: vto
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The rules the operator needs on its own kinds and Events, wherever it watches: exactly the
calls it makes (informer: list/watch; finalizers: patch; status: update; ttlSecondsAfterFinished:
delete; Events: create, and patch to count repeats). The integration tests run the operator with
these rules and nothing else. */}}
{{- define "vto.watchRules" -}}
- apiGroups: [vto.dev]
  resources: [trainingruns]
  verbs: [get, list, watch, patch, delete]
- apiGroups: [vto.dev]
  resources: [trainingruns/status]
  verbs: [update, patch]
{{- /* RetrainingPolicy reconciler: it creates and deletes the policies' runs, records its schedule
baseline as an annotation (patch), writes status, and sets blockOwnerDeletion on the runs (finalizers). */}}
- apiGroups: [vto.dev]
  resources: [trainingruns]
  verbs: [create]
- apiGroups: [vto.dev]
  resources: [retrainingpolicies]
  verbs: [get, list, watch, patch]
- apiGroups: [vto.dev]
  resources: [retrainingpolicies/status]
  verbs: [update, patch]
- apiGroups: [vto.dev]
  resources: [retrainingpolicies/finalizers]
  verbs: [update]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- /* Admission by Kueue, only when enabled: each labelled run's Workload (create, watch, delete with
the run), its status (patch: marked Finished, an admission released, as Kueue's own integrations do),
and LocalQueues as the contract names them. WorkloadPriorityClasses are cluster-scoped: rbac.yaml. */}}
{{- if (.Values.kueue | default dict).enabled }}
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [create, get, list, watch, delete]
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads/status]
  verbs: [patch]
- apiGroups: [kueue.x-k8s.io]
  resources: [localqueues]
  verbs: [get, list, watch]
{{- end }}
{{- end -}}
