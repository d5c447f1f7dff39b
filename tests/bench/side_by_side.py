#!/usr/bin/env python3
"""Prints issue 14's target table for each N: vto's figures (operator_bench.cpp's TSV) beside the Go
peer's (../shared/peer/bench.sh's results.tsv), with each target and whether vto meets it.
Rows are "N<TAB>operator<TAB>key<TAB>value". A key given more than once (make bench with BENCH_REPEAT)
is shown as its median with the range beside it, and the verdict is the median's: one run on a busy
machine moved a figure by 50% between sessions, so a single run is weak evidence."""
import argparse
import collections
import json
import statistics

parser = argparse.ArgumentParser()
parser.add_argument("--commit", default="?")
parser.add_argument("--window", type=float, default=120)
parser.add_argument("vto")
parser.add_argument("peer", nargs="?")
args = parser.parse_args()


def split_api_detail(detail):
    """The peer's per-verb request counts, split as operator_bench.cpp splits vto's: writes to a run
    itself (its finalizer), to its status and to Events, and reads (GET, LIST, WATCH)."""
    split = {"run_writes": 0.0, "status_writes": 0.0, "event_writes": 0.0, "reads": 0.0}
    for name, count in detail.items():
        resource, _, verb = name.rpartition(" ")
        if verb in ("POST", "PUT", "PATCH", "DELETE"):
            kind = {"trainingruns": "run_writes", "trainingruns/status": "status_writes", "events": "event_writes"}.get(resource)
            if kind:
                split[kind] += count
        elif verb in ("GET", "LIST", "WATCH") and resource.split("/")[0] in ("trainingruns", "events"):
            split["reads"] += count
    return split


samples = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
for path in [args.vto] + ([args.peer] if args.peer else []):
    for line in open(path):
        n, op, key, value = line.rstrip("\n").split("\t")
        if key == "submit_api_detail":  # the peer's: {"trainingruns/status PUT": 1000, "events POST": ...}
            for name, count in split_api_detail(json.loads(value)).items():
                samples[int(n)][op]["submit_api_" + name].append(count)
            continue
        try:
            samples[int(n)][op][key].append(float(value))
        except ValueError:
            samples[int(n)][op][key].append(None)  # "timeout", "not all after ..."


# The CPU until the steady window begins: submission, every run's Running transition and the settle
# time. The peer's per-job reads wait behind its creates in its work queue (5 reads while submitting
# 1,000 runs), while vto's poller follows jobs to Running during the submission: "CPU to submit" alone
# charges vto for work the peer does later.
for by_op in samples.values():
    for keys in by_op.values():
        if len(keys.get("total_cpu", [])) == len(keys.get("steady_cpu", [])):
            keys["until_steady_cpu"] = [None if t is None or s is None else t - s
                                        for t, s in zip(keys["total_cpu"], keys["steady_cpu"])]


def measured(n, op, key):
    return [value for value in samples[n].get(op, {}).get(key, []) if value is not None]


class Figure(float):
    """A median that remembers the range it came from (arithmetic on it gives a plain float)."""

    def __new__(cls, values):
        figure = super().__new__(cls, statistics.median(values))
        figure.low, figure.high, figure.count = min(values), max(values), len(values)
        return figure


def get(n, op, key):
    values = measured(n, op, key)
    return Figure(values) if values else None


def fmt(value, digits=1):
    if value is None:
        return "–"
    text = f"{value:.{digits}f}"
    if isinstance(value, Figure) and value.count > 1:
        text += f" ({value.low:.{digits}f}–{value.high:.{digits}f})"
    return text


def verdict(ok):
    return "–" if ok is None else ("yes" if ok else "**no**")


sizes = sorted(samples)
previous = None
for n in sizes:
    v = lambda key: get(n, "vto", key)
    p = lambda key: get(n, "peer", key)
    per_run = lambda value: None if value is None else value / n
    rows = []

    def row(label, vto, peer, target, ok, digits=1):
        rows.append(f"| {label} | {fmt(peer, digits)} | {fmt(vto, digits)} | {target} | {verdict(ok)} |")

    def cmp(a, b, factor):
        return None if a is None or b is None else a <= b * factor

    row("time until every run has a job, s", v("submit_seconds"), p("submit_seconds"), "≤ the peer's",
        cmp(v("submit_seconds"), p("submit_seconds"), 1))
    row("operator CPU to submit, s", v("submit_cpu"), p("submit_cpu"), "≤ ½ the peer's", cmp(v("submit_cpu"), p("submit_cpu"), 0.5), 2)
    row("peak RSS, MiB", v("peak_rss"), p("peak_rss"), "≤ ½ the peer's", cmp(v("peak_rss"), p("peak_rss"), 0.5))
    if previous is not None:
        def kib_per_run(op):
            a, b = get(previous, op, "peak_rss"), get(n, op, "peak_rss")
            return None if a is None or b is None else (b - a) * 1024 / (n - previous)
        vk, pk = kib_per_run("vto"), kib_per_run("peer")
        row(f"peak RSS per extra run ({previous} → {n}), KiB", vk, pk, "≤ 8 KiB", None if vk is None else vk <= 8)
    row("operator CPU until every run is Running and settled (total − steady), s", v("until_steady_cpu"),
        p("until_steady_cpu"), "–", None, 2)
    row(f"steady state ({args.window:.0f} s, every job running): CPU, s", v("steady_cpu"), p("steady_cpu"), "≤ ¼ the peer's",
        cmp(v("steady_cpu"), p("steady_cpu"), 0.25), 2)
    row("steady state: Vertex reads", v("steady_vertex"), p("steady_vertex"),
        "≤ changed jobs / page + 1 per location per round", None, 0)
    # A write is a real change when some run's status differs after the window (a new checkpoint is
    # one): writes beyond the number of runs that changed had nothing to say.
    idle_writes = None if v("steady_api_writes") is None or v("steady_status_changes") is None else \
        max(0.0, v("steady_api_writes") - v("steady_status_changes"))
    row("steady state: API server writes (trainingruns + events)", v("steady_api_writes"), None, "–", None, 0)
    row("steady state: runs whose status changed in the window", v("steady_status_changes"), None, "–", None, 0)
    row("steady state: writes without a real change", idle_writes, None, "0", None if idle_writes is None else idle_writes == 0, 0)
    row("steady state: API server requests, all verbs (trainingruns + events)", v("steady_api"), p("steady_api"), "–", None, 0)
    gcs_per_min = lambda value: None if value is None else value * 60 / args.window
    # The schedule's contract (reconcilers/checkpoint_schedule.h): the rate over the window, plus its
    # burst of five seconds' worth, plus the slot on the window's edge.
    row("GCS checkpoint lists per minute", gcs_per_min(v("steady_gcs_lists")), gcs_per_min(p("steady_gcs_lists")),
        "≤ 200/min (a flag)",
        None if v("steady_gcs_lists") is None else v("steady_gcs_lists") <= 200 * (args.window + 5) / 60 + 1, 0)
    # Issue 14's "API server requests per run at submit ≤ 3" is judged on submission alone (phase 4 of
    # tests/bench/operator_bench.cpp: jobs held queued, counted once the operator is idle). The window
    # count beside it also holds the writes of jobs that started while others were still submitted.
    alone = v("submit_alone_api")
    row("API server requests per run at submit (window: jobs start inside it)", per_run(v("submit_api")),
        per_run(p("submit_api")), "–" if alone is not None else "≤ 3",
        None if alone is not None or v("submit_api") is None else v("submit_api") / n <= 3, 2)
    # Where those requests went, per run: one finalizer write, one status write and one Event is what
    # a new run costs; beyond that, each job that went Running inside the window adds a status write
    # and an Event. Both operators are split the same way, from the API server's own counts.
    def split(op, prefix="submit_api_"):
        parts = [get(n, op, prefix + kind) for kind in ("run_writes", "status_writes", "event_writes", "reads")]
        return None if any(part is None for part in parts) else " / ".join(f"{part / n:.3f}" for part in parts)
    rows.append(f"| … of which per run: finalizer writes / status writes / Event writes / reads | "
                f"{split('peer') or '–'} | {split('vto') or '–'} | – | – |")
    if alone is not None:
        # Judged to two decimals, as both benches print it: a watch the API server closes and the
        # informer opens again (once in the 10,000-run submission) is one request for all runs.
        row("API server requests per run at submit (submission alone: jobs held queued)", per_run(alone), None,
            "≤ 3 (to 2 decimals)", round(alone / n, 2) <= 3, 3)
        rows.append(f"| … of which per run: finalizer writes / status writes / Event writes / reads | – | "
                    f"{split('vto', 'submit_alone_api_') or '–'} | – | – |")
    # Phase 5: the same submission with every run labelled for Kueue (the operator's own count of its
    # writes, its Workloads' included), and what that adds to phase 4's writes per run.
    kueue_writes = v("submit_kueue_operator_writes")
    if kueue_writes is not None:
        row("operator writes per run at submit, labelled kueue.x-k8s.io/queue-name (all admitted)", per_run(kueue_writes),
            None, "–", None, 3)
        if alone is not None:
            plain = sum(get(n, "vto", "submit_alone_api_" + kind) or 0 for kind in ("run_writes", "status_writes", "event_writes"))
            row("… more than a run without the label (phase 4's writes)", (kueue_writes - plain) / n, None, "stated", None, 3)
        row("Vertex requests per run at submit, labelled", per_run(v("submit_kueue_vertex")), None, "–", None, 2)
    row("cold start to every run reconciled once, s", v("cold_start_seconds"), None, "≤ 20 s",
        None if v("cold_start_seconds") is None or v("cold_start_seconds") < 0 else v("cold_start_seconds") <= 20)
    row("Vertex requests per run at submit", per_run(v("submit_vertex")), per_run(p("submit_vertex")), "–", None, 2)
    row("TCP connections to Vertex closed in the window's last 60 s", v("steady_vertex_conns"), p("steady_vertex_conns"), "–", None, 0)
    row("time until every run says Running, s", v("running_seconds"), p("running_seconds"), "–", None)
    row("operator threads", v("threads"), p("threads"), "–", None, 0)
    row("Events dropped by a full queue (vto, from its log)", v("event_drops"), None, "–", None, 0)
    row("409 conflicts / reconcile errors (vto)", v("conflicts_409"), p("conflicts_409"), "–", None, 0)
    row("load average (1 min) when the stack started", v("load_before"), p("load_before"), "–", None, 2)

    repeats = max(len(measured(n, op, "submit_cpu")) for op in ("vto", "peer"))
    of_runs = "" if repeats <= 1 else f"; each figure the median of {repeats} runs, their range beside it"
    print(f"\n### {n} TrainingRuns (vto {args.commit}{of_runs})\n")
    print("| figure | Go peer | vto | target | met |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    previous = n
