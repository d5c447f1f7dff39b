#include "tests/support/kueue_process.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "tests/support/ports.h"
#include "tests/support/raw_http.h"
#include "tests/support/wait.h"

namespace vto::testing {

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string quoted(const std::string& text) {  // for sh -c: paths from mkdtemp hold no quote
  if (text.find('\'') != std::string::npos) throw std::runtime_error("a quote in " + text);
  return "'" + text + "'";
}

// A cold start of the manager (its caches' first lists) takes seconds; a loaded two-core machine, longer.
constexpr auto kReadyTimeout = std::chrono::seconds(120);
constexpr int kStartAttempts = 8;  // a free port taken by another process before Kueue bound it

}  // namespace

void KueueProcess::installCrds(TestCluster& cluster) {
  auto crds = binDir() + "/kueue-crds";
  auto applied = cluster.kubectl("apply --server-side --force-conflicts -f " + quoted(crds));
  if (applied.exitCode != 0)
    throw std::runtime_error("installing Kueue's CRDs from " + crds + " (run scripts/bootstrap.sh) failed: " +
                             applied.output);
  auto established = cluster.kubectl("wait --for=condition=Established --timeout=60s -f " + quoted(crds));
  if (established.exitCode != 0)
    throw std::runtime_error("Kueue's CRDs were not established: " + established.output);
}

KueueProcess::KueueProcess(TestCluster& cluster, std::string dir) : cluster_(cluster), dir_(std::move(dir)) {
  if (dir_.empty()) {
    dir_ = makeTempDir("vto-kueue");
    ownsDir_ = true;
  }
  installCrds(cluster_);
  writeFiles();
  start();
}

KueueProcess::~KueueProcess() {
  if (process_) process_->stop(std::chrono::seconds(10));
  if (ownsDir_ && std::getenv("VTO_KEEP_TEST_DIRS") == nullptr) runShell("rm -rf " + quoted(dir_));
}

std::string KueueProcess::logTail(size_t bytes) const {
  auto log = readFile(logPath());
  return log.size() > bytes ? log.substr(log.size() - bytes) : log;
}

void KueueProcess::writeFiles() {
  // One throwaway self-signed certificate (P-256, for 127.0.0.1) serves both servers that want one.
  auto certs = dir_ + "/webhook-certs";
  auto metricsCerts = dir_ + "/etc-overlay/kueue/metrics/certs";  // becomes /etc/kueue/metrics/certs
  auto made = runShell("set -e; mkdir -p " + quoted(certs) + " " + quoted(metricsCerts) +
                       "; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30"
                       " -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
                       quoted(certs + "/tls.key") + " -out " + quoted(certs + "/tls.crt") + "; cp " +
                       quoted(certs + "/tls.key") + " " + quoted(certs + "/tls.crt") + " " + quoted(metricsCerts));
  if (made.exitCode != 0) throw std::runtime_error("making Kueue's certificates failed: " + made.output);
}

void KueueProcess::start() {
  if (running()) throw std::logic_error("Kueue is already running");
  std::string why;
  for (int attempt = 1; attempt <= kStartAttempts; ++attempt) {
    if (startOnce(why)) return;
  }
  throw std::runtime_error("Kueue did not start: " + why);
}

bool KueueProcess::startOnce(std::string& why) {
  metricsPort_ = freeLoopbackPort();
  webhookPort_ = freeLoopbackPort();
  healthPort_ = 0;
  // Kueue's own Configuration API (config.kueue.x-k8s.io/v1beta2, the version v0.17.0 stores and
  // prints; v1beta1 is still read). Unknown fields are errors (a strict decoder).
  std::ofstream(dir_ + "/config.yaml")
      << "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
         "kind: Configuration\n"
         "namespace: kueue-system\n"
         "health:\n"
         "  healthProbeBindAddress: 127.0.0.1:0\n"  // bound by the kernel, read back from the log
         "metrics:\n"
         "  bindAddress: 127.0.0.1:"
      << metricsPort_
      << "\n"
         "webhook:\n"
         "  host: 127.0.0.1\n"
         "  port: "
      << webhookPort_ << "\n  certDir: " << dir_
      << "/webhook-certs\n"
         "leaderElection:\n"
         "  leaderElect: false\n"
         "internalCertManagement:\n"
         "  enable: false\n"
         "integrations:\n"
         "  frameworks: [\"batch/job\"]\n"  // none is needed (vto writes Workloads); empty means batch/job anyway
         "featureGates:\n"
         "  VisibilityOnDemand: false\n"  // its server wants a certificate at the fixed path /visibility
         "  MultiKueue: false\n"
         "  TopologyAwareScheduling: false\n";

  const auto logStart = readFile(logPath()).size();
  auto logOfThisStart = [&] {
    auto log = readFile(logPath());
    return log.size() > logStart ? log.substr(logStart) : std::string();
  };
  // /etc/kueue/metrics/certs is fixed in Kueue's main.go: a read-only overlay of /etc in a mount
  // namespace of Kueue's own adds it, and the host's /etc stays as it is.
  std::vector<std::string> argv = {"unshare", "--mount", "--propagation", "private"};
  if (::geteuid() != 0) argv.insert(argv.begin() + 1, {"--user", "--map-root-user"});
  argv.insert(argv.end(), {"sh", "-c",
                           "mount -t overlay overlay -o lowerdir=" + quoted(dir_ + "/etc-overlay") + ":/etc /etc && exec " +
                               quoted(binDir() + "/kueue") + " --config " + quoted(dir_ + "/config.yaml") +
                               " --kubeconfig " + quoted(cluster_.kubeconfig()) + " >> " + quoted(logPath()) + " 2>&1"});
  process_ = std::make_unique<Subprocess>(argv, logPath());  // unshare's and mount's complaints go to the log too

  auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  };
  // The health probe server binds first; its line says the port: "name":"health probe","addr":"127.0.0.1:N".
  static const std::regex kHealthAddress(R"re("name":"health probe","addr":"127\.0\.0\.1:(\d+)")re");
  waitFor(
      [&] {
        std::smatch match;
        auto log = logOfThisStart();
        if (std::regex_search(log, match, kHealthAddress)) healthPort_ = std::stoi(match[1]);
        return healthPort_ != 0 || !process_->running();
      },
      left());
  bool ready = healthPort_ != 0 && waitFor(
                                       [&] {
                                         if (!process_->running()) return true;
                                         return requestStatus(healthPort_,
                                                              "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                              "Connection: close\r\n\r\n",
                                                              std::chrono::seconds(5)) == 200;
                                       },
                                       left(), std::chrono::milliseconds(200));
  if (ready && process_->running()) return true;

  auto log = logOfThisStart();
  bool running = process_->running();
  process_->stop(std::chrono::seconds(10));
  process_.reset();
  why = (running ? "not ready within " + std::to_string(kReadyTimeout.count()) + " s" : "it exited") +
        "; its log (" + logPath() + ") ends with:\n" + (log.size() > 6000 ? log.substr(log.size() - 6000) : log);
  if (log.find("address already in use") != std::string::npos) return false;  // another free port
  throw std::runtime_error("Kueue did not start: " + why);
}

int KueueProcess::stop(int signal) {
  if (!process_) return -1;
  int code;
  if (signal == SIGTERM) {
    code = process_->stop(std::chrono::seconds(10));
  } else {
    process_->signal(signal);
    code = process_->wait(std::chrono::seconds(30)).value_or(-1);
  }
  process_.reset();
  return code;
}

}  // namespace vto::testing
