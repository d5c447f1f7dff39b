#!/usr/bin/env python3
"""Writes vto's Grafana dashboards (classic dashboard JSON) into helm/vto/dashboards/.

The JSON files are what ships; this script is how they are written, so every panel gets the same
datasource variable, units, descriptions and a non-overlapping grid. Edit here, run
`python3 scripts/dashboards.py`, commit both. tests/dashboards/ checks the output's structure and the
observability integration test runs every query against a real Prometheus.
"""
import json
import os

JOB = 'job="vto"'
DS = {"type": "prometheus", "uid": "${datasource}"}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helm", "vto", "dashboards")


def target(expr, legend="", ref="A", instant=False, fmt="time_series"):
    t = {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref}
    if instant:
        t["instant"] = True
        t["range"] = False
    if fmt != "time_series":
        t["format"] = fmt
    return t


def quantiles(metric, by, sel, window="$__rate_interval", qs=(0.5, 0.9, 0.99), legend_by=""):
    by_clause = ", ".join(["le"] + ([b.strip() for b in by.split(",")] if by else []))
    out = []
    for i, q in enumerate(qs):
        legend = f"p{int(q * 100)}" + (f" {legend_by}" if legend_by else "")
        out.append(target(f"histogram_quantile({q}, sum by ({by_clause}) (rate({metric}_bucket{{{sel}}}[{window}])))",
                          legend, chr(ord("A") + i)))
    return out


class Layout:
    """Places panels left to right in rows of 24 columns; a panel wider than what is left starts a row."""

    def __init__(self):
        self.x, self.y, self.row_h, self.next_id = 0, 0, 0, 1

    def place(self, panel, w, h):
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        panel["gridPos"] = {"x": self.x, "y": self.y, "w": w, "h": h}
        panel["id"] = self.next_id
        self.next_id += 1
        self.x += w
        self.row_h = max(self.row_h, h)
        return panel


def panel(kind, title, description, unit, targets, **extra):
    p = {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DS,
        "targets": targets,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {},
    }
    if kind == "timeseries":
        p["fieldConfig"]["defaults"]["custom"] = {"fillOpacity": 10, "lineWidth": 1}
        p["options"] = {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
                        "tooltip": {"mode": "multi"}}
    if kind == "stat":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "textMode": "auto"}
    if kind == "bargauge":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "displayMode": "gradient", "orientation": "horizontal"}
    for key, value in extra.items():
        if key == "overrides":
            p["fieldConfig"]["overrides"] = value
        elif key == "mappings":
            p["fieldConfig"]["defaults"]["mappings"] = value
        else:
            p[key] = value
    return p


def datasource_var():
    return {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1, "regex": "", "options": []}


def query_var(name, label, query, multi=True):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "definition": query, "query": {"query": query, "refId": f"{name}-var"},
            "refresh": 2, "includeAll": True, "allValue": ".*", "multi": multi, "sort": 1,
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]}, "hide": 0, "options": [], "regex": ""}


def dashboard(uid, title, description, variables, panels, annotations=()):
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["vto"],
        "timezone": "",
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": variables},
        "annotations": {"list": list(annotations)},
        "links": [{"title": "vto dashboards", "type": "dashboards", "tags": ["vto"], "asDropdown": True}],
        "panels": panels,
    }


def operator_dashboard():
    sel = f'{JOB},namespace=~"$namespace"'
    L = Layout()
    p = []
    p.append(L.place(panel("stat", "Replicas up", "vto replicas Prometheus scrapes successfully now.", "none",
                           [target(f"sum(up{{{sel}}})", "up", instant=True)]), 6, 4))
    p.append(L.place(panel("stat", "Leader", "1 when a replica holds the leader Lease (only the leader reconciles).",
                           "none", [target(f"max(leader_election_master_status{{{sel}}})", "leading", instant=True)],
                           mappings=[{"type": "value", "options": {"0": {"text": "no leader", "color": "red"},
                                                                   "1": {"text": "leading", "color": "green"}}}]), 6, 4))
    p.append(L.place(panel("stat", "Build", "The vto version and git revision each replica runs.", "none",
                           [target(f"max by (version, revision) (vto_build_info{{{sel}}})", "{{version}} ({{revision}})",
                                   instant=True)], options={"textMode": "name", "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}}), 6, 4))
    p.append(L.place(panel("stat", "Active workers", "Reconciles running right now, out of the configured maximum.",
                           "none", [target(f"sum(controller_runtime_active_workers{{{sel}}})", "active", instant=True),
                                    target(f"sum(controller_runtime_max_concurrent_reconciles{{{sel}}})", "max", "B",
                                           instant=True)]), 6, 4))
    p.append(L.place(panel("timeseries", "Reconciles by result",
                           "Reconciles per second, by controller and result (success, error, requeue, requeue_after).",
                           "ops", [target(f"sum by (controller, result) (rate(controller_runtime_reconcile_total{{{sel}}}[$__rate_interval]))",
                                          "{{controller}} {{result}}")]), 8, 8))
    p.append(L.place(panel("timeseries", "Reconcile errors",
                           "Reconciles per second that returned an error; the VtoReconcileErrorsHigh alert watches their share.",
                           "ops", [target(f"sum by (controller) (rate(controller_runtime_reconcile_errors_total{{{sel}}}[$__rate_interval]))",
                                          "{{controller}}")]), 8, 8))
    p.append(L.place(panel("timeseries", "Reconcile latency", "p50, p90 and p99 of the time one reconcile takes.", "s",
                           quantiles("controller_runtime_reconcile_time_seconds", "controller", sel, legend_by="{{controller}}")), 8, 8))
    p.append(L.place(panel("timeseries", "Work queue depth", "Keys waiting in each controller's work queue.", "none",
                           [target(f"sum by (name) (workqueue_depth{{{sel}}})", "{{name}}")]), 6, 8))
    p.append(L.place(panel("timeseries", "Work queue wait", "p50, p90 and p99 of the time a key waits in the queue before a worker takes it.",
                           "s", quantiles("workqueue_queue_duration_seconds", "name", sel, legend_by="{{name}}")), 6, 8))
    p.append(L.place(panel("timeseries", "Work queue adds and retries", "Keys added to the queue and keys re-queued after an error, per second.",
                           "ops", [target(f"sum by (name) (rate(workqueue_adds_total{{{sel}}}[$__rate_interval]))", "adds {{name}}"),
                                   target(f"sum by (name) (rate(workqueue_retries_total{{{sel}}}[$__rate_interval]))", "retries {{name}}", "B")]), 6, 8))
    p.append(L.place(panel("timeseries", "Unfinished work", "Seconds of work in progress and the longest-running reconcile: a steady climb means a stuck worker.",
                           "s", [target(f"sum by (name) (workqueue_unfinished_work_seconds{{{sel}}})", "unfinished {{name}}"),
                                 target(f"max by (name) (workqueue_longest_running_processor_seconds{{{sel}}})", "longest {{name}}", "B")]), 6, 8))
    p.append(L.place(panel("timeseries", "Kubernetes API requests", "Requests to the Kubernetes API server per second, by HTTP method and status code; and Events vto dropped because the API server could not keep up (best effort, like client-go's).",
                           "reqps", [target(f"sum by (method, code) (rate(rest_client_requests_total{{{sel}}}[$__rate_interval]))",
                                            "{{method}} {{code}}"),
                                     target(f"sum(rate(vto_events_dropped_total{{{sel}}}[$__rate_interval]))",
                                            "Events dropped", "B")]), 8, 8))
    p.append(L.place(panel("timeseries", "Vertex AI requests", "Requests to Vertex AI per second, by API method and HTTP status; 429 is quota, <error> no answer.",
                           "reqps", [target(f"sum by (method, code) (rate(vto_vertex_requests_total{{{sel}}}[$__rate_interval]))",
                                            "{{method}} {{code}}")]), 8, 8))
    p.append(L.place(panel("timeseries", "Vertex AI latency", "p50, p90 and p99 of Vertex AI request latency, by API method.", "s",
                           quantiles("vto_vertex_request_duration_seconds", "method", sel, legend_by="{{method}}")), 8, 8))
    p.append(L.place(panel("timeseries", "Vertex AI quota wait", "Time calls wait for vto's own pacer (the per-minute quota): p90 and p99 per call, and the share of time spent waiting.",
                           "s", quantiles("vto_vertex_quota_wait_seconds", "", sel, qs=(0.9, 0.99)) +
                           [target(f"sum(rate(vto_vertex_quota_wait_seconds_sum{{{sel}}}[$__rate_interval]))", "waiting (s/s)", "C")]), 8, 8))
    p.append(L.place(panel("timeseries", "Cloud Storage requests", "Requests to Cloud Storage (checkpoint listings) per second, by method and status.",
                           "reqps", [target(f"sum by (method, code) (rate(vto_gcs_requests_total{{{sel}}}[$__rate_interval]))",
                                            "{{method}} {{code}}")]), 8, 8))
    p.append(L.place(panel("timeseries", "CPU", "CPU used by each replica, in cores.", "short",
                           [target(f"rate(process_cpu_seconds_total{{{sel}}}[$__rate_interval])", "{{instance}}")]), 8, 8))
    p.append(L.place(panel("timeseries", "Memory", "Resident memory of each replica.", "bytes",
                           [target(f"process_resident_memory_bytes{{{sel}}}", "{{instance}}")]), 8, 8))
    p.append(L.place(panel("timeseries", "Open file descriptors", "File descriptors each replica holds (sockets to the API server, Vertex, GCS).",
                           "none", [target(f"process_open_fds{{{sel}}}", "{{instance}}")]), 8, 8))
    variables = [datasource_var(), query_var("namespace", "Operator namespace", f"label_values(up{{{JOB}}}, namespace)")]
    return dashboard("vto-operator", "vto / Operator",
                     "Is vto healthy: reconciles, work queues, leader, and its calls to Kubernetes, Vertex AI and Cloud Storage.",
                     variables, p)


def trainingruns_dashboard():
    sel = f'{JOB},namespace=~"$namespace"'
    L = Layout()
    p = []
    p.append(L.place(panel("bargauge", "Runs by phase", "TrainingRuns in each phase now, in the selected namespaces.", "none",
                           [target(f"sum by (phase) (vto_trainingruns{{{sel}}})", "{{phase}}", instant=True)]), 8, 8))
    p.append(L.place(panel("timeseries", "Runs by phase over time", "TrainingRuns in each phase; Queued and Pending growing means waiting for capacity or quota.",
                           "none", [target(f"sum by (phase) (vto_trainingruns{{{sel}}})", "{{phase}}")], ), 16, 8))
    p.append(L.place(panel("timeseries", "Queue time by scheduling and accelerator",
                           "p50 and p90 of the time from a run's creation to its first job running, by scheduling strategy (Standard, Spot, FlexStart) and accelerator.",
                           "s", quantiles("vto_trainingrun_queue_seconds", "scheduling, accelerator_type", sel, window="$__range",
                                          qs=(0.5, 0.9), legend_by="{{scheduling}} {{accelerator_type}}")), 12, 8))
    p.append(L.place(panel("timeseries", "Run duration by outcome", "p50 and p90 of creation to completion, by outcome.", "s",
                           quantiles("vto_trainingrun_duration_seconds", "outcome", sel, window="$__range", qs=(0.5, 0.9),
                                     legend_by="{{outcome}}")), 12, 8))
    p.append(L.place(panel("bargauge", "Finished runs by outcome", "Runs that finished in the dashboard's time range, by outcome.",
                           "none", [target(f"sum by (outcome) (increase(vto_trainingruns_finished_total{{{sel}}}[$__range]))", "{{outcome}}",
                                           instant=True)]), 8, 8))
    p.append(L.place(panel("timeseries", "Failed attempts and resumes by failure class",
                           "Attempts whose Vertex job failed, and attempts resumed from a checkpoint, per hour, by failure class (all namespaces: these have no namespace label).",
                           "none", [target("sum by (failure_class) (increase(vto_trainingrun_attempt_failures_total{job=\"vto\"}[$__rate_interval]))",
                                           "failed {{failure_class}}"),
                                    target("sum by (failure_class) (increase(vto_trainingrun_resumes_total{job=\"vto\"}[$__rate_interval]))",
                                           "resumed {{failure_class}}", "B")]), 16, 8))
    p.append(L.place(panel("timeseries", "Capacity failovers by region pair",
                           "Attempts moved to another placement per hour because Vertex had no capacity where the attempt before ran (spec.capacity), by region pair, accelerator and reason (Stockout, QuotaExceeded, QueueTimeout).",
                           "none", [target(f"sum by (from_location, to_location, accelerator_type, reason) (increase(vto_trainingrun_capacity_failovers_total{{{sel}}}[$__rate_interval]))",
                                           "{{from_location}} → {{to_location}} {{accelerator_type}} {{reason}}")]), 12, 8))
    p.append(L.place(panel("timeseries", "Runs waiting for capacity",
                           "TrainingRuns whose every placement is out of capacity now, by namespace; VtoTrainingRunsWaitingForCapacity fires after an hour.",
                           "none", [target(f"sum by (namespace) (vto_trainingruns_waiting_for_capacity{{{sel}}})", "{{namespace}}")]), 12, 8))
    p.append(L.place(panel("bargauge", "Accelerator hours by namespace", "Accelerator hours consumed in the time range (accelerators x replicas x running time), by namespace and accelerator type.",
                           "h", [target(f"sum by (namespace, accelerator_type) (increase(vto_trainingrun_accelerator_seconds_total{{{sel}}}[$__range])) / 3600",
                                        "{{namespace}} {{accelerator_type}}", instant=True)]), 8, 8))
    p.append(L.place(panel("timeseries", "Accelerators in use", "Accelerators held by running jobs, by namespace, accelerator type and scheduling.",
                           "none", [target(f"sum by (namespace, accelerator_type, scheduling) (rate(vto_trainingrun_accelerator_seconds_total{{{sel}}}[$__rate_interval]))",
                                           "{{namespace}} {{accelerator_type}} {{scheduling}}")]), 8, 8))
    p.append(L.place(panel("bargauge", "Machine hours by machine type", "Machine hours consumed in the time range (replicas x running time), by namespace and machine type.",
                           "h", [target(f"sum by (namespace, machine_type) (increase(vto_trainingrun_machine_seconds_total{{{sel}}}[$__range])) / 3600",
                                        "{{namespace}} {{machine_type}}", instant=True)]), 8, 8))
    p.append(L.place(panel("timeseries", "Jobs created by kind", "Vertex AI jobs vto created per hour (every attempt is one job), by kind (all namespaces).",
                           "none", [target("sum by (kind) (increase(vto_trainingrun_jobs_created_total{job=\"vto\"}[$__rate_interval]))", "{{kind}}")]), 12, 8))
    p.append(L.place(panel("table", "Oldest checkpoints of running runs", "The ten running TrainingRuns whose newest checkpoint is oldest; VtoCheckpointStale fires past 2 hours.",
                           "s", [target(f"topk(10, max by (namespace, name) (vto_checkpoint_age_seconds{{{sel}}}))", "", instant=True, fmt="table")],
                           transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True},
                                                                          "renameByName": {"Value": "checkpoint age"}}}]), 12, 8))
    progress_targets = [
        target(f"max by (namespace, name) (vto_trainingrun_progress_ratio{{{sel}}})", "", "A", True, "table"),
        target(f"max by (namespace, name) (vto_trainingrun_eta_timestamp_seconds{{{sel}}}) - time()", "", "B", True, "table"),
    ]
    p.append(L.place(panel("table", "Progress of unfinished runs",
                           "How far each unfinished TrainingRun is (the step of its newest checkpoint over spec.checkpointing.totalSteps; runs without totalSteps are not listed) and the time left at this attempt's rate while it runs (status.progress).",
                           "percentunit", progress_targets,
                           transformations=[{"id": "merge", "options": {}},
                                            {"id": "organize", "options": {"excludeByName": {"Time": True},
                                                                           "renameByName": {"Value #A": "progress", "Value #B": "time left"}}},
                                            {"id": "sortBy", "options": {"sort": [{"field": "progress", "desc": True}]}}],
                           overrides=[{"matcher": {"id": "byName", "options": "progress"},
                                       "properties": [{"id": "unit", "value": "percentunit"}, {"id": "min", "value": 0}, {"id": "max", "value": 1},
                                                      {"id": "custom.cellOptions", "value": {"type": "gauge", "mode": "basic"}}]},
                                      {"matcher": {"id": "byName", "options": "time left"},
                                       "properties": [{"id": "unit", "value": "s"}]}]), 24, 8))
    # Spend: list-price estimates (docs/cost.md); the billing export is the truth.
    p.append(L.place({"type": "row", "title": "Spend", "collapsed": False, "panels": [], "targets": []}, 24, 1))
    p.append(L.place(panel("timeseries", "Spend per team per day",
                           "Estimated list-price USD of running jobs per day, by namespace (vto_trainingrun_cost_usd_total).",
                           "currencyUSD", [target(f"sum by (namespace) (increase(vto_trainingrun_cost_usd_total{{{sel}}}[1d]))", "{{namespace}}")]), 12, 8))
    p.append(L.place(panel("bargauge", "Top spenders by accelerator",
                           "The ten namespace, accelerator and scheduling combinations that spent most in the time range (list prices); `vto cost --by run` names the runs.",
                           "currencyUSD", [target(f"topk(10, sum by (namespace, accelerator_type, scheduling) (increase(vto_trainingrun_cost_usd_total{{{sel}}}[$__range])))",
                                                  "{{namespace}} {{accelerator_type}} {{scheduling}}", instant=True)]), 6, 8))
    p.append(L.place(panel("bargauge", "Budget burn", "Each budget rule's month-to-date spend as a share of its monthlyUsd; VtoBudgetNearlySpent fires at 80 %.",
                           "percentunit", [target("max by (rule) (vto_budget_spent_usd{job=\"vto\"}) / max by (rule) (vto_budget_limit_usd{job=\"vto\"} > 0)",
                                                  "{{rule}}", instant=True)]), 6, 8))
    variables = [datasource_var(), query_var("namespace", "Namespace", f"label_values(vto_trainingruns{{{JOB}}}, namespace)")]
    return dashboard("vto-trainingruns", "vto / Training runs",
                     "What training is doing and costing, per team: runs by phase, time waiting for capacity, preemptions and resumes, accelerator and machine hours.",
                     variables, p)


def retraining_dashboard():
    sel = f'{JOB},namespace=~"$namespace",policy=~"$policy"'
    L = Layout()
    p = []
    table_targets = [
        target(f"max by (namespace, policy) (vto_retrainingpolicy_next_schedule_time_seconds{{{sel}}}) * 1000", "", "A", True, "table"),
        target(f"max by (namespace, policy) (vto_retrainingpolicy_last_schedule_time_seconds{{{sel}}}) * 1000", "", "B", True, "table"),
        target(f"time() - max by (namespace, policy) (vto_retrainingpolicy_last_success_time_seconds{{{sel}}})", "", "C", True, "table"),
        target(f"max by (namespace, policy) (vto_retrainingpolicy_active_runs{{{sel}}})", "", "D", True, "table"),
        target(f"min by (namespace, policy) (vto_retrainingpolicy_trigger_healthy{{{sel}}})", "", "E", True, "table"),
    ]
    def column(ref, unit, extra=None):
        props = [{"id": "unit", "value": unit}]
        if extra:
            props += extra
        return {"matcher": {"id": "byName", "options": f"Value #{ref}"}, "properties": props}
    p.append(L.place(panel("table", "Policies", "One row per policy: next and last scheduled slot, age of the last successful run, runs still active, and whether every trigger can read its source (1) or not (0).",
                           "none", table_targets,
                           transformations=[{"id": "merge", "options": {}},
                                            {"id": "organize", "options": {"excludeByName": {"Time": True},
                                                                           "renameByName": {"Value #A": "next schedule", "Value #B": "last schedule",
                                                                                            "Value #C": "last success age", "Value #D": "active runs",
                                                                                            "Value #E": "triggers healthy"}}}],
                           overrides=[column("A", "dateTimeAsIso"), column("B", "dateTimeAsIso"), column("C", "s"),
                                      column("D", "none"), column("E", "bool_yes_no")]), 24, 8))
    p.append(L.place(panel("timeseries", "Triggers by outcome", "What became of each trigger per interval: created a run, deduplicated, skipped (a run still active, cooldown), missed its deadline, suspended.",
                           "none", [target(f"sum by (outcome) (increase(vto_retrainingpolicy_triggers_total{{{sel}}}[$__rate_interval]))", "{{outcome}}")]), 12, 8))
    p.append(L.place(panel("bargauge", "Triggers by policy and reason", "Triggers in the time range by policy, reason (Schedule, NewData, MetricBreach, Manual) and outcome.",
                           "none", [target(f"sum by (policy, reason, outcome) (increase(vto_retrainingpolicy_triggers_total{{{sel}}}[$__range]))",
                                           "{{policy}} {{reason}} {{outcome}}", instant=True)]), 12, 8))
    p.append(L.place(panel("timeseries", "Schedule skew", "p50, p90 and p99 of how late scheduled runs are created after their nominal slot (all policies).",
                           "s", quantiles("vto_retrainingpolicy_schedule_skew_seconds", "", JOB)), 8, 8))
    p.append(L.place(panel("timeseries", "Age of the last successful run", "Time since each policy's last successful run finished: how fresh its model is.",
                           "s", [target(f"time() - max by (namespace, policy) (vto_retrainingpolicy_last_success_time_seconds{{{sel}}})",
                                        "{{namespace}}/{{policy}}")]), 8, 8))
    p.append(L.place(panel("timeseries", "Trigger health", "1 while a trigger can read its source (Prometheus query, GCS listing), 0 while it cannot (VtoRetrainingTriggerBlind).",
                           "bool", [target(f"min by (namespace, policy, trigger) (vto_retrainingpolicy_trigger_healthy{{{sel}}})",
                                           "{{policy}} {{trigger}}")]), 8, 8))
    p.append(L.place(panel("timeseries", "Model metric", "The last value of each policy's metric trigger query; compare it with the policy's below/above threshold (spec.triggers.metric).",
                           "none", [target(f"max by (namespace, policy) (vto_retrainingpolicy_metric_value{{{sel}}})",
                                           "{{namespace}}/{{policy}}")]), 12, 8))
    p.append(L.place(panel("timeseries", "Pending data", "New objects and bytes under each policy's data trigger prefix that no run has trained on yet.",
                           "none", [target(f"max by (namespace, policy) (vto_retrainingpolicy_data_pending_objects{{{sel}}})", "objects {{policy}}"),
                                    target(f"max by (namespace, policy) (vto_retrainingpolicy_data_pending_bytes{{{sel}}})", "bytes {{policy}}", "B")],
                           overrides=[{"matcher": {"id": "byFrameRefID", "options": "B"},
                                       "properties": [{"id": "unit", "value": "bytes"}, {"id": "custom.axisPlacement", "value": "right"}]}]), 12, 8))
    # Models (spec.model, spec.promotion): versions registered per namespace (no policy label), the
    # champion per policy with its moves as annotations.
    ns_sel = f'{JOB},namespace=~"$namespace"'
    p.append(L.place(panel("timeseries", "Champion metric", "Each policy's champion's value of spec.promotion.metric (the version holding the promotion alias); the Promotions annotations mark each move: Promoted (a better version) or Manual (vto.dev/promote-version, a rollback).",
                           "none", [target(f"max by (namespace, policy) (vto_model_champion_metric{{{sel}}})",
                                           "{{namespace}}/{{policy}}")]), 12, 8))
    p.append(L.place(panel("bargauge", "Promotion decisions", "What promotion decided in the time range, by policy and result: Promoted, NotBetter (the champion stayed), NoMetric (the version's evaluation lacks the metric), Manual, Failed.",
                           "none", [target(f"sum by (policy, result) (increase(vto_model_promotions_total{{{sel}}}[$__range]))",
                                           "{{policy}} {{result}}", instant=True)]), 12, 8))
    p.append(L.place(panel("timeseries", "Model versions registered", "Model versions succeeded TrainingRuns registered in Vertex AI Model Registry per interval, by namespace and model (spec.model).",
                           "none", [target(f"sum by (namespace, model) (increase(vto_model_versions_registered_total{{{ns_sel}}}[$__rate_interval]))",
                                           "{{namespace}}/{{model}}")]), 12, 8))
    p.append(L.place(panel("timeseries", "Model registration failures", "Registration passes that failed per interval, by namespace and reason (ArtifactMissing, PermissionDenied, UploadFailed, TenantPolicyViolation); each is retried with backoff, VtoModelRegistrationFailing fires after an hour.",
                           "none", [target(f"sum by (namespace, reason) (increase(vto_model_registration_failures_total{{{ns_sel}}}[$__rate_interval]))",
                                           "{{namespace}} {{reason}}")]), 12, 8))
    moves = f'vto_model_promotions_total{{{sel},result=~"Promoted|Manual"}}'
    promotions = {"name": "Promotions", "datasource": DS, "enable": True, "iconColor": "green",
                  # A counter's first sample has no increase: its appearance counts too.
                  "expr": f"sum by (namespace, policy, result) (increase({moves}[2m]) > 0 or ({moves} unless {moves} offset 2m))",
                  "step": "1m", "titleFormat": "{{result}}", "textFormat": "{{namespace}}/{{policy}}: the champion moved ({{result}})",
                  "tagKeys": "policy,result"}
    variables = [datasource_var(),
                 query_var("namespace", "Namespace", f"label_values(vto_retrainingpolicy_active_runs{{{JOB}}}, namespace)"),
                 query_var("policy", "Policy", f'label_values(vto_retrainingpolicy_active_runs{{{JOB},namespace=~"$namespace"}}, policy)')]
    return dashboard("vto-retraining", "vto / Retraining",
                     "Did retraining run and is each model fresh and better: per-policy schedule, last success, triggers and their health, schedule skew, metric and pending data, model versions registered and the champion.",
                     variables, p, [promotions])


def main():
    for name, board in (("vto-operator.json", operator_dashboard()), ("vto-trainingruns.json", trainingruns_dashboard()),
                        ("vto-retraining.json", retraining_dashboard())):
        with open(os.path.join(OUT, name), "w") as f:
            json.dump(board, f, indent=2, sort_keys=False)
            f.write("\n")


if __name__ == "__main__":
    main()
