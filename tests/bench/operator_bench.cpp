// `make bench`: how the operator scales. For N TrainingRuns applied at once against the emulator
// (quota raised), it prints: time until every run has a job, the operator's peak RSS and CPU seconds,
// Vertex requests per run and API server requests per run. Figures only; it asserts nothing.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "controller/kube_client.h"
#include "controller/rest_config.h"
#include "crd/yaml_json.h"
#include "reconcilers/training_run_reconciler.h"
#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"

using namespace vto;
using namespace vto::testing;

namespace {

double peakRssMiB(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

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

long emulatorRequests(OperatorStack& stack) {
  auto out = runShell("curl -sf " + stack.emulator().url() + "/emulator/v1/stats").output;
  auto stats = nlohmann::json::parse(out, nullptr, false);
  return stats.is_object() ? stats.value("vertexRequests", 0L) : -1;
}

// Sum of one metric's series (whose labels contain `labelFilter`) on the operator's /metrics.
long metricSum(int metricsPort, const std::string& metric, const std::string& labelFilter = "") {
  auto out = runShell("curl -sf http://127.0.0.1:" + std::to_string(metricsPort) + "/metrics").output;
  std::regex line("^" + metric + R"(\{([^}]*)\} ([0-9.e+]+)$)");
  long total = 0;
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    std::smatch m;
    if (std::regex_match(l, m, line) && m[1].str().find(labelFilter) != std::string::npos) {
      total += static_cast<long>(std::stod(m[2]));
    }
  }
  return total;
}

void bench(int runs) {
  // Jobs run long here: the figure is submission, not training.
  OperatorStack stack({"--queue-time", "1s", "--steps", "1000", "--step-time", "10s"});
  const std::string ns = "bench-" + std::to_string(runs);
  stack.createNamespace(ns);
  // Created with vto's own kube client before the operator starts, so its first list sees them all at
  // once (kubectl apply takes minutes for 10,000 objects: it would measure kubectl).
  controller::RestKubeClient kube(controller::loadKubeconfig(stack.cluster().kubeconfig()));
  auto createStarted = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    auto manifest = crd::parseYamlDocuments(simpleRunManifest(ns, "run-" + std::to_string(i))).at(0);
    kube.create(reconcilers::trainingRunResource(), ns, manifest);
  }
  double createSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - createStarted).count();
  std::printf("%6d runs created in %.1f s\n", runs, createSeconds);
  std::fflush(stdout);
  int metricsPort = freeLoopbackPort();
  long requestsBefore = emulatorRequests(stack);
  auto started = std::chrono::steady_clock::now();
  stack.startOperator({"--metrics-bind-address", "127.0.0.1:" + std::to_string(metricsPort),
                       "--vertex-creates-per-minute", "1000000", "--vertex-requests-per-minute", "1000000",
                       "--max-concurrent-reconciles", "8", "--log-level", "warn"});
  // Every run has a job once the emulator holds one per run.
  bool done = waitFor(
      [&] {
        auto stats = nlohmann::json::parse(runShell("curl -sf " + stack.emulator().url() + "/emulator/v1/stats").output,
                                           nullptr, false);
        return stats.is_object() && stats.value("created", 0) >= runs;
      },
      std::chrono::minutes(30), std::chrono::milliseconds(200));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  long pid = stack.operatorPid();
  long vertexRequests = emulatorRequests(stack) - requestsBefore;
  long kubeRequests = metricSum(metricsPort, "rest_client_requests_total");
  long conflicts = metricSum(metricsPort, "rest_client_requests_total", "code=\"409\"");
  long reconcileErrors = metricSum(metricsPort, "controller_runtime_reconcile_errors_total");
  std::printf("%6d runs: %s in %.1f s (%.0f runs/s); operator peak RSS %.1f MiB, CPU %.1f s; "
              "Vertex requests/run %.2f; API server requests/run %.2f (409 conflicts %ld); reconcile errors %ld\n",
              runs, done ? "every run has a job" : "NOT every run has a job", seconds, runs / seconds,
              peakRssMiB(pid), cpuSeconds(pid), static_cast<double>(vertexRequests) / runs,
              static_cast<double>(kubeRequests) / runs, conflicts, reconcileErrors);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 10000};
  for (int runs : sizes) bench(runs);
  return 0;
}
