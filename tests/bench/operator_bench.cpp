// `make bench`: how the operator scales. For each N in its arguments (BENCH_RUNS), N TrainingRuns are
// stored before `vto run` starts against the Vertex emulator (quota raised), then it measures:
//   1. submission: time until every run has a job, operator CPU and peak RSS, Vertex and API server
//      requests per run;
//   2. steady state: once every run says Running and SETTLE seconds have passed, WINDOW seconds in
//      which only following the jobs costs anything: operator CPU, Vertex requests, API server
//      requests and writes, GCS checkpoint lists;
//   3. cold start: the operator restarted with the N runs stored, until every run was reconciled once;
//   4. submission alone: N runs again on a fresh stack whose jobs stay queued, API server requests per
//      run once the operator is idle (phase 1's count includes jobs that start inside its window);
//   5. submission through Kueue: the same with every run labelled kueue.x-k8s.io/queue-name, the real
//      Kueue manager admitting them all (a ClusterQueue of N vto.dev/runs) and `vto run --kueue`: the
//      operator's own writes and Vertex requests per run, against phase 4's.
// The emulator's flags and vto's poll intervals match ../shared/peer/bench.sh, so that
// scripts/bench.sh can print these figures beside the Go peer's. Figures only; it asserts nothing.
//
// Environment: BENCH_RESULTS (a TSV file to append "N vto key value" rows to), BENCH_WINDOW (120),
// BENCH_SETTLE (30), BENCH_STEP_TIME (10s), BENCH_POLL (30), BENCH_FAST_POLL (5), BENCH_RUNNING_WAIT (600),
// BENCH_VTO_FLAGS (extra `vto run` flags, separated by spaces; none by default), BENCH_KUEUE (0 skips
// phase 5; it also says so and goes on when the Kueue build is missing).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "base/http_transport.h"
#include "controller/kube_client.h"
#include "controller/rest_config.h"
#include "crd/yaml_json.h"
#include "reconcilers/trainingrun/reconciler.h"
#include "tests/support/kueue_process.h"
#include "tests/support/operator_stack.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/wait.h"

using namespace vto;
using namespace vto::testing;
using Seconds = std::chrono::duration<double>;

namespace {

std::string env(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}
int envInt(const char* name, int fallback) { return std::stoi(env(name, std::to_string(fallback))); }

double procStatus(long pid, const std::string& field) {  // a "kB" or count field of /proc/PID/status
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1));
  }
  return -1;
}
double peakRssMiB(long pid) { return procStatus(pid, "VmHWM") / 1024.0; }

double cpuSeconds(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) {
      stime = std::stol(field);
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double loadAverage() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  in >> load;
  return load;
}

// On one kept-alive connection: the bench polls these every 200 ms while a submission runs, and a
// connection per poll (curl) would be counted as the operator's closed connections to Vertex.
nlohmann::json emulatorStats(OperatorStack& stack) {
  static PooledHttpTransport http;
  HttpRequest request;
  request.url = stack.emulator().url() + "/emulator/v1/stats";
  nlohmann::json stats;
  try {
    auto response = http.send(request);
    if (response.status == 200) stats = nlohmann::json::parse(response.body, nullptr, false);
  } catch (const TransportError&) {
  }
  return stats.is_object() ? stats : nlohmann::json::object();
}
long emulatorRequests(OperatorStack& stack) { return emulatorStats(stack).value("vertexRequests", 0L); }

// Sum of one metric's series (whose labels contain `key="value"` when given) on the operator's /metrics.
long metricSum(int metricsPort, const std::string& metric, const std::string& key = "", const std::string& value = "") {
  auto out = runShell("curl -sf http://127.0.0.1:" + std::to_string(metricsPort) + "/metrics").output;
  return static_cast<long>(
      sampleSum(out, metric, [&](const Labels& labels) { return key.empty() || (labels.count(key) && labels.at(key) == value); }));
}

// GCS object lists so far, from fake-gcs-server's request log.
long gcsLists(OperatorStack& stack) {
  std::ifstream in(stack.dir() + "/gcs.log");
  static const std::regex list(R"(GET /storage/v1/b/[^ ]*/o\?)");
  long count = 0;
  for (std::string line; std::getline(in, line);) count += std::regex_search(line, list) ? 1 : 0;
  return count;
}

// Connections to `url`'s port closed within the last minute (TIME-WAIT lasts 60 s on Linux): a client
// that opens a connection per request leaves one per request here.
long closedConnections(const std::string& url) {
  auto port = url.substr(url.rfind(':') + 1);
  auto out = runShell("ss -Htan state time-wait '( dport = :" + port + " )' | wc -l").output;
  return std::atol(out.c_str());
}

// N runs stored in `ns` with vto's own kube client before the operator starts, so its first list sees
// them all at once (kubectl apply takes minutes for 10,000 objects: it would measure kubectl).
void storeRuns(OperatorStack& stack, const std::string& ns, int runs, const nlohmann::json& labels = nlohmann::json()) {
  stack.createNamespace(ns);
  controller::RestKubeClient kube(controller::loadKubeconfig(stack.cluster().kubeconfig()));
  auto createStarted = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    auto manifest = crd::parseYamlDocuments(simpleRunManifest(ns, "run-" + std::to_string(i))).at(0);
    if (labels.is_object()) manifest["metadata"]["labels"] = labels;
    kube.create(reconcilers::trainingRunResource(), ns, manifest);
  }
  std::printf("%6d runs created in %.1f s (load %.2f)\n", runs,
              Seconds(std::chrono::steady_clock::now() - createStarted).count(), loadAverage());
  std::fflush(stdout);
}

// `vto run` flags: the peer's bench gives both operators vto's default poll intervals; the last flag
// wins over the stack's 1 s test intervals. Watching only this size's namespace keeps earlier sizes out.
std::vector<std::string> operatorFlags(const std::string& ns, int metricsPort) {
  std::vector<std::string> flags = {"--metrics-bind-address", "127.0.0.1:" + std::to_string(metricsPort),
                                    "--vertex-creates-per-minute", "1000000", "--vertex-requests-per-minute", "1000000",
                                    "--max-concurrent-reconciles", "8", "--log-level", "warn", "--namespace", ns,
                                    "--vertex-poll-interval", env("BENCH_POLL", "30"),
                                    "--vertex-fast-poll-interval", env("BENCH_FAST_POLL", "5")};
  // Extra operator flags, for experiments (e.g. "--checkpoint-poll-interval 600"); later flags win.
  std::istringstream extra(env("BENCH_VTO_FLAGS", ""));
  for (std::string flag; extra >> flag;) flags.push_back(flag);
  return flags;
}

struct Results {
  int runs;
  void record(const std::string& key, double value) const {
    auto path = env("BENCH_RESULTS", "");
    if (path.empty()) return;
    std::ofstream out(path, std::ios::app);
    out << runs << "\tvto\t" << key << "\t" << value << "\n";
  }
};

void bench(int runs) {
  const int window = envInt("BENCH_WINDOW", 120), settle = envInt("BENCH_SETTLE", 30);
  Results results{runs};
  results.record("load_before", loadAverage());
  // Jobs run long here (1000 steps): the steady window sees every job running.
  OperatorStack stack({"--queue-time", "1s", "--steps", "1000", "--step-time", env("BENCH_STEP_TIME", "10s")});
  const std::string ns = "bench-" + std::to_string(runs);
  storeRuns(stack, ns, runs);
  controller::RestKubeClient kube(controller::loadKubeconfig(stack.cluster().kubeconfig()));
  int metricsPort = freeLoopbackPort();
  auto flags = operatorFlags(ns, metricsPort);

  // 1. Submission.
  long vertex0 = emulatorRequests(stack);
  auto api0 = apiServerRequests(stack.cluster());
  auto started = std::chrono::steady_clock::now();
  stack.startOperator(flags);
  bool submitted = waitFor([&] { return emulatorStats(stack).value("created", 0) >= runs; }, std::chrono::minutes(30),
                           std::chrono::milliseconds(200));
  double submitSeconds = Seconds(std::chrono::steady_clock::now() - started).count();
  long pid = stack.operatorPid();
  double submitCpu = cpuSeconds(pid);
  long submitVertex = emulatorRequests(stack) - vertex0;
  auto api1 = apiServerRequests(stack.cluster());
  results.record("submit_seconds", submitSeconds);
  results.record("submit_cpu", submitCpu);
  results.record("submit_hwm", peakRssMiB(pid));
  results.record("submit_vertex", static_cast<double>(submitVertex));
  auto submitApi = api1 - api0;
  results.record("submit_api", submitApi.all);
  // Which writes: each new run costs one of each; a job that went Running inside the window adds a
  // status write and an Event (the peer's bench keeps the same split in submit_api_detail).
  results.record("submit_api_run_writes", submitApi.runUpdates);
  results.record("submit_api_status_writes", submitApi.statusWrites);
  results.record("submit_api_event_writes", submitApi.eventWrites);
  results.record("submit_api_reads", submitApi.reads);
  results.record("submit_vertex_closed_conns", static_cast<double>(closedConnections(stack.emulator().url())));
  std::printf("%6d runs: %s in %.1f s; operator CPU %.1f s, peak RSS %.1f MiB; per run: %.2f Vertex requests, "
              "%.2f API server requests; %ld connections to Vertex closed in the last minute\n",
              runs, submitted ? "every run has a job" : "NOT every run has a job", submitSeconds, submitCpu,
              peakRssMiB(pid), static_cast<double>(submitVertex) / runs, submitApi.all / runs,
              closedConnections(stack.emulator().url()));
  std::fflush(stdout);

  // 2. Steady state, once every run says Running (polled every 2 s; these lists are not in a window).
  auto allRunning = [&] {
    auto list = controller::listAll(kube, reconcilers::trainingRunResource(), ns, {});
    int running = 0;
    for (const auto& run : list.items) running += run.value("/status/phase"_json_pointer, std::string()) == "Running";
    return running >= runs;
  };
  bool running = waitFor(allRunning, std::chrono::seconds(envInt("BENCH_RUNNING_WAIT", 600)), std::chrono::seconds(2));
  results.record("running_seconds", running ? Seconds(std::chrono::steady_clock::now() - started).count() : -1);
  std::this_thread::sleep_for(std::chrono::seconds(settle));  // the Running transition's own work drains
  // Every run's status before and after the window (listed outside it): a status write is a real
  // change only if some run's status differs at the end, so writes beyond the runs that changed are
  // writes without a change.
  auto statuses = [&] {
    std::map<std::string, nlohmann::json> byName;
    for (auto& run : controller::listAll(kube, reconcilers::trainingRunResource(), ns, {}).items) {
      byName[run["metadata"]["name"].get<std::string>()] = run.value("status", nlohmann::json::object());
    }
    return byName;
  };
  auto before = statuses();
  double cpu2 = cpuSeconds(pid);
  long vertex2 = emulatorRequests(stack), gcs2 = gcsLists(stack);
  auto api2 = apiServerRequests(stack.cluster());
  std::this_thread::sleep_for(std::chrono::seconds(window));
  double steadyCpu = cpuSeconds(pid) - cpu2;
  long steadyVertex = emulatorRequests(stack) - vertex2, steadyGcs = gcsLists(stack) - gcs2;
  auto api3 = apiServerRequests(stack.cluster());
  auto after = statuses();
  long changedRuns = 0;
  for (const auto& [name, status] : after) changedRuns += !before.count(name) || before.at(name) != status;
  results.record("steady_status_changes", static_cast<double>(changedRuns));
  results.record("steady_cpu", steadyCpu);
  // As the peer's bench: all the operator's CPU so far (submission, the Running transitions, the settle
  // time and the window), so that total - steady compares the two on the same work.
  results.record("total_cpu", cpu2 + steadyCpu);
  results.record("steady_vertex", static_cast<double>(steadyVertex));
  auto steadyApi = api3 - api2;
  results.record("steady_api", steadyApi.all);
  results.record("steady_api_writes", steadyApi.writes());
  results.record("steady_gcs_lists", static_cast<double>(steadyGcs));
  results.record("steady_vertex_conns", static_cast<double>(closedConnections(stack.emulator().url())));
  results.record("peak_rss", peakRssMiB(pid));
  results.record("threads", procStatus(pid, "Threads"));
  results.record("conflicts_409", static_cast<double>(metricSum(metricsPort, "rest_client_requests_total", "code", "409")));
  results.record("reconcile_errors", static_cast<double>(metricSum(metricsPort, "controller_runtime_reconcile_errors_total")));
  std::printf("%6d runs: %s; steady state %d s: operator CPU %.2f s, Vertex requests %ld, API server requests %.0f "
              "(writes %.0f; runs whose status changed %ld), GCS lists %ld (%.0f/min); peak RSS %.1f MiB\n",
              runs, running ? "every run Running" : "NOT every run Running", window, steadyCpu, steadyVertex,
              steadyApi.all, steadyApi.writes(), changedRuns, steadyGcs, steadyGcs * 60.0 / window,
              peakRssMiB(pid));
  std::fflush(stdout);

  // 3. Cold start: a new process finds N runs stored, each with its job.
  stack.stopOperator(SIGTERM);
  metricsPort = freeLoopbackPort();
  flags[1] = "127.0.0.1:" + std::to_string(metricsPort);
  auto restarted = std::chrono::steady_clock::now();
  stack.startOperator(flags);
  bool reconciled = waitFor([&] { return metricSum(metricsPort, "controller_runtime_reconcile_total") >= runs; },
                            std::chrono::minutes(10), std::chrono::milliseconds(200));
  double coldSeconds = Seconds(std::chrono::steady_clock::now() - restarted).count();
  results.record("cold_start_seconds", reconciled ? coldSeconds : -1);
  results.record("cold_start_cpu", cpuSeconds(stack.operatorPid()));
  std::printf("%6d runs: cold start to every run reconciled once: %s%.1f s, CPU %.1f s\n", runs,
              reconciled ? "" : "NOT reached in ", coldSeconds, cpuSeconds(stack.operatorPid()));
  std::fflush(stdout);
  stack.stopOperator(SIGTERM);
  // Events the operator dropped because its queue was full (it logs the running count at 1, 2, 4, ...).
  long eventDrops = 0;
  static const std::regex dropped(R"(dropped (\d+) event)");
  auto log = stack.operatorLog();
  for (auto it = std::sregex_iterator(log.begin(), log.end(), dropped); it != std::sregex_iterator(); ++it) {
    eventDrops = std::max(eventDrops, std::stol((*it)[1]));
  }
  results.record("event_drops", static_cast<double>(eventDrops));
  std::printf("%6d runs: Events dropped by a full queue: at least %ld\n", runs, eventDrops);
  std::fflush(stdout);
}

}  // namespace

// 4. What submission alone costs the API server: N runs more, with a fresh operator and emulator whose jobs stay
// queued for an hour, so no job changes state while they are submitted. Phase 1's count also holds
// the status writes and Events of jobs that start inside its window (they queue for 1 s there).
// Counted once the operator is idle: every run's writes have landed and nothing is left to do.
void submissionAlone(int runs) {
  Results results{runs};
  OperatorStack stack({"--queue-time", "3600s"});
  const std::string ns = "bench-alone-" + std::to_string(runs);  // the API server is shared with phase 1
  storeRuns(stack, ns, runs);
  int metricsPort = freeLoopbackPort();
  auto api0 = apiServerRequests(stack.cluster());
  stack.startOperator(operatorFlags(ns, metricsPort));
  bool idle = waitFor(
      [&] {
        auto written = apiServerRequests(stack.cluster()) - api0;
        return written.runUpdates >= runs && written.statusWrites >= runs && written.eventWrites >= runs &&
               metricSum(metricsPort, "workqueue_depth") == 0 &&
               metricSum(metricsPort, "controller_runtime_active_workers") == 0;
      },
      std::chrono::minutes(30), std::chrono::milliseconds(500));
  auto cost = apiServerRequests(stack.cluster()) - api0;
  stack.stopOperator(SIGTERM);
  if (!idle) {
    std::printf("%6d runs, jobs held queued: NOT every run submitted within 30 minutes\n", runs);
    return;
  }
  results.record("submit_alone_api", cost.all);
  results.record("submit_alone_api_run_writes", cost.runUpdates);
  results.record("submit_alone_api_status_writes", cost.statusWrites);
  results.record("submit_alone_api_event_writes", cost.eventWrites);
  results.record("submit_alone_api_reads", cost.reads);
  std::printf("%6d runs, jobs held queued: per run %.3f API server requests (finalizer %.3f, status %.3f, Event %.3f, "
              "reads %.3f)\n",
              runs, cost.all / runs, cost.runUpdates / runs, cost.statusWrites / runs, cost.eventWrites / runs,
              cost.reads / runs);
  std::fflush(stdout);
}

// 5. What admission by Kueue adds at submission: N labelled runs on a fresh stack with the real Kueue
// manager and a ClusterQueue that admits them all, jobs held queued as in phase 4. Counted by the
// operator itself (rest_client_requests_total: every request it sent, its Workloads' included; the API
// server's counts would add Kueue's own writes and Events), once every run has its job and the operator
// is idle.
void submissionThroughKueue(int runs) {
  if (env("BENCH_KUEUE", "1") == "0") return;
  Results results{runs};
  OperatorStack stack({"--queue-time", "3600s"});
  std::unique_ptr<KueueProcess> kueue;
  try {
    kueue = std::make_unique<KueueProcess>(stack.cluster());
  } catch (const std::exception& e) {
    std::printf("%6d runs through Kueue: skipped, Kueue %s does not start here (scripts/test-tools.sh builds it): %.200s\n",
                runs, kKueueVersion, e.what());
    return;
  }
  const std::string ns = "bench-kueue-" + std::to_string(runs);
  stack.createNamespace(ns);
  auto apply = [&](const std::string& yaml) {
    std::string path = stack.dir() + "/kueue-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml";
    std::ofstream(path) << yaml;
    stack.kubectlOk("apply --server-side -f '" + path + "'");
  };
  apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: vertex\n");
  apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: " + ns +
        "\nspec:\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [vto.dev/runs]\n    flavors:\n"
        "    - name: vertex\n      resources:\n      - name: vto.dev/runs\n        nominalQuota: " +
        std::to_string(runs) + "\n");
  apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: " + ns + "\n  namespace: " + ns +
        "\nspec:\n  clusterQueue: " + ns + "\n");
  storeRuns(stack, ns, runs, {{"kueue.x-k8s.io/queue-name", ns}});
  int metricsPort = freeLoopbackPort();
  auto flags = operatorFlags(ns, metricsPort);
  flags.push_back("--kueue");
  long vertex0 = emulatorRequests(stack);
  auto started = std::chrono::steady_clock::now();
  stack.startOperator(flags);
  auto writes = [&] {
    auto out = runShell("curl -sf http://127.0.0.1:" + std::to_string(metricsPort) + "/metrics").output;
    return sampleSum(out, "rest_client_requests_total", [](const Labels& l) { return l.count("method") && l.at("method") != "GET"; });
  };
  bool idle = waitFor(
      [&] {
        return emulatorStats(stack).value("created", 0) >= runs && metricSum(metricsPort, "workqueue_depth") == 0 &&
               metricSum(metricsPort, "controller_runtime_active_workers") == 0;
      },
      std::chrono::minutes(30), std::chrono::milliseconds(500));
  double seconds = Seconds(std::chrono::steady_clock::now() - started).count();
  double written = writes();
  long vertex = emulatorRequests(stack) - vertex0;
  stack.stopOperator(SIGTERM);
  if (!idle) {
    std::printf("%6d runs through Kueue: NOT every run admitted and submitted within 30 minutes\n", runs);
    return;
  }
  results.record("submit_kueue_seconds", seconds);
  results.record("submit_kueue_operator_writes", written);
  results.record("submit_kueue_vertex", static_cast<double>(vertex));
  std::printf("%6d runs through Kueue (labelled, all admitted, jobs held queued): every run has its job in %.1f s; per run "
              "%.3f writes by the operator (its Workload's create included) and %.3f Vertex requests\n",
              runs, seconds, written / runs, static_cast<double>(vertex) / runs);
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 3000, 10000};
  for (int runs : sizes) {
    bench(runs);
    submissionAlone(runs);
    submissionThroughKueue(runs);
  }
  return 0;
}
